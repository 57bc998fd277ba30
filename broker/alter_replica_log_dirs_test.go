package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

func alterLogDirs(ctx context.Context, t *testing.T, cl *kgo.Client, node int32, dir, topic string, parts ...int32) map[int32]protocol.ErrorCode {
	t.Helper()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	d := kmsg.NewAlterReplicaLogDirsRequestDir()
	d.Dir = dir
	rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	rt.Topic, rt.Partitions = topic, parts
	d.Topics = append(d.Topics, rt)
	req.Dirs = append(req.Dirs, d)
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]protocol.ErrorCode{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[rp.Partition] = protocol.ErrorCode(rp.ErrorCode)
		}
	}
	return out
}

// replicaDirs returns, from DescribeLogDirs, the dir of each of topic's
// partitions and of each future replica.
func replicaDirs(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) (cur, future map[int32]string, lag int64) {
	t.Helper()
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	cur, future = map[int32]string{}, map[int32]string{}
	all.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic != topic {
				return
			}
			if p.IsFuture {
				future[p.Partition] = d.Dir
				lag += p.OffsetLag
			} else {
				cur[p.Partition] = d.Dir
			}
		})
	})
	return cur, future, lag
}

// TestAlterReplicaLogDirs moves the partitions of a topic taking acks=all
// writes, and the group coordinator's, from one log dir of the broker to
// the other, slowed by replica.alter.log.dirs.io.max.bytes.per.second so
// that DescribeLogDirs shows the future replicas under way: every
// acknowledged record is read back once, in order, the committed offsets
// survive, and after a restart the logs are in the new dir. Kafka's
// errors for an unknown dir and an unknown partition.
func TestAlterReplicaLogDirs(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dirA, dirB := filepath.Join(parent, "a"), filepath.Join(parent, "b")
	b := startBroker(t, func(c *Config) {
		c.LogDirs = []string{dirA, dirB}
		c.OffsetsTopicNumPartitions = 1
	})
	ctx := testContext(t, 2*time.Minute)
	cl := newClient(t, b, kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	const topic = "moving-dirs"
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// Both partitions in dir a, whatever the placement did.
	for p := int32(0); p < 2; p++ {
		if code := alterLogDirs(ctx, t, cl, b.cfg.NodeID, dirA, topic, p)[p]; code != protocol.None {
			t.Fatalf("move %s-%d to a: %v", topic, p, code)
		}
	}
	waitFor(t, 30*time.Second, "both partitions in dir a", func() error {
		cur, future, _ := replicaDirs(ctx, t, adm, topic)
		if cur[0] != dirA || cur[1] != dirA || len(future) != 0 {
			return fmt.Errorf("current %v, future %v", cur, future)
		}
		return nil
	})
	if res := alterLogDirs(ctx, t, cl, b.cfg.NodeID, filepath.Join(parent, "c"), topic, 0); res[0] != protocol.LogDirNotFound {
		t.Fatalf("move to a dir the broker does not have: %v, want LOG_DIR_NOT_FOUND", res[0])
	}
	if res := alterLogDirs(ctx, t, cl, b.cfg.NodeID, dirB, "no-such-topic", 0); res[0] != protocol.UnknownTopicOrPartition {
		t.Fatalf("move of an unknown partition: %v, want UNKNOWN_TOPIC_OR_PARTITION", res[0])
	}

	const group = "dir-mover"
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 7, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, group, offsets); err != nil {
		t.Fatal(err)
	}

	// Writers run through the move.
	var mu sync.Mutex
	acked := map[int32][]string{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("v%06d-%s", i, noise(200))
			r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(v)}).First()
			if err != nil {
				t.Errorf("produce %d: %v", i, err)
				return
			}
			mu.Lock()
			acked[r.Partition] = append(acked[r.Partition], v)
			mu.Unlock()
			// ListOffsets by time reads the logs' time indexes: a log
			// shut by a move under the read is read again in its new
			// dir, never answered NOT_LEADER_OR_FOLLOWER.
			listed, err := adm.ListOffsetsAfterMilli(ctx, 0, topic)
			if err != nil {
				t.Errorf("ListOffsets by time: %v", err)
				return
			}
			listed.Each(func(o kadm.ListedOffset) {
				if o.Err != nil {
					t.Errorf("ListOffsets by time of %s-%d during the moves: %v", o.Topic, o.Partition, o.Err)
				}
			})
			time.Sleep(time.Millisecond)
		}
	}()
	waitFor(t, 30*time.Second, "some records", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(acked[0])+len(acked[1]) < 400 {
			return fmt.Errorf("%d acked", len(acked[0])+len(acked[1]))
		}
		return nil
	})
	rate := "5000"
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Value: &rate}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the throttle applied", func() error {
		if got := b.alterLogDirsRate.Load(); got != 5000 {
			return fmt.Errorf("rate %d", got)
		}
		return nil
	})
	for p, code := range alterLogDirs(ctx, t, cl, b.cfg.NodeID, dirB, topic, 0, 1) {
		if code != protocol.None {
			t.Fatalf("move %s-%d to b: %v", topic, p, code)
		}
	}
	if code := alterLogDirs(ctx, t, cl, b.cfg.NodeID, dirB, "__consumer_offsets", 0)[0]; code != protocol.None {
		t.Fatalf("move __consumer_offsets-0 to b: %v", code)
	}
	// The throttle holds the copies back (the writers outrun them): the
	// future replicas show, behind.
	waitFor(t, 30*time.Second, "future replicas in dir b, behind", func() error {
		cur, future, lag := replicaDirs(ctx, t, adm, topic)
		if len(future) != 2 || future[0] != dirB || future[1] != dirB || lag <= 0 {
			return fmt.Errorf("current %v future %v, lag %d, running %v", cur, future, lag, b.logs.Futures())
		}
		return nil
	})
	unlimited := "9223372036854775807"
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Value: &unlimited}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the moves done", func() error {
		cur, future, _ := replicaDirs(ctx, t, adm, topic)
		if cur[0] != dirB || cur[1] != dirB || len(future) != 0 {
			return fmt.Errorf("current %v, future %v", cur, future)
		}
		if d, _ := b.logs.LogDir(storeTP("__consumer_offsets", 0)); d != dirB {
			return fmt.Errorf("__consumer_offsets-0 in %s", d)
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond) // writes to the moved logs
	close(stop)
	wg.Wait()

	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup(topic, 0); !ok || o.At != 7 {
		t.Fatalf("committed offset after the coordinator's log moved: %+v %v, want 7", o, ok)
	}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 9, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, group, offsets); err != nil {
		t.Fatalf("commit after the coordinator's log moved: %v", err)
	}

	check := func(b *Broker, when string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		for p := int32(0); p < 2; p++ {
			got := consumeValues(ctx, t, b, topic, p, len(acked[p]))
			if len(got) != len(acked[p]) {
				t.Fatalf("%s: partition %d holds %d records, %d acknowledged", when, p, len(got), len(acked[p]))
			}
			for i := range got {
				if got[i] != acked[p][i] {
					t.Fatalf("%s: partition %d offset %d holds %.8q, acknowledged %.8q", when, p, i, got[i], acked[p][i])
				}
			}
		}
	}
	check(b, "after the move")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := restartBroker(t, b)
	for p := int32(0); p < 2; p++ {
		if d, _ := b2.logs.LogDir(storeTP(topic, p)); d != dirB {
			t.Fatalf("after a restart %s-%d is in %s, want %s", topic, p, d, dirB)
		}
	}
	check(b2, "after a restart")
	fetched, err = kadm.NewClient(newClient(t, b2)).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup(topic, 0); !ok || o.At != 9 {
		t.Fatalf("committed offset after a restart: %+v %v, want 9", o, ok)
	}
}

