package franzsuite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// The consumer group protocol of KIP-848: franz-go runs a group member with
// ConsumerGroupHeartbeat (the broker's coordinator assigns the partitions)
// when it is given kgo.ServerSideBalancer, its balancer is a sticky or range
// one (the default, cooperative sticky, is) and the broker serves
// ConsumerGroupHeartbeat v1 or later; otherwise it falls back to the classic
// protocol, silently. The scenario therefore checks the broker's versions
// first, and then that the group the members formed is of type consumer.

// cpMember is one member of the consumer protocol scenario: its client, the
// goroutine polling it, and what it holds and read.
type cpMember struct {
	*compat.Member
	cl   *kgo.Client
	stop context.CancelFunc
	done chan struct{}
}

// startCPMember starts a member of group on topic with the consumer
// protocol, polling in its own goroutine until leave or ctx ends. It starts
// from the group's commits, or the earliest offset, and commits only when
// told.
func (s *suite) startCPMember(ctx context.Context, t *compat.T, name, group, topic string) (*cpMember, error) {
	m := compat.NewMember(name)
	mc, err := s.client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { m.Assign(a[topic]...) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { m.Revoke(r[topic]...) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) { m.Revoke(l[topic]...) }),
	)
	if err != nil {
		return nil, err
	}
	pctx, stop := context.WithCancel(ctx)
	cm := &cpMember{Member: m, cl: mc, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(cm.done)
		for pctx.Err() == nil {
			mc.PollFetches(pctx).EachRecord(func(kr *kgo.Record) { m.Add(toCompat(kr)) })
		}
	}()
	return cm, nil
}

// leave stops the member's polling, commits the offsets after every record
// it read, leaves the group (a heartbeat at member epoch -1) and closes the
// client.
func (cm *cpMember) leave(ctx context.Context) error {
	cm.stop()
	<-cm.done
	defer cm.cl.Close()
	if err := cm.cl.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("member %s: commit: %w", cm.Name, err)
	}
	if err := cm.cl.LeaveGroupContext(ctx); err != nil {
		return fmt.Errorf("member %s: leave: %w", cm.Name, err)
	}
	return nil
}

// close ends the member without committing, for the scenario's clean-up.
func (cm *cpMember) close() {
	cm.stop()
	<-cm.done
	cm.cl.Close()
}

