package broker

// Consumption by franz-go group consumers with each balancer (range,
// round-robin, sticky, cooperative-sticky), one group and one 12-partition
// topic each, all on one broker: while the records are produced, member 1
// consumes alone, members 2 and 3 join, member 1 leaves (Close, which sends
// LeaveGroup), and the other two finish. Each member commits what it
// processed after each poll, either synchronously (DisableAutoCommit and
// CommitUncommittedOffsets) or through marks (AutoCommitMarks and
// MarkCommitRecords), with rebalances blocked between poll and commit
// (BlockRebalanceOnPoll), as franz-go recommends for at-least-once. Every
// produced record must be processed at least once, and the committed
// offsets must end at the high watermarks.
//
// Then the broker is closed and a new one started on the same data dir
// (the registry on new ports: the embedded etcd member comes back from its
// data dir wherever it listens). Each group must come back Empty with its
// committed offsets, and a new consumer in it must start exactly at them:
// the first record it sees of each partition is at the committed offset,
// and it sees the records produced after the restart and nothing else.
//
// Processing a poll of up to grpPollRecords records takes grpWork (a sleep
// standing for the work), and the producer stays at most grpAhead chunks
// ahead of processing and holds at a third and at two thirds of the
// records until the join and the leave are done: so the membership changes
// happen with records being fetched, processed and committed, and the
// members that join have records left to consume.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	grpPartitions    = 12
	grpRecords       = 30_000 // per balancer
	grpChunk         = 1_000
	grpAhead         = 3
	grpResumeRecords = 1_200
	grpPollRecords   = 100
	grpWork          = 10 * time.Millisecond
)

// grpCommit is how a member commits what it processed.
type grpCommit int

const (
	// grpCommitSync: DisableAutoCommit, CommitUncommittedOffsets after
	// processing each poll.
	grpCommitSync grpCommit = iota
	// grpCommitMarks: AutoCommitMarks, MarkCommitRecords after processing
	// each poll; kgo commits the marks every 200 ms and on revoke.
	grpCommitMarks
)

func (c grpCommit) String() string {
	if c == grpCommitMarks {
		return "marks"
	}
	return "sync commits"
}

// grpCase is one balancer's group.
type grpCase struct {
	name     string
	balancer kgo.GroupBalancer
	commit   grpCommit
	topic    string
	group    string
	// ends are the high watermarks (and committed offsets) when
	// consumption ended; the restarted broker must resume from them.
	ends map[int32]int64
	// brokerDowntime: the broker restarts under the members, so fetch
	// errors are logged, not failures.
	brokerDowntime bool
}

// grpPos is a record's place: partition<<40 | offset.
func grpPos(partition int32, offset int64) int64 { return int64(partition)<<40 | offset }

// grpLedger holds one group's produced and processed records.
type grpLedger struct {
	mu struct {
		sync.Mutex
		produced  []int64
		processed map[int64]int   // times each record was processed
		first     map[int32]int64 // the first offset processed per partition
		changed   chan struct{}   // closed when processing moves
		total     int             // processed, duplicates included
	}
}

func newGrpLedger() *grpLedger {
	l := &grpLedger{}
	l.mu.processed = map[int64]int{}
	l.mu.first = map[int32]int64{}
	l.mu.changed = make(chan struct{})
	return l
}

func (l *grpLedger) addProduced(r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.produced = append(l.mu.produced, grpPos(r.Partition, r.Offset))
}

// process notes that rs were processed.
func (l *grpLedger) process(rs []*kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rs {
		l.mu.processed[grpPos(r.Partition, r.Offset)]++
		if _, ok := l.mu.first[r.Partition]; !ok {
			l.mu.first[r.Partition] = r.Offset
		}
	}
	l.mu.total += len(rs)
	close(l.mu.changed)
	l.mu.changed = make(chan struct{})
}

