package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
)

// alterDeleteShareGroup deletes a group with DeleteGroups and returns its
// error code.
func alterDeleteShareGroup(ctx context.Context, t testing.TB, cl *kgo.Client, groupID string) int16 {
	t.Helper()
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{groupID}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DeleteGroups: %v", err)
	}
	return resp.Groups[0].ErrorCode
}

// shareStartOffset is a share group's start offset on a partition, as
// DescribeShareGroupOffsets reports it.
func shareStartOffset(ctx context.Context, cl *kgo.Client, groupID, topic string, partition int32) (int64, error) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = groupID
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	g.Topics = append(g.Topics, rt)
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return 0, fmt.Errorf("describe share group offsets: %+v", resp.Groups)
	}
	for _, t := range resp.Groups[0].Topics {
		for _, p := range t.Partitions {
			if p.Partition == partition {
				if p.ErrorCode != 0 {
					return 0, fmt.Errorf("partition error %d", p.ErrorCode)
				}
				return p.StartOffset, nil
			}
		}
	}
	return 0, fmt.Errorf("partition missing: %+v", resp.Groups[0].Topics)
}

// TestShareGroupConsume: three franz-go share consumers on a one-partition
// topic read every record, each record accepted once; every tenth record is
// released at its first delivery and comes back with delivery count 2. The group's
// start offset reaches the end, and after a broker restart the share state
// is still there: nothing accepted is delivered again, new records are.
func TestShareGroupConsume(t *testing.T) {
	t.Parallel()
	rb := startGrpRestartable(t, false)
	ctx := testContext(t, 3*time.Minute)
	const topic, groupID, n = "queue", "share-group", 600
	admCl := newClient(t, rb.b)
	grpCreateTopic(ctx, t, kadm.NewClient(admCl), topic, 1)

	// The records are there before the group: it starts from the earliest
	// (share.auto.offset.reset, a group config).
	prod := newClient(t, rb.b, kgo.DefaultProduceTopic(topic))
	for i := range n {
		prod.Produce(ctx, kgo.StringRecord(fmt.Sprint(i)), nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	setGroupConfig(ctx, t, admCl, groupID, "share.auto.offset.reset", "earliest")

	var mu sync.Mutex
	accepted := map[string]int{}
	released := map[string]bool{}
	redelivered := map[string]int32{}
	byMember := map[string]int{}
	done := make(chan struct{})
	var closeOnce sync.Once
	var wg sync.WaitGroup
	member := func(name string, release bool) {
		defer wg.Done()
		cl := newClient(t, rb.b, kgo.ShareGroup(groupID), kgo.ConsumeTopics(topic), kgo.ClientID(name),
			kgo.ShareMaxRecords(50))
		for {
			select {
			case <-done:
				cl.Close()
				return
			default:
			}
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			fs := cl.PollFetches(pctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				v := string(r.Value)
				if release && !released[v] && len(v) > 0 && v[len(v)-1] == '0' {
					released[v] = true
					cl.MarkAcks(kgo.AckRelease, r)
					return
				}
				if released[v] {
					redelivered[v] = r.DeliveryCount()
				}
				accepted[v]++
				byMember[name]++
				cl.MarkAcks(kgo.AckAccept, r)
			})
			all := len(accepted) == n
			mu.Unlock()
			if err := cl.FlushAcks(ctx); err != nil {
				t.Errorf("flush acks: %v", err)
			}
			if all {
				closeOnce.Do(func() { close(done) })
			}
		}
	}
	wg.Add(3)
	go member("a", true)
	go member("b", true)
	go member("c", true)
	select {
	case <-done:
	case <-ctx.Done():
	}
	wg.Wait()
	mu.Lock()
	if len(accepted) != n {
		t.Fatalf("%d of %d records accepted", len(accepted), n)
	}
	for v, c := range accepted {
		if c != 1 {
			t.Errorf("record %s accepted %d times", v, c)
		}
	}
	if len(released) != n/10 {
		t.Fatalf("%d records released, want every tenth (%d)", len(released), n/10)
	}
	for v := range released {
		if redelivered[v] != 2 {
			t.Errorf("released record %s came back with delivery count %d, want 2", v, redelivered[v])
		}
	}
	t.Logf("records per member: %v; %d released and delivered again", byMember, len(released))
	mu.Unlock()

	waitFor(t, 30*time.Second, "start offset at the end", func() error {
		off, err := shareStartOffset(ctx, admCl, groupID, topic, 0)
		if err == nil && off != n {
			err = fmt.Errorf("start offset %d, want %d", off, n)
		}
		return err
	})
	// The share metrics saw it: every record acquired and accepted once,
	// the released ones acquired twice.
	ev := func(e share.Event) float64 {
		var m dto.Metric
		if err := rb.b.metrics.shareEvents[e].Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	var writes dto.Metric
	if err := rb.b.metrics.shareWrites.Write(&writes); err != nil {
		t.Fatal(err)
	}
	if ev(share.EventAccepted) != n || ev(share.EventReleased) != n/10 || ev(share.EventAcquired) < n+n/10 ||
		writes.GetHistogram().GetSampleCount() == 0 {
		t.Fatalf("share metrics: acquired %v accepted %v released %v, want >= %d, %d, %d",
			ev(share.EventAcquired), ev(share.EventAccepted), ev(share.EventReleased), n+n/10, n, n/10)
	}
	if parts, _ := (*rb.b.metrics.shareCounts.Load())(); parts != 1 {
		t.Fatalf("gregor_share_partitions %d, want 1", parts)
	}

	rb.restart(t)
	prod = newClient(t, rb.b, kgo.DefaultProduceTopic(topic))
	for i := n; i < n+10; i++ {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl := newClient(t, rb.b, kgo.ShareGroup(groupID), kgo.ConsumeTopics(topic))
	got := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < 10 && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Value)] = true
			cl.MarkAcks(kgo.AckAccept, r)
		})
	}
	if len(got) != 10 {
		t.Fatalf("after the restart %d records delivered (%v), want the 10 new ones", len(got), got)
	}
	for i := n; i < n+10; i++ {
		if !got[fmt.Sprint(i)] {
			t.Fatalf("after the restart got %v: accepted records delivered again or new ones missing", got)
		}
	}

	// Deleted once empty, the group's share state goes with it.
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	admCl = newClient(t, rb.b)
	waitFor(t, 30*time.Second, "DeleteGroups of the share group once empty", func() error {
		if code := alterDeleteShareGroup(ctx, t, admCl, groupID); code != 0 {
			return fmt.Errorf("error %d", code)
		}
		return nil
	})
	key := share.Key{Group: groupID, TopicID: [16]byte(rb.b.cluster.Snapshot().Topics[topic].ID), Partition: 0}
	if sum, code := rb.b.shares.state.summary(ctx, key); code != protocol.None || sum.StartOffset != -1 {
		t.Fatalf("after DeleteGroups the share state is still there: start offset %d (code %d)", sum.StartOffset, code)
	}
}