// consumerProtocolGroup: the broker must serve ConsumerGroupHeartbeat v1+.
// Two members with kgo.ServerSideBalancer join one group on a 6-partition
// topic and are given 3 partitions each (Kafka's uniform assignor), none
// twice; ListGroups filtered by type consumer lists the group as consumer,
// and ConsumerGroupDescribe shows it Stable, assignor uniform, with the two
// members holding what they say they hold. 300 records are produced only
// then: each member reads exactly those of its own partitions. Member a
// commits and leaves; b is given all 6 partitions and reads the next 300,
// on a's partitions from a's commits (nothing read twice). b commits and
// leaves (the group is Empty, its offsets at 100 per partition); a new
// member resumes exactly there and reads the 120 records produced since.
func (s *suite) consumerProtocolGroup(ctx context.Context, t *compat.T) (string, error) {
	const partitions = 6
	topic, group := t.Name(""), t.Name("g")
	all := []int32{0, 1, 2, 3, 4, 5}
	cl, err := s.producer(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	vctx, cancel := t.Step(ctx, "ApiVersions: ConsumerGroupHeartbeat")
	defer cancel()
	vs, err := adm.ApiVersions(vctx)
	if err != nil {
		return "", fmt.Errorf("api versions: %w", err)
	}
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			return "", fmt.Errorf("api versions of broker %d: %w", v.NodeID, v.Err)
		}
		if maxV, ok := v.KeyMaxVersion(int16(kmsg.ConsumerGroupHeartbeat)); !ok || maxV < 1 {
			return "", fmt.Errorf("broker %d does not serve ConsumerGroupHeartbeat v1+ (served: %t, max v%d); franz-go would fall back to the classic protocol", v.NodeID, ok, maxV)
		}
	}

	sctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(sctx, adm, topic, partitions, nil); err != nil {
		return "", err
	}

	var members []*cpMember
	defer func() {
		for _, m := range members {
			m.close()
		}
	}()
	for _, name := range []string{"a", "b"} {
		m, err := s.startCPMember(ctx, t, name, group, topic)
		if err != nil {
			return "", err
		}
		members = append(members, m)
	}
	a, b := members[0], members[1]

	jctx, cancel := t.Step(ctx, "wait for the broker to split the 6 partitions")
	defer cancel()
	split, err := compat.WaitSplit(jctx, partitions, a.Member, b.Member)
	if err != nil {
		return "", err
	}
	// Kafka's default server-side assignor, uniform, balances the partitions.
	if len(split[0]) != 3 || len(split[1]) != 3 {
		return "", fmt.Errorf("members hold %v and %v, want 3 partitions each", split[0], split[1])
	}

	lctx, cancel := t.Step(ctx, "list groups of type consumer")
	defer cancel()
	listed, err := adm.ListGroupsByType(lctx, []string{"consumer"})
	if err != nil {
		return "", fmt.Errorf("list groups of type consumer: %w", err)
	}
	if lg, ok := listed[group]; !ok || lg.GroupType != "consumer" {
		unfiltered, _ := adm.ListGroups(lctx)
		return "", fmt.Errorf("list groups of type consumer: %s missing or not consumer (%+v); unfiltered it is %+v", group, lg, unfiltered[group])
	}

	dctx, cancel := t.Step(ctx, "describe the group (ConsumerGroupDescribe)")
	defer cancel()
	want := map[string][]int32{"a": split[0], "b": split[1]}
	d, err := waitDescribed(dctx, adm, group, "Stable, a and b holding "+fmt.Sprint(want), func(d kadm.DescribedConsumerGroup) bool {
		return d.State == "Stable" && maps.EqualFunc(cpHeld(d, topic, a.cl, b.cl), want, slices.Equal)
	})
	if err != nil {
		return "", err
	}
	if d.AssignorName != "uniform" {
		return "", fmt.Errorf("described assignor %q, want uniform", d.AssignorName)
	}
	for _, m := range d.Members {
		if !maps.EqualFunc(m.Assignment, m.TargetAssignment, maps.Equal) {
			return "", fmt.Errorf("described member %s: assignment %v, target %v", m.MemberID, m.Assignment, m.TargetAssignment)
		}
	}

	first := compat.Generate(1100, 300, partitions, compat.BaseTime())
	pctx, cancel := t.Step(ctx, "produce 300 records")
	defer cancel()
	if err := produce(pctx, cl, topic, first); err != nil {
		return "", err
	}
	if err := compat.CheckAcked(first, 0); err != nil {
		return "", err
	}
	rctx, cancel := t.Step(ctx, "members read 300")
	defer cancel()
	if err := compat.WaitRead(rctx, len(first), a.Member, b.Member); err != nil {
		return "", err
	}
	readSplit, err := compat.CheckSplitRead(first, split, a.Member, b.Member)
	if err != nil {
		return "", err
	}

	actx, cancel := t.Step(ctx, "a commits and leaves")
	defer cancel()
	if err := a.leave(actx); err != nil {
		return "", err
	}
	members = members[1:]
	if err := checkCommitted(actx, adm, group, topic, split[0], 50); err != nil {
		return "", fmt.Errorf("after a's commit: %w", err)
	}
	bctx, cancel := t.Step(ctx, "b is given all 6 partitions")
	defer cancel()
	if err := compat.Poll(bctx, 100*time.Millisecond, func(context.Context) (bool, string, error) {
		return slices.Equal(b.Assigned(), all), fmt.Sprintf("b holds %v", b.Assigned()), nil
	}); err != nil {
		return "", err
	}
	bRead := len(b.Read())
	second := compat.Generate(1101, 300, partitions, compat.BaseTime())
	p2ctx, cancel := t.Step(ctx, "produce 300 more")
	defer cancel()
	if err := produce(p2ctx, cl, topic, second); err != nil {
		return "", err
	}
	if err := compat.CheckAcked(second, 50); err != nil {
		return "", err
	}
	r2ctx, cancel := t.Step(ctx, "b reads the 300")
	defer cancel()
	if err := compat.WaitRead(r2ctx, bRead+len(second), b.Member); err != nil {
		return "", err
	}
	var wantB []compat.Record
	for _, r := range first {
		if slices.Contains(split[1], r.Partition) {
			wantB = append(wantB, r)
		}
	}
	wantB = append(wantB, second...)
	if err := compat.Compare(wantB, b.Read()); err != nil {
		return "", fmt.Errorf("b after a left (a's partitions from a's commits): %w", err)
	}

	b2ctx, cancel := t.Step(ctx, "b commits and leaves")
	defer cancel()
	if err := b.leave(b2ctx); err != nil {
		return "", err
	}
	members = nil
	if err := checkCommitted(b2ctx, adm, group, topic, all, 100); err != nil {
		return "", fmt.Errorf("after b's commit: %w", err)
	}
	if _, err := waitDescribed(b2ctx, adm, group, "Empty with no members", func(d kadm.DescribedConsumerGroup) bool {
		return d.State == "Empty" && len(d.Members) == 0
	}); err != nil {
		return "", err
	}

	third := compat.Generate(1102, 120, partitions, compat.BaseTime())
	p3ctx, cancel := t.Step(ctx, "produce 120 more")
	defer cancel()
	if err := produce(p3ctx, cl, topic, third); err != nil {
		return "", err
	}
	if err := compat.CheckAcked(third, 100); err != nil {
		return "", err
	}
	c, err := s.startCPMember(ctx, t, "c", group, topic)
	if err != nil {
		return "", err
	}
	members = []*cpMember{c}
	cctx, cancel := t.Step(ctx, "c joins and resumes")
	defer cancel()
	if err := compat.WaitRead(cctx, len(third), c.Member); err != nil {
		return "", err
	}
	if err := compat.Compare(third, c.Read()); err != nil {
		return "", fmt.Errorf("c (should resume at offset 100 of every partition): %w", err)
	}
	return fmt.Sprintf("group type consumer, assignor uniform: %s; a committed and left, b got all 6 and read the next 300 from the commits; b committed 100 per partition and left (Empty); c resumed there and read 120",
		readSplit), nil
}