// counts returns how many records were produced, processed at least once,
// and processed in all.
func (l *grpLedger) counts() (produced, unique, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.produced), len(l.mu.processed), l.mu.total
}

// waitProcessed waits until n records were processed at least once.
func (l *grpLedger) waitProcessed(ctx context.Context, n int) error {
	for {
		l.mu.Lock()
		unique, ch := len(l.mu.processed), l.mu.changed
		l.mu.Unlock()
		if unique >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d records processed: %w", unique, n, ctx.Err())
		}
	}
}

// unprocessed returns how many produced records were never processed, and
// the first few of them.
func (l *grpLedger) unprocessed() (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	var some []string
	for _, pos := range l.mu.produced {
		if l.mu.processed[pos] == 0 {
			if n++; n <= 10 {
				some = append(some, fmt.Sprintf("%d/%d", pos>>40, pos&(1<<40-1)))
			}
		}
	}
	return n, some
}

// grpProduce produces n records with distinct keys, so they spread over the
// partitions, a chunk at a time. With gate, a chunk waits until processing
// is within grpAhead chunks of it; the chunk starting at record i waits
// for holds[i] to be closed.
func grpProduce(ctx context.Context, prod *kgo.Client, topic string, l *grpLedger, n int, gate bool, holds map[int]chan struct{}) error {
	var (
		mu    sync.Mutex
		first error
	)
	for start := 0; start < n; start += grpChunk {
		if hold, ok := holds[start]; ok {
			select {
			case <-hold:
			case <-ctx.Done():
				return fmt.Errorf("producer held at record %d: %w", start, ctx.Err())
			}
		}
		if gate {
			if err := l.waitProcessed(ctx, start-grpAhead*grpChunk); err != nil {
				return fmt.Errorf("producer waits for processing: %w", err)
			}
		}
		for i := start; i < min(start+grpChunk, n); i++ {
			r := &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "%s-%d", topic, i)}
			prod.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					first = cmp.Or(first, fmt.Errorf("produce %s: %w", r.Key, err))
					mu.Unlock()
					return
				}
				l.addProduced(r)
			})
		}
		if err := prod.Flush(ctx); err != nil {
			return err
		}
		mu.Lock()
		err := first
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// grpMember is one group consumer and its poll loop.
type grpMember struct {
	name       string
	cl         *grpClient
	cancel     context.CancelFunc
	done       chan struct{}
	processed  atomic.Int64
	commitErrs atomic.Int64
	fetchErrs  atomic.Int64 // tolerated only across a broker restart
	assigned   atomic.Int64 // callbacks that assigned partitions
	stopOnce   sync.Once
}

func startGrpMember(t *testing.T, b *Broker, c *grpCase, l *grpLedger, name string) *grpMember {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := &grpMember{name: name, cancel: cancel, done: make(chan struct{})}
	opts := grpOpts(b, c.group, c.topic, kgo.ClientID(name), kgo.Balancers(c.balancer), kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			if len(a[c.topic]) > 0 {
				m.assigned.Add(1)
			}
		}))
	switch c.commit {
	case grpCommitSync:
		opts = append(opts, kgo.DisableAutoCommit())
	case grpCommitMarks:
		// No OnPartitionsRevoked of our own: kgo's default commits the
		// marks before giving partitions up.
		opts = append(opts, kgo.AutoCommitMarks(), kgo.AutoCommitInterval(200*time.Millisecond))
	}
	m.cl = newGrpClient(t, opts...)
	go m.run(ctx, t, c, l)
	t.Cleanup(m.stop)
	return m
}

