package broker

// AlterReplicaLogDirs (key 34), versions 1-2.
//
// Moves replicas this broker holds to another of its log dirs, as
// kafka-reassign-partitions does with the log_dirs of its plan: the log is
// copied into a future log in the destination dir while it goes on taking
// writes, and put in place once the copy has caught up (storage/move.go;
// the copy is log_dir_moves.go's). Like Kafka's, the answer comes when the
// move has begun; DescribeLogDirs shows it under way (a future replica
// and its offset lag) and done. Per partition, Kafka's errors:
// LOG_DIR_NOT_FOUND (no such log dir here), KAFKA_STORAGE_ERROR (the dir,
// or the replica's, is offline), INVALID_TOPIC_EXCEPTION (the future log's
// name would pass 255 bytes), REPLICA_NOT_AVAILABLE (this broker holds no
// replica of the partition yet: the dir is remembered, and the replica is
// created in it when it comes, as Kafka does), UNKNOWN_TOPIC_OR_PARTITION
// (no such partition in the metadata). A replica already in the
// dir is a success, and cancels a move to another dir under way.
//
// Sent to a broker, about that broker's log dirs; the admin client sends
// one request per broker. It needs ALTER on the cluster: without it every
// partition of the request gets CLUSTER_AUTHORIZATION_FAILED and nothing
// moves, as in Kafka.

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

var alterReplicaLogDirsAPI = handler{key: 34, min: 1, max: 2, handle: (*Broker).handleAlterReplicaLogDirs}

func (b *Broker) handleAlterReplicaLogDirs(_ context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	allowed := c.authorizedCluster(acl.OpAlter)
	byTopic := map[string]int{}
	add := func(topic string, p int32, code protocol.ErrorCode) {
		i, ok := byTopic[topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[topic] = i
			t := kmsg.NewAlterReplicaLogDirsResponseTopic()
			t.Topic = topic
			resp.Topics = append(resp.Topics, t)
		}
		rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p, int16(code)
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			// Names alias the request frame, which the connection reuses;
			// a move keeps its partition's name for as long as it runs.
			topic := strings.Clone(t.Topic)
			for _, p := range t.Partitions {
				if !allowed {
					add(topic, p, protocol.ClusterAuthorizationFailed)
					continue
				}
				add(topic, p, b.alterReplicaLogDir(storage.TopicPartition{Topic: topic, Partition: p}, strings.Clone(d.Dir)))
			}
		}
	}
	return resp, nil
}

// alterReplicaLogDir moves tp's replica here to dir, or records dir for a
// replica to come; it returns the partition's error code.
func (b *Broker) alterReplicaLogDir(tp storage.TopicPartition, dir string) protocol.ErrorCode {
	if !slices.ContainsFunc(b.cfg.LogDirs, func(d string) bool { return sameDir(d, dir) }) {
		return protocol.LogDirNotFound
	}
	if b.logs.DirError(absDir(dir)) != nil {
		return protocol.KafkaStorageError
	}
	var p *partition
	if ps := b.parts.Load().byName[tp.Topic]; tp.Partition >= 0 && int(tp.Partition) < len(ps) {
		p = ps[tp.Partition]
	}
	if p == nil {
		if code := b.notMadeYet(tp.Topic, [16]byte{}, false, tp.Partition, protocol.UnknownTopicOrPartition); code != protocol.NotLeaderOrFollower {
			return code
		}
		// A replica to come here: created in dir when it comes. Kafka
		// keeps REPLICA_NOT_AVAILABLE as this API's answer.
		if err := b.logs.SetPreferredDir(tp, absDir(dir)); err != nil {
			return protocol.LogDirNotFound
		}
		return protocol.ReplicaNotAvailable
	}
	if p.log().Err() != nil {
		return protocol.KafkaStorageError
	}
	started, err := b.logs.StartMove(tp, absDir(dir))
	switch {
	case errors.Is(err, storage.ErrLogDirNotFound):
		return protocol.LogDirNotFound
	case errors.Is(err, storage.ErrInvalidConfig):
		return protocol.InvalidTopicException
	case errors.Is(err, storage.ErrUnknownPartition):
		return protocol.ReplicaNotAvailable
	case errors.Is(err, storage.ErrLogFailed):
		return protocol.KafkaStorageError
	case err != nil:
		b.loggerFor("storage").Error("starting a move between log dirs", "partition", tp.String(), "dir", dir, "err", err)
		return protocol.KafkaStorageError
	}
	if started {
		b.startLogDirMove(tp)
	}
	return protocol.None
}