// cpHeld maps the described members of group that are the given clients
// (found by member id, a for the first, b for the second) to the partitions
// of topic the broker says they hold.
func cpHeld(d kadm.DescribedConsumerGroup, topic string, a, b *kgo.Client) map[string][]int32 {
	ids := make(map[string]string)
	for name, cl := range map[string]*kgo.Client{"a": a, "b": b} {
		if id, _ := cl.GroupMetadata(); id != "" {
			ids[id] = name
		}
	}
	held := make(map[string][]int32)
	for _, m := range d.Members {
		name, ok := ids[m.MemberID]
		if !ok {
			name = "unknown member " + m.MemberID
		}
		held[name] = slices.Sorted(maps.Keys(m.Assignment[topic]))
	}
	return held
}

// waitDescribed describes group with ConsumerGroupDescribe until cond holds
// or ctx ends; the error shows the last description.
func waitDescribed(ctx context.Context, adm *kadm.Client, group, what string, cond func(kadm.DescribedConsumerGroup) bool) (kadm.DescribedConsumerGroup, error) {
	var last kadm.DescribedConsumerGroup
	err := compat.Poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		ds, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			return false, fmt.Sprintf("describe consumer groups: %v", err), nil
		}
		last = ds[group]
		if last.Err != nil {
			return false, fmt.Sprintf("describe %s: %v", group, last.Err), nil
		}
		members := make(map[string][]string)
		for _, m := range last.Members {
			for _, tp := range m.Assignment.Sorted() {
				members[m.MemberID] = append(members[m.MemberID], fmt.Sprintf("%s%v", tp.Topic, tp.Partitions))
			}
		}
		return cond(last), fmt.Sprintf("group %s is %s (assignor %q), members %v; want %s", group, last.State, last.AssignorName, members, what), nil
	})
	return last, err
}

// checkCommitted checks that group's committed offset is at on each of the
// partitions ps of topic.
func checkCommitted(ctx context.Context, adm *kadm.Client, group, topic string, ps []int32, at int64) error {
	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("fetch offsets: %w", err)
	}
	for _, p := range ps {
		o, ok := fetched.Lookup(topic, p)
		if !ok || o.Err != nil || o.At != at {
			return fmt.Errorf("committed offset of %s/%d: %+v (found %t), want %d", topic, p, o, ok, at)
		}
	}
	return nil
}