// run polls, processes (records the records in l), commits, and only then
// lets the group rebalance.
func (m *grpMember) run(ctx context.Context, t *testing.T, c *grpCase, l *grpLedger) {
	defer close(m.done)
	for {
		fs := m.cl.PollRecords(ctx, grpPollRecords)
		if ctx.Err() != nil {
			m.cl.AllowRebalance()
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, kerr.CoordinatorLoadInProgress) {
				// A group's first join can meet its coordinator still
				// loading, as with Kafka; kgo retries and reports it.
				return
			}
			if c.brokerDowntime {
				if m.fetchErrs.Add(1) == 1 {
					t.Logf("%s: fetch %s/%d: %v (further fetch errors only counted)", m.name, topic, p, err)
				}
				return
			}
			t.Errorf("%s: fetch %s/%d: %v", m.name, topic, p, err)
		})
		if rs := fs.Records(); len(rs) > 0 {
			time.Sleep(grpWork) // the processing
			l.process(rs)
			m.processed.Add(int64(len(rs)))
			switch c.commit {
			case grpCommitSync:
				// Not ctx: a member told to stop still commits what it
				// processed.
				cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if err := m.cl.CommitUncommittedOffsets(cctx); err != nil {
					// At least once: the next owner processes them again.
					m.commitErrs.Add(1)
					t.Logf("%s: commit failed: %v", m.name, err)
				}
				cancel()
			case grpCommitMarks:
				m.cl.MarkCommitRecords(rs...)
			}
		}
		m.cl.AllowRebalance()
	}
}

// stop ends the poll loop and closes the client, which leaves the group
// (and, committing by marks, commits them first).
func (m *grpMember) stop() {
	m.stopOnce.Do(func() {
		m.cancel()
		<-m.done
		m.cl.close()
	})
}

// grpCommittedAtEnd returns the high watermarks of topic's partitions if
// the group has committed exactly them, and an error saying where not.
func grpCommittedAtEnd(ctx context.Context, adm *kadm.Client, topic, groupID string) (map[int32]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	committed, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		return nil, fmt.Errorf("fetch offsets: %w", err)
	}
	out := map[int32]int64{}
	var behind []string
	for p := range int32(grpPartitions) {
		end, ok := ends.Lookup(topic, p)
		switch {
		case !ok:
			return nil, fmt.Errorf("no end offset of %s/%d", topic, p)
		case end.Err != nil:
			return nil, fmt.Errorf("end offset of %s/%d: %w", topic, p, end.Err)
		}
		out[p] = end.Offset
		c, ok := committed.Lookup(topic, p)
		switch {
		case !ok:
			behind = append(behind, fmt.Sprintf("%d: nothing committed, end %d", p, end.Offset))
		case c.Err != nil:
			behind = append(behind, fmt.Sprintf("%d: %v", p, c.Err))
		case c.At != end.Offset:
			behind = append(behind, fmt.Sprintf("%d: committed %d, end %d", p, c.At, end.Offset))
		}
	}
	if len(behind) > 0 {
		return out, fmt.Errorf("partitions not committed at their high watermark: %v", behind)
	}
	return out, nil
}

// grpRestartable is a broker that can be closed and started again on the
// same config, hence the same data dir.
type grpRestartable struct {
	cfg Config
	b   *Broker
}