// TestShareFetchLockTimeout: records a member acquired and never
// acknowledged go to another member once their lock expires, with delivery
// count 2; acknowledging them afterwards as the first member fails with
// INVALID_RECORD_STATE. Share session errors are Kafka's.
func TestShareFetchLockTimeout(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.ShareRecordLockDuration, c.ShareMinRecordLockDuration = time.Second, time.Second })
	ctx := testContext(t, time.Minute)
	cl := newClient(t, b)
	topicID := grpCreateTopic(ctx, t, kadm.NewClient(cl), "locks", 1)
	w1, w2 := dialWire(t, b), dialWire(t, b)
	wait := int32(10)
	fetch := func(w *wireConn, member string, epoch int32, ack *kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(1)
		req.GroupID, req.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr(member)
		req.ShareSessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = epoch, wait, 1, 1<<20, 100
		tp := kmsg.NewShareFetchRequestTopicPartition()
		if ack != nil {
			tp.AcknowledgementBatches = append(tp.AcknowledgementBatches, *ack)
		}
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = [16]byte(topicID)
		rt.Partitions = append(rt.Partitions, tp)
		req.Topics = append(req.Topics, rt)
		return w.mustRoundTrip(req).(*kmsg.ShareFetchResponse)
	}
	acquired := func(r *kmsg.ShareFetchResponse) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
		if r.ErrorCode != 0 || len(r.Topics) == 0 || len(r.Topics[0].Partitions) == 0 {
			return nil
		}
		return r.Topics[0].Partitions[0].AcquiredRecords
	}
	// The first fetch initializes the share partition at the end of the
	// (empty) partition; the records come after it.
	if a := acquired(fetch(w1, "m1", 0, nil)); len(a) != 0 {
		t.Fatalf("fetch of an empty partition acquired %+v", a)
	}
	prod := newClient(t, b, kgo.DefaultProduceTopic("locks"))
	for i := range 5 {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	wait = 3000
	first := fetch(w1, "m1", 1, nil)
	if a := acquired(first); len(a) != 1 || a[0].FirstOffset != 0 || a[0].LastOffset != 4 || a[0].DeliveryCount != 1 {
		t.Fatalf("first fetch acquired %+v (error %d)", a, first.ErrorCode)
	}
	if first.AcquisitionLockTimeoutMillis != 1000 {
		t.Fatalf("lock timeout %d ms, want 1000", first.AcquisitionLockTimeoutMillis)
	}
	// m2 finds nothing while m1 holds the records, then gets them with
	// delivery count 2 once the lock expired.
	var second []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	epoch := int32(0)
	waitFor(t, 20*time.Second, "records redelivered after the lock", func() error {
		r := fetch(w2, "m2", epoch, nil)
		if r.ErrorCode != 0 {
			return fmt.Errorf("fetch error %d", r.ErrorCode)
		}
		epoch++
		second = append(second, acquired(r)...)
		if len(second) == 0 {
			return fmt.Errorf("nothing yet")
		}
		return nil
	})
	if len(second) != 1 || second[0].FirstOffset != 0 || second[0].LastOffset != 4 || second[0].DeliveryCount != 2 {
		t.Fatalf("second member acquired %+v, want offsets 0-4 with delivery count 2", second)
	}
	// m1's late acknowledgement is refused.
	wait = 10
	ack := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	ack.FirstOffset, ack.LastOffset, ack.AcknowledgeTypes = 0, 4, []int8{1}
	late := fetch(w1, "m1", 2, &ack)
	if late.ErrorCode != 0 || len(late.Topics) == 0 || late.Topics[0].Partitions[0].AcknowledgeErrorCode != int16(protocol.InvalidRecordState) {
		t.Fatalf("late acknowledgement: %+v", late)
	}
	// Session errors.
	if r := fetch(w1, "m1", 7, nil); r.ErrorCode != int16(protocol.InvalidShareSessionEpoch) {
		t.Fatalf("wrong epoch: error %d", r.ErrorCode)
	}
	if r := fetch(w1, "nobody", 3, nil); r.ErrorCode != int16(protocol.ShareSessionNotFound) {
		t.Fatalf("no session: error %d", r.ErrorCode)
	}
	if r := fetch(w1, "m3", 0, &ack); r.ErrorCode != int16(protocol.InvalidRequest) {
		t.Fatalf("acknowledgement in a new session: error %d", r.ErrorCode)
	}
	// A topic id nobody knows is UNKNOWN_TOPIC_ID and stays out of the
	// session.
	bogus := kmsg.NewPtrShareFetchRequest()
	bogus.SetVersion(1)
	bogus.GroupID, bogus.MemberID, bogus.MaxWaitMillis, bogus.MaxRecords = kmsg.StringPtr("g"), kmsg.StringPtr("m4"), 10, 10
	bt := kmsg.NewShareFetchRequestTopic()
	bt.TopicID = [16]byte{0xde, 0xad}
	bt.Partitions = append(bt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	bogus.Topics = append(bogus.Topics, bt)
	r := w2.mustRoundTrip(bogus).(*kmsg.ShareFetchResponse)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != int16(protocol.UnknownTopicID) {
		t.Fatalf("fetch of an unknown topic id: %+v", r)
	}
	b.shares.mu.Lock()
	s := b.shares.mu.sessions[shareSessionKey{"g", "m4"}]
	b.shares.mu.Unlock()
	if s == nil {
		t.Fatal("no share session for m4")
	}
	s.mu.Lock()
	parts := len(s.mu.parts)
	s.mu.Unlock()
	if parts != 0 {
		t.Fatalf("the unknown partition joined the session (%d partitions)", parts)
	}
}

// TestShareGroupCluster: a share group on three brokers, whose share
// partitions' state lives with share coordinators that are, for some
// partitions, other brokers than the partition leaders (inter-broker
// ReadShareGroupState/WriteShareGroupState). After the group accepted every
// record and 100 more were produced, the leader of one partition stops;
// its partition's new leader loads the state from the share coordinator
// (which may have moved too): no accepted record is delivered again, and
// the new records are.
func TestShareGroupCluster(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3, func(c *Config) { c.ReplicaLagTimeMax = 10 * time.Second })
	ctx := testContext(t, 3*time.Minute)
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.Addrs()...)
	}
	const topic, groupID = "shared", "cluster-share"
	admCl := newClient(t, bs[0], kgo.SeedBrokers(seeds...))
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, bs[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			prod.Produce(ctx, kgo.StringRecord(fmt.Sprint(i)), nil)
		}
		if err := prod.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 300)
	setGroupConfig(ctx, t, admCl, groupID, "share.auto.offset.reset", "earliest")

	var mu sync.Mutex
	seen := map[string]int{}
	consume := func(want int, alive []*Broker) {
		t.Helper()
		var s []string
		for _, b := range alive {
			s = append(s, b.Addrs()...)
		}
		var cls []*kgo.Client
		for i := range 3 {
			cls = append(cls, newClient(t, alive[0], kgo.SeedBrokers(s...), kgo.ShareGroup(groupID), kgo.ConsumeTopics(topic),
				kgo.ClientID(fmt.Sprint("member-", i))))
		}
		deadline := time.Now().Add(90 * time.Second)
		for {
			mu.Lock()
			n := len(seen)
			mu.Unlock()
			if n >= want || time.Now().After(deadline) {
				break
			}
			for _, cl := range cls {
				pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				fs := cl.PollFetches(pctx)
				cancel()
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)]++
					mu.Unlock()
					cl.MarkAcks(kgo.AckAccept, r)
				})
				if err := cl.FlushAcks(ctx); err != nil {
					t.Errorf("flush acks: %v", err)
				}
			}
		}
		for _, cl := range cls {
			cl.Close()
		}
	}
	consume(300, bs)

	// Some share partitions keep their state on another broker than their
	// leader.
	md := bs[0].cluster.Snapshot()
	remote := 0
	st := md.Topics[shareStateTopic]
	if st == nil {
		t.Fatal("no __share_group_state topic")
	}
	for p := range int32(3) {
		k := share.Key{Group: groupID, TopicID: [16]byte(md.Topics[topic].ID), Partition: p}
		if st.Partitions[share.CoordinatorPartition(k.String(), int32(len(st.Partitions)))].Leader != md.Topics[topic].Partitions[p].Leader {
			remote++
		}
	}
	t.Logf("%d of 3 share partitions have their share coordinator on another broker", remote)

	// 100 more records, then a partition's leader stops (they are
	// produced before, so that the check is of the share state, not of
	// producing through a leader change).
	produce(300, 400)
	// The broker to stop leads a partition and is not the first, whose
	// embedded etcd the cluster's registry is.
	part, leader := int32(-1), bs[1].cfg.NodeID
	for i, ps := range md.Topics[topic].Partitions {
		if ps.Leader != bs[0].cfg.NodeID {
			part, leader = int32(i), ps.Leader
			break
		}
	}
	var alive []*Broker
	for _, b := range bs {
		if b.cfg.NodeID == leader {
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		alive = append(alive, b)
	}
	waitFor(t, 60*time.Second, "the stopped broker's partition led by another broker", func() error {
		if part < 0 {
			return nil // it led none: a follower stopped
		}
		p := alive[0].cluster.Snapshot().Topics[topic].Partitions[part]
		if p.Leader == leader || p.Leader < 0 {
			return fmt.Errorf("leader %d", p.Leader)
		}
		return nil
	})
	consume(400, alive)

	// The group's lag, asked of its coordinator, counts the partitions led
	// elsewhere too: 0 everywhere once all is accepted.
	var adm2 *kgo.Client
	for _, b := range alive {
		adm2 = newClient(t, b, kgo.SeedBrokers(b.Addrs()...))
		break
	}
	waitFor(t, 30*time.Second, "lag 0 on every partition", func() error {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.SetVersion(1)
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = groupID
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, adm2)
		if err != nil {
			return err
		}
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 {
			return fmt.Errorf("%+v", resp.Groups)
		}
		for _, p := range resp.Groups[0].Topics[0].Partitions {
			if p.ErrorCode != 0 || p.Lag != 0 {
				return fmt.Errorf("partition %d: lag %d, error %d", p.Partition, p.Lag, p.ErrorCode)
			}
		}
		return nil
	})

	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 400 {
		t.Fatalf("%d of 400 records delivered", len(seen))
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("record %s delivered %d times", v, n)
		}
	}
}