// consumeValues reads n records of topic's partition from offset 0.
func consumeValues(ctx context.Context, t *testing.T, b *Broker, topic string, partition int32, n int) []string {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(0)}}))
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s-%d: %d of %d records: %v", topic, partition, len(out), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	cl.Close()
	return out
}

// noise returns n random hex digits: values the producer's compression
// does not shrink, so that a copy's throttle has bytes to hold back.
func noise(n int) string {
	b := make([]byte, (n+1)/2)
	rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

func storeTP(topic string, p int32) storage.TopicPartition {
	return storage.TopicPartition{Topic: topic, Partition: p}
}

// TestAlterReplicaLogDirsResumes restarts the broker while a throttled move
// is under way: the copy resumes from the future log the restart found,
// and the move finishes with every record.
func TestAlterReplicaLogDirsResumes(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dirA, dirB := filepath.Join(parent, "a"), filepath.Join(parent, "b")
	b := startBroker(t, func(c *Config) { c.LogDirs = []string{dirA, dirB} })
	ctx := testContext(t, 2*time.Minute)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	const topic = "resumed-move"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if code := alterLogDirs(ctx, t, cl, b.cfg.NodeID, dirA, topic, 0)[0]; code != protocol.None {
		t.Fatal(code)
	}
	waitFor(t, 30*time.Second, "the partition in dir a", func() error {
		if cur, future, _ := replicaDirs(ctx, t, adm, topic); cur[0] != dirA || len(future) != 0 {
			return fmt.Errorf("current %v, future %v", cur, future)
		}
		return nil
	})
	// 30 batches of 100 records: the copy takes them a few at a time.
	var want []string
	for range 30 {
		var recs []*kgo.Record
		for range 100 {
			v := fmt.Sprintf("r%05d-%s", len(want), noise(100))
			want = append(want, v)
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rate := "20000"
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Value: &rate}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the throttle applied", func() error {
		if got := b.alterLogDirsRate.Load(); got != 20000 {
			return fmt.Errorf("rate %d", got)
		}
		return nil
	})
	if code := alterLogDirs(ctx, t, cl, b.cfg.NodeID, dirB, topic, 0)[0]; code != protocol.None {
		t.Fatal(code)
	}
	waitFor(t, 30*time.Second, "part of the copy made", func() error {
		if cur, future, lag := replicaDirs(ctx, t, adm, topic); future[0] != dirB || lag <= 0 || lag == 3000 {
			return fmt.Errorf("current %v future %v, lag %d, futures %v", cur, future, lag, b.logs.Futures())
		}
		return nil
	})
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := restartBroker(t, b)
	if len(b2.logs.Futures()) != 1 {
		t.Fatalf("futures after the restart: %v", b2.logs.Futures())
	}
	adm2 := kadm.NewClient(newClient(t, b2))
	unlimited := "9223372036854775807"
	if _, err := adm2.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Value: &unlimited}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the resumed move done", func() error {
		if cur, future, _ := replicaDirs(ctx, t, adm2, topic); cur[0] != dirB || len(future) != 0 {
			return fmt.Errorf("current %v, future %v", cur, future)
		}
		return nil
	})
	got := consumeValues(ctx, t, b2, topic, 0, len(want))
	if len(got) != len(want) {
		t.Fatalf("%d records after the move, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("offset %d holds %.6q, want %.6q", i, got[i], want[i])
		}
	}
}