// startGrpRestartable starts a broker with its data in a temp dir, the
// group coordinator's waits shortened, and the Kafka listener and the
// embedded etcd on free ports: fixed ones (the same after a restart, so
// clients reconnect) or, without fixedPorts, ports picked at each start.
// The broker is closed when the test ends.
func startGrpRestartable(t *testing.T, fixedPorts bool, mutate ...func(*Config)) *grpRestartable {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.LogDirs = []string{t.TempDir()}
	cfg.AdminListener = ""
	cfg.EtcdClientAddr, cfg.EtcdPeerAddr = "127.0.0.1:0", "127.0.0.1:0"
	if fixedPorts {
		cfg.Listeners = []string{fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", freePort(t))}
		cfg.EtcdClientAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		cfg.EtcdPeerAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	}
	fastGroups(&cfg)
	for _, m := range mutate {
		m(&cfg)
	}
	rb := &grpRestartable{cfg: cfg}
	rb.start(t)
	t.Cleanup(func() { rb.close(t) })
	return rb
}

// restart closes the broker and starts it again, returning how long the
// start took.
func (r *grpRestartable) restart(t *testing.T) time.Duration {
	t.Helper()
	r.close(t)
	return r.start(t)
}

func (r *grpRestartable) start(t *testing.T) time.Duration {
	t.Helper()
	began := time.Now()
	b, err := New(r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatalf("start broker on %s: %v", r.cfg.LogDirs[0], err)
	}
	r.b = b
	return time.Since(began)
}

func (r *grpRestartable) close(t *testing.T) {
	t.Helper()
	if r.b == nil {
		return
	}
	b := r.b
	r.b = nil
	if err := b.Close(); err != nil {
		t.Errorf("close broker: %v", err)
	}
}

// TestGroupConsumers: see the file comment. The four groups consume side
// by side on one broker, which then restarts; then each group resumes.
func TestGroupConsumers(t *testing.T) {
	t.Parallel()
	rb := startGrpRestartable(t, false)

	cases := []*grpCase{
		{name: "range", balancer: kgo.RangeBalancer(), commit: grpCommitSync},
		{name: "round-robin", balancer: kgo.RoundRobinBalancer(), commit: grpCommitMarks},
		{name: "sticky", balancer: kgo.StickyBalancer(), commit: grpCommitSync},
		{name: "cooperative-sticky", balancer: kgo.CooperativeStickyBalancer(), commit: grpCommitMarks},
	}
	for _, c := range cases {
		c.topic, c.group = "consume-"+c.name, "group-"+c.name
	}

	before := rb.b
	t.Run("consume", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.consume(t, before)
			})
		}
	})
	if t.Failed() {
		return
	}

	took := rb.restart(t)
	t.Logf("broker restarted on the same data dir in %s; now at %v", took.Round(time.Millisecond), rb.b.Addrs())
	after := rb.b
	t.Run("resume", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.resume(t, after)
			})
		}
	})
}

// consume runs the three members through the join and leave while the
// records are produced, until every record is processed and committed.
func (c *grpCase) consume(t *testing.T, b *Broker) {
	ctx := testContext(t, 3*time.Minute)
	adm := kadm.NewClient(newClient(t, b))
	grpCreateTopic(ctx, t, adm, c.topic, grpPartitions)
	prod := newClient(t, b)
	l := newGrpLedger()
	joined, left := make(chan struct{}), make(chan struct{})
	holds := map[int]chan struct{}{grpRecords / 3: joined, 2 * grpRecords / 3: left}
	produced := make(chan error, 1)
	go func() { produced <- grpProduce(ctx, prod, c.topic, l, grpRecords, true, holds) }()
	began := time.Now()

	processed := func(n int) func() error {
		return func() error {
			if _, unique, _ := l.counts(); unique < n {
				return fmt.Errorf("%d of %d records processed", unique, n)
			}
			return nil
		}
	}
	m1 := startGrpMember(t, b, c, l, "m1")
	waitFor(t, time.Minute, "m1 processes a quarter", processed(grpRecords/4))
	m2 := startGrpMember(t, b, c, l, "m2")
	m3 := startGrpMember(t, b, c, l, "m3")
	waitFor(t, time.Minute, "m2 and m3 join", func() error {
		if m2.assigned.Load() == 0 || m3.assigned.Load() == 0 {
			return errors.New("m2 or m3 has no partitions yet")
		}
		_, err := grpSettled(ctx, adm, c.group, c.topic, 3, grpPartitions)
		return err
	})
	_, atJoin, _ := l.counts()
	close(joined)
	waitFor(t, time.Minute, "0.6 of the records processed", processed(6*grpRecords/10))
	m1.stop()
	_, atLeave, _ := l.counts()
	close(left)

	select {
	case err := <-produced:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the producer did not finish")
	}
	waitFor(t, 90*time.Second, "every record processed and committed", func() error {
		if n, some := l.unprocessed(); n > 0 {
			return fmt.Errorf("%d records not processed yet, e.g. %v", n, some)
		}
		_, err := grpCommittedAtEnd(ctx, adm, c.topic, c.group)
		return err
	})
	m2.stop()
	m3.stop()

	// Leaving commits nothing backwards, and the group is empty now.
	ends, err := grpCommittedAtEnd(ctx, adm, c.topic, c.group)
	if err != nil {
		t.Fatalf("after the last members left: %v", err)
	}
	if d, err := grpDescribe(ctx, adm, c.group); err != nil || d.State != "Empty" {
		t.Errorf("group after the last members left: %s, err %v; want Empty", d.State, err)
	}
	var total int64
	for _, e := range ends {
		total += e
	}
	if total != grpRecords {
		t.Errorf("high watermarks add up to %d, want %d records", total, grpRecords)
	}
	for _, m := range []*grpMember{m1, m2, m3} {
		if m.processed.Load() == 0 {
			t.Errorf("%s processed nothing", m.name)
		}
	}
	c.ends = ends
	nProduced, unique, all := l.counts()
	t.Logf("%s, %s: %d produced, %d processed (%d more than once) in %s; m2 and m3 joined at %d, m1 left at %d; processed by m1/m2/m3: %d/%d/%d; failed commits %d/%d/%d",
		c.name, c.commit, nProduced, unique, all-unique, time.Since(began).Round(time.Millisecond), atJoin, atLeave,
		m1.processed.Load(), m2.processed.Load(), m3.processed.Load(),
		m1.commitErrs.Load(), m2.commitErrs.Load(), m3.commitErrs.Load())
}