// TestSharePartsEvicted: past the broker's limit of share partitions in
// memory, idle ones holding no acquired record are dropped and loaded
// again from the share coordinator on their next use, state intact.
func TestSharePartsEvicted(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	b.shares.maxParts, b.shares.idleEvict = 2, 0
	ctx := testContext(t, time.Minute)
	cl := newClient(t, b)
	grpCreateTopic(ctx, t, kadm.NewClient(cl), "evict", 1)
	prod := newClient(t, b, kgo.DefaultProduceTopic("evict"))
	for i := range 10 {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p, code := b.lookupPartition("evict", [16]byte{}, false, 0)
	if code != protocol.None {
		t.Fatalf("lookup: %v", code)
	}
	part := func(group string) *sharePart {
		t.Helper()
		sp, code := b.shares.part(ctx, group, "evict", p)
		if code != protocol.None {
			t.Fatalf("share partition of %s: %v", group, code)
		}
		return sp
	}
	setGroupConfig(ctx, t, cl, "g0", "share.auto.offset.reset", "earliest")
	sp := part("g0")
	if _, acquired, err := b.shares.acquire(sp, "m", 4, 1<<20, false); err != nil || len(acquired) != 1 || acquired[0].Last != 3 {
		t.Fatalf("acquire: %+v %v", acquired, err)
	}
	if code := b.shares.acknowledge(ctx, sp, "m", []share.Ack{{First: 0, Last: 3, Types: []int8{share.AckAccept}}}); code != protocol.None {
		t.Fatalf("acknowledge: %v", code)
	}
	for _, g := range []string{"g1", "g2", "g3"} {
		part(g)
	}
	b.shares.mu.Lock()
	n, kept := len(b.shares.mu.parts), b.shares.mu.parts[sp.key] == sp
	b.shares.mu.Unlock()
	if n > 2 || kept {
		t.Fatalf("%d share partitions in memory, g0's kept %v: want the idle ones dropped", n, kept)
	}
	again := part("g0")
	if again == sp {
		t.Fatal("g0's evicted share partition came back as the same value")
	}
	again.mu.Lock()
	start := again.mu.p.StartOffset()
	again.mu.Unlock()
	if start != 4 {
		t.Fatalf("g0 loaded again at start offset %d, want 4 (its acceptances kept)", start)
	}
}

// TestShareGroupReadCommitted: with share.isolation.level=read_committed a
// share group gets the records of committed transactions and never those
// of aborted ones (nor anything past the last stable offset); with
// read_uncommitted it gets both.
func TestShareGroupReadCommitted(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := testContext(t, 2*time.Minute)
	cl := newClient(t, b)
	grpCreateTopic(ctx, t, kadm.NewClient(cl), "txq", 1)
	txp := newClient(t, b, kgo.DefaultProduceTopic("txq"), kgo.TransactionalID("txq-producer"))
	for _, commit := range []bool{false, true} {
		if err := txp.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if err := txp.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%v-%d", commit, i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txp.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(group, isolation string) map[string]bool {
		t.Helper()
		setGroupConfig(ctx, t, cl, group, "share.auto.offset.reset", "earliest")
		setGroupConfig(ctx, t, cl, group, "share.isolation.level", isolation)
		c := newClient(t, b, kgo.ShareGroup(group), kgo.ConsumeTopics("txq"))
		got := map[string]bool{}
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := c.PollFetches(pctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) {
				got[string(r.Value)] = true
				c.MarkAcks(kgo.AckAccept, r)
			})
			if len(got) >= 5 && isolation == "read_committed" || len(got) >= 10 {
				// Poll once more: nothing else may come.
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				c.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
				cancel()
				break
			}
		}
		return got
	}
	committed := read("rc", "read_committed")
	for i := range 5 {
		if !committed[fmt.Sprintf("true-%d", i)] {
			t.Errorf("read_committed: committed record %d missing (got %v)", i, committed)
		}
		if committed[fmt.Sprintf("false-%d", i)] {
			t.Errorf("read_committed: aborted record %d delivered", i)
		}
	}
	if all := read("ru", "read_uncommitted"); len(all) != 10 {
		t.Errorf("read_uncommitted: %d records (%v), want the 10 of both transactions", len(all), all)
	}
}

// TestShareFetchOpeningListsEveryPartition: the ShareFetch that opens a
// share session lists every partition of it, one with nothing to acquire
// too (error NONE, no records), as Kafka's full share session response
// does.
func TestShareFetchOpeningListsEveryPartition(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	id := w.createTopic("share-empty", 2, nil)
	authzGroupReady(t, w, "sg-empty")
	waitFor(t, 10*time.Second, "the member joined", func() error {
		hb := authzShareHeartbeat(w, "sg-empty", "m1", 0, "share-empty")
		if hb.ErrorCode != 0 {
			return fmt.Errorf("ShareGroupHeartbeat: %s", protocol.ErrorCode(hb.ErrorCode))
		}
		return nil
	})
	resp := authzShareFetch(w, "sg-empty", "m1", id)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("opening ShareFetch of an empty partition: error %d, topics %+v", resp.ErrorCode, resp.Topics)
	}
	if p := resp.Topics[0].Partitions[0]; p.Partition != 0 || p.ErrorCode != 0 || len(p.AcquiredRecords) != 0 {
		t.Fatalf("partition %d: error %d, %d acquired", p.Partition, p.ErrorCode, len(p.AcquiredRecords))
	}
}
