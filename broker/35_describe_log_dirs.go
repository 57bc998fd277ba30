package broker

// DescribeLogDirs (key 35), versions 1-4.
//
// Reports, per log directory of this broker, the partitions it holds that
// the request asks for (all of them when Topics is null) with their size in
// bytes. A replica moving to another of this broker's directories
// (AlterReplicaLogDirs) is listed twice, as Kafka lists it: in its current
// directory, and in its destination as a future replica whose offset lag
// is how far its copy is behind; a current replica's offset lag is 0. v4
// adds the file system's total and usable
// bytes. A directory that is offline after an I/O error, or cannot be read
// (statfs fails), reports KAFKA_STORAGE_ERROR. Only directories of this broker are reported, as
// Kafka's brokers do; clients send the request to every broker.
//
// It needs DESCRIBE on the cluster. Without it, as Kafka answers, no
// directory is listed and the top-level error (v3+) is
// CLUSTER_AUTHORIZATION_FAILED; v1 and v2 have no field for it, so their
// answer is just empty.

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

var describeLogDirsAPI = handler{key: 35, min: 1, max: 4, handle: (*Broker).handleDescribeLogDirs}

func (b *Broker) handleDescribeLogDirs(_ context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !c.authorizedCluster(acl.OpDescribe) {
		resp.ErrorCode = int16(protocol.ClusterAuthorizationFailed)
		return resp, nil
	}

	// wanted reports whether the request asks for topic's partition num.
	wanted := func(string, int32) bool { return true }
	if req.Topics != nil {
		asked := map[string][]int32{}
		for _, t := range req.Topics {
			asked[t.Topic] = append(asked[t.Topic], t.Partitions...)
		}
		wanted = func(topic string, num int32) bool { return slices.Contains(asked[topic], num) }
	}

	dirs := map[string]*kmsg.DescribeLogDirsResponseDir{}
	var order []string
	for _, d := range b.cfg.LogDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			abs = d
		}
		if _, ok := dirs[abs]; ok {
			continue
		}
		out := kmsg.NewDescribeLogDirsResponseDir()
		out.Dir = abs
		out.TotalBytes, out.UsableBytes = -1, -1
		var st syscall.Statfs_t
		if b.logs.DirError(abs) != nil {
			out.ErrorCode = int16(protocol.KafkaStorageError)
		} else if err := syscall.Statfs(abs, &st); err != nil {
			out.ErrorCode = int16(protocol.KafkaStorageError)
		} else if req.Version >= 4 {
			out.TotalBytes = int64(st.Blocks) * st.Bsize
			out.UsableBytes = int64(st.Bavail) * st.Bsize
		}
		dirs[abs] = &out
		order = append(order, abs)
	}

	t := b.parts.Load()
	names := make([]string, 0, len(t.byName))
	for name := range t.byName {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		byDir := map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		for num, p := range t.byName[name] {
			if p == nil || !wanted(name, int32(num)) {
				continue
			}
			ep := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			ep.Partition = int32(num)
			cur := p.log()
			ep.Size = cur.Size()
			dir := absDir(filepath.Dir(cur.Dir()))
			byDir[dir] = append(byDir[dir], ep)
			tp := storage.TopicPartition{Topic: name, Partition: int32(num)}
			if fl, fdir, ok := b.logs.Future(tp); ok {
				fp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				fp.Partition, fp.Size, fp.IsFuture = int32(num), fl.Size(), true
				fp.OffsetLag = max(cur.LogEndOffset()-fl.LogEndOffset(), 0)
				fdir = absDir(fdir)
				byDir[fdir] = append(byDir[fdir], fp)
			}
		}
		for dir, parts := range byDir {
			out, ok := dirs[dir]
			if !ok || out.ErrorCode != 0 {
				continue
			}
			et := kmsg.NewDescribeLogDirsResponseDirTopic()
			et.Topic = name
			et.Partitions = parts
			out.Topics = append(out.Topics, et)
		}
	}
	for _, d := range order {
		resp.Dirs = append(resp.Dirs, *dirs[d])
	}
	return resp, nil
}