// resume checks the group after the restart and has a new member consume
// what was produced since.
func (c *grpCase) resume(t *testing.T, b *Broker) {
	ctx := testContext(t, 2*time.Minute)
	adm := kadm.NewClient(newClient(t, b))
	var d kadm.DescribedGroup
	waitFor(t, 30*time.Second, "the group is back", func() error {
		var err error
		if d, err = grpDescribe(ctx, adm, c.group); err == nil && d.Err != nil {
			err = d.Err
		}
		return err
	})
	if d.State != "Empty" || d.ProtocolType != "consumer" {
		t.Errorf("group after the restart: %s, protocol type %q; want Empty, consumer", d.State, d.ProtocolType)
	}
	if ends, err := grpCommittedAtEnd(ctx, adm, c.topic, c.group); err != nil {
		t.Fatalf("after the restart: %v", err)
	} else {
		for p, e := range c.ends {
			if ends[p] != e {
				t.Errorf("partition %d: high watermark %d after the restart, was %d", p, ends[p], e)
			}
		}
	}

	l := newGrpLedger()
	if err := grpProduce(ctx, newClient(t, b), c.topic, l, grpResumeRecords, false, nil); err != nil {
		t.Fatal(err)
	}
	m := startGrpMember(t, b, c, l, "resumed")
	waitFor(t, time.Minute, "the new records processed and committed", func() error {
		if n, some := l.unprocessed(); n > 0 {
			return fmt.Errorf("%d records not processed yet, e.g. %v", n, some)
		}
		_, err := grpCommittedAtEnd(ctx, adm, c.topic, c.group)
		return err
	})
	m.stop()

	l.mu.Lock()
	defer l.mu.Unlock()
	news := map[int64]bool{}
	for _, pos := range l.mu.produced {
		news[pos] = true
	}
	for pos := range l.mu.processed {
		if !news[pos] {
			t.Errorf("processed %d/%d, which was there before the restart (committed up to %d)", pos>>40, pos&(1<<40-1), c.ends[int32(pos>>40)])
		}
	}
	for p, first := range l.mu.first {
		if first != c.ends[p] {
			t.Errorf("partition %d: the new member started at offset %d, want the committed %d", p, first, c.ends[p])
		}
	}
	if len(l.mu.first) != grpPartitions {
		t.Errorf("new records in %d partitions, want all %d", len(l.mu.first), grpPartitions)
	}
	t.Logf("%s: resumed at the committed offsets, %d new records processed (%d in all)",
		c.name, len(l.mu.processed), l.mu.total)
}

// TestGroupLiveBrokerRestart restarts the broker (same data dir, same
// ports) while three members consume and commit. The new coordinator
// reloads the Stable group, members and assignment included, from
// __consumer_offsets, and the members carry on through it: every record
// is processed at least once and the committed offsets end at the high
// watermarks. Whether the group rebalanced across the restart is logged.
func TestGroupLiveBrokerRestart(t *testing.T) {
	t.Parallel()
	const records = 12_000
	rb := startGrpRestartable(t, true)
	b := rb.b // its Addrs stay valid: the restarted broker binds the same port

	c := &grpCase{name: "live", balancer: kgo.CooperativeStickyBalancer(), commit: grpCommitSync,
		topic: "live-restart", group: "live-restart-group", brokerDowntime: true}
	ctx := testContext(t, 3*time.Minute)
	adm := kadm.NewClient(newClient(t, b))
	grpCreateTopic(ctx, t, adm, c.topic, grpPartitions)
	l := newGrpLedger()
	restarted := make(chan struct{})
	prod := newClient(t, b)
	produced := make(chan error, 1)
	go func() {
		produced <- grpProduce(ctx, prod, c.topic, l, records, true, map[int]chan struct{}{records / 2: restarted})
	}()
	members := []*grpMember{startGrpMember(t, b, c, l, "m1"), startGrpMember(t, b, c, l, "m2"), startGrpMember(t, b, c, l, "m3")}
	var before kadm.DescribedGroup
	waitFor(t, time.Minute, "three members settle", func() error {
		var err error
		before, err = grpSettled(ctx, adm, c.group, c.topic, 3, grpPartitions)
		return err
	})
	waitFor(t, time.Minute, "a third processed", func() error {
		if _, unique, _ := l.counts(); unique < records/3 {
			return fmt.Errorf("%d of %d processed", unique, records/3)
		}
		return nil
	})
	gen := map[string]int32{}
	for _, m := range members {
		_, gen[m.name] = m.cl.GroupMetadata()
	}

	_, atRestart, _ := l.counts()
	took := rb.restart(t)
	close(restarted)

	select {
	case err := <-produced:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the producer did not finish")
	}
	waitFor(t, 90*time.Second, "every record processed and committed", func() error {
		if n, some := l.unprocessed(); n > 0 {
			return fmt.Errorf("%d records not processed yet, e.g. %v", n, some)
		}
		_, err := grpCommittedAtEnd(ctx, adm, c.topic, c.group)
		return err
	})
	after, err := grpSettled(ctx, adm, c.group, c.topic, 3, grpPartitions)
	if err != nil {
		t.Errorf("group after the restart: %v", err)
	}
	sameIDs := len(after.Members) == len(before.Members)
	for i := range after.Members {
		sameIDs = sameIDs && i < len(before.Members) && after.Members[i].MemberID == before.Members[i].MemberID
	}
	var gens []string
	var fetchErrs int64
	for _, m := range members {
		_, g := m.cl.GroupMetadata()
		gens = append(gens, fmt.Sprintf("%s %d->%d", m.name, gen[m.name], g))
		fetchErrs += m.fetchErrs.Load()
		m.stop()
	}
	if _, err := grpCommittedAtEnd(ctx, adm, c.topic, c.group); err != nil {
		t.Errorf("after the members left: %v", err)
	}
	_, unique, all := l.counts()
	t.Logf("restarted the broker after %d of %d records in %s; %d processed (%d more than once); same member ids after: %v; generations %v; %d fetch errors surfaced",
		atRestart, records, took.Round(time.Millisecond), unique, all-unique, sameIDs, gens, fetchErrs)
}
