package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The execution of a plan runs here against fakeCluster, a simulation of
// the reassignment APIs with Kafka's semantics, so that the order of its
// steps (throttle, submit, wait, elect, unthrottle), batches, failures and
// interruptions are checked without a cluster. The same code runs against
// a real one in the manual check of the commit that added these commands.

type fakePart struct {
	replicas []int32 // the assignment; during a move, target then removing
	leader   int32
	old      []int32 // during a move, the replicas before it
	target   []int32 // during a move, the replicas after it
	step     int     // steps the move has made
}

// fakeCluster holds partitions by name; the move of partition p takes
// steps + p%3 calls of ListPartitionReassignments to complete (so that
// moves end at different times), and every partition's data is size
// bytes, copied in equal parts per step.
type fakeCluster struct {
	steps int
	size  int64

	mu          sync.Mutex
	parts       map[string]*fakePart // by "topic-partition"
	refuse      map[string]bool      // moves AlterPartitionAssignments refuses
	revert      map[string]bool      // moves that end with their old replicas
	brokerCfg   map[int32]map[string]string
	topicCfg    map[string]map[string]string
	log         []string // what was asked, in order
	maxInFlight int
	onSubmit    func()
}

func newFakeCluster(steps int, size int64, parts []planPartition) *fakeCluster {
	f := &fakeCluster{
		steps: steps, size: size, parts: map[string]*fakePart{},
		refuse: map[string]bool{}, revert: map[string]bool{},
		brokerCfg: map[int32]map[string]string{}, topicCfg: map[string]map[string]string{},
	}
	for _, p := range parts {
		f.parts[fmt.Sprintf("%s-%d", p.Topic, p.Partition)] = &fakePart{replicas: slices.Clone(p.Replicas), leader: p.Replicas[0]}
	}
	return f
}

// split parses "topic-partition".
func split(k string) (string, int32) {
	i := strings.LastIndexByte(k, '-')
	p, _ := strconv.Atoi(k[i+1:])
	return k[:i], int32(p)
}

func (f *fakeCluster) stepsOf(part int32) int { return f.steps + int(part)%3 }

func (f *fakeCluster) inFlight() int {
	n := 0
	for _, p := range f.parts {
		if p.target != nil {
			n++
		}
	}
	return n
}

// finish ends the move of p.
func (f *fakeCluster) finish(k string, p *fakePart) {
	p.replicas = p.target
	if f.revert[k] {
		p.replicas = p.old
	}
	if !slices.Contains(p.replicas, p.leader) {
		p.leader = p.replicas[0]
	}
	p.old, p.target, p.step = nil, nil, 0
}

func (f *fakeCluster) Metadata(_ context.Context, topics ...string) (kadm.Metadata, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	md := kadm.Metadata{Topics: kadm.TopicDetails{}}
	for k, p := range f.parts {
		t, part := split(k)
		if len(topics) > 0 && !slices.Contains(topics, t) {
			continue
		}
		td, ok := md.Topics[t]
		if !ok {
			td = kadm.TopicDetail{Topic: t, Partitions: kadm.PartitionDetails{}}
		}
		td.Partitions[part] = kadm.PartitionDetail{Topic: t, Partition: part, Leader: p.leader, Replicas: slices.Clone(p.replicas)}
		md.Topics[t] = td
	}
	return md, nil
}

func (f *fakeCluster) DescribeAllLogDirs(_ context.Context, s kadm.TopicsSet) (kadm.DescribedAllLogDirs, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := kadm.DescribedAllLogDirs{}
	s.Each(func(t string, part int32) {
		p := f.parts[fmt.Sprintf("%s-%d", t, part)]
		for _, b := range p.replicas {
			size := f.size
			if p.target != nil && !slices.Contains(p.old, b) {
				size = f.size * int64(p.step) / int64(f.stepsOf(part))
			}
			if out[b] == nil {
				out[b] = kadm.DescribedLogDirs{"/data": {Broker: b, Dir: "/data", Topics: kadm.DescribedLogDirTopics{}}}
			}
			ts := out[b]["/data"].Topics
			if ts[t] == nil {
				ts[t] = map[int32]kadm.DescribedLogDirPartition{}
			}
			ts[t][part] = kadm.DescribedLogDirPartition{Broker: b, Dir: "/data", Topic: t, Partition: part, Size: size}
		}
	})
	return out, nil
}

//nolint:revive // the name is kadm's
func (f *fakeCluster) ApiVersions(context.Context) (kadm.BrokersApiVersions, error) {
	return nil, errors.New("not simulated")
}

func (f *fakeCluster) AlterPartitionAssignments(_ context.Context, req kadm.AlterPartitionAssignmentsReq) (kadm.AlterPartitionAssignmentsResponses, error) {
	f.mu.Lock()
	resp := kadm.AlterPartitionAssignmentsResponses{}
	var names []string
	for t, ps := range req {
		resp[t] = map[int32]kadm.AlterPartitionAssignmentsResponse{}
		for part, to := range ps {
			k := fmt.Sprintf("%s-%d", t, part)
			names = append(names, k)
			r := kadm.AlterPartitionAssignmentsResponse{Topic: t, Partition: part}
			p := f.parts[k]
			switch {
			case f.refuse[k]:
				r.Err = kerr.InvalidReplicaAssignment
			case to == nil: // cancel
				if p.target == nil {
					r.Err = kerr.NoReassignmentInProgress
					break
				}
				p.target = p.old
				f.finish(k, p)
			default:
				p.old, p.target = p.replicas, to
				p.replicas = slices.Clone(to)
				for _, b := range p.old {
					if !slices.Contains(to, b) {
						p.replicas = append(p.replicas, b)
					}
				}
				if slices.Equal(slices.Sorted(slices.Values(to)), slices.Sorted(slices.Values(p.old))) {
					f.finish(k, p) // a reorder copies nothing
				}
			}
			resp[t][part] = r
		}
	}
	slices.Sort(names)
	f.log = append(f.log, "submit "+strings.Join(names, ","))
	f.maxInFlight = max(f.maxInFlight, f.inFlight())
	hook := f.onSubmit
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	return resp, nil
}

func (f *fakeCluster) ListPartitionReassignments(_ context.Context, s kadm.TopicsSet) (kadm.ListPartitionReassignmentsResponses, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := kadm.ListPartitionReassignmentsResponses{}
	for _, k := range slices.Sorted(maps.Keys(f.parts)) {
		p := f.parts[k]
		if p.target == nil {
			continue
		}
		t, part := split(k)
		if p.step++; p.step >= f.stepsOf(part) {
			f.finish(k, p)
			continue
		}
		if _, ok := s[t][part]; !ok {
			continue
		}
		if resp[t] == nil {
			resp[t] = map[int32]kadm.ListPartitionReassignmentsResponse{}
		}
		r := kadm.ListPartitionReassignmentsResponse{Topic: t, Partition: part, Replicas: slices.Clone(p.replicas)}
		for _, b := range p.target {
			if !slices.Contains(p.old, b) {
				r.AddingReplicas = append(r.AddingReplicas, b)
			}
		}
		for _, b := range p.old {
			if !slices.Contains(p.target, b) {
				r.RemovingReplicas = append(r.RemovingReplicas, b)
			}
		}
		resp[t][part] = r
	}
	return resp, nil
}

func (f *fakeCluster) ElectLeaders(_ context.Context, _ kadm.ElectLeadersHow, s kadm.TopicsSet) (kadm.ElectLeadersResults, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := kadm.ElectLeadersResults{}
	var names []string
	s.Each(func(t string, part int32) {
		k := fmt.Sprintf("%s-%d", t, part)
		names = append(names, k)
		p := f.parts[k]
		r := kadm.ElectLeadersResult{Topic: t, Partition: part}
		if p.leader == p.replicas[0] {
			r.Err = kerr.ElectionNotNeeded
		}
		p.leader = p.replicas[0]
		if rs[t] == nil {
			rs[t] = map[int32]kadm.ElectLeadersResult{}
		}
		rs[t][part] = r
	})
	slices.Sort(names)
	f.log = append(f.log, "elect "+strings.Join(names, ","))
	return rs, nil
}

// alter applies cfg to m and describes it for the log.
func alter(m map[string]string, cfg []kadm.AlterConfig) string {
	var ops []string
	for _, c := range cfg {
		switch c.Op {
		case kadm.SetConfig:
			m[c.Name] = *c.Value
			ops = append(ops, "set "+c.Name)
		case kadm.DeleteConfig:
			delete(m, c.Name)
			ops = append(ops, "delete "+c.Name)
		}
	}
	return strings.Join(ops, ",")
}

func (f *fakeCluster) AlterBrokerConfigs(_ context.Context, cfg []kadm.AlterConfig, brokers ...int32) (kadm.AlterConfigsResponses, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var rs kadm.AlterConfigsResponses
	for _, b := range brokers {
		if f.brokerCfg[b] == nil {
			f.brokerCfg[b] = map[string]string{}
		}
		f.log = append(f.log, fmt.Sprintf("broker %d: %s", b, alter(f.brokerCfg[b], cfg)))
		rs = append(rs, kadm.AlterConfigsResponse{Name: strconv.Itoa(int(b))})
	}
	return rs, nil
}

func (f *fakeCluster) AlterTopicConfigs(_ context.Context, cfg []kadm.AlterConfig, topics ...string) (kadm.AlterConfigsResponses, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var rs kadm.AlterConfigsResponses
	for _, t := range topics {
		if f.topicCfg[t] == nil {
			f.topicCfg[t] = map[string]string{}
		}
		f.log = append(f.log, fmt.Sprintf("topic %s: %s", t, alter(f.topicCfg[t], cfg)))
		rs = append(rs, kadm.AlterConfigsResponse{Name: t})
	}
	return rs, nil
}

func describeConfigs(name string, m map[string]string, src kmsg.ConfigSource) kadm.ResourceConfig {
	rc := kadm.ResourceConfig{Name: name}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		rc.Configs = append(rc.Configs, kadm.Config{Key: k, Value: &v, Source: src})
	}
	return rc
}

func (f *fakeCluster) DescribeBrokerConfigs(_ context.Context, brokers ...int32) (kadm.ResourceConfigs, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var rcs kadm.ResourceConfigs
	for _, b := range brokers {
		rcs = append(rcs, describeConfigs(strconv.Itoa(int(b)), f.brokerCfg[b], kmsg.ConfigSourceDynamicBrokerConfig))
	}
	return rcs, nil
}

func (f *fakeCluster) DescribeTopicConfigs(_ context.Context, topics ...string) (kadm.ResourceConfigs, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var rcs kadm.ResourceConfigs
	for _, t := range topics {
		rcs = append(rcs, describeConfigs(t, f.topicCfg[t], kmsg.ConfigSourceDynamicTopicConfig))
	}
	return rcs, nil
}

// newTestExecution returns an execution against f that polls every
// millisecond, its output in out.
func newTestExecution(f *fakeCluster, rate int64, batch int) (*execution, *bytes.Buffer) {
	out := &bytes.Buffer{}
	p := &op{adm: f, timeout: time.Minute, close: func() {}, warn: out, warned: map[int32]bool{}}
	return &execution{op: p, out: out, rate: rate, batch: batch, interval: time.Millisecond}, out
}

// indexOf returns the index of the first log entry with prefix, or -1.
func indexOf(log []string, prefix string) int {
	return slices.IndexFunc(log, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

func lastIndexOf(log []string, prefix string) int {
	for i := len(log) - 1; i >= 0; i-- {
		if strings.HasPrefix(log[i], prefix) {
			return i
		}
	}
	return -1
}

// A throttled execution in batches: the throttle is set before the first
// move and removed after the election; no more than --batch moves are in
// flight; every partition ends as planned and led by its first replica.
func TestExecuteThrottledBatches(t *testing.T) {
	t.Parallel()
	parts := roundRobin("orders", 12, 3, 3, 0)
	moves, err := planMoves(brokersOf(4), parts)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeCluster(3, 1<<20, parts)
	var throttleAtSubmit map[string]string
	f.onSubmit = func() {
		if throttleAtSubmit == nil {
			throttleAtSubmit = maps.Clone(f.topicCfg["orders"])
		}
	}
	x, out := newTestExecution(f, 5e6, 2)
	failed, err := x.run(t.Context(), moves)
	if err != nil || len(failed) != 0 {
		t.Fatalf("run: failed %v, error %v\n%s", failed, err, out)
	}
	for _, m := range moves {
		p := f.parts[fmt.Sprintf("%s-%d", m.Topic, m.Partition)]
		if !slices.Equal(p.replicas, m.To) || p.leader != m.To[0] {
			t.Errorf("%s-%d: replicas %v led by %d, want %v led by %d", m.Topic, m.Partition, p.replicas, p.leader, m.To, m.To[0])
		}
	}
	if f.maxInFlight > 2 {
		t.Errorf("%d moves in flight at once, want 2 at most (--batch 2)", f.maxInFlight)
	}
	leader, follower := throttledReplicas(moves)
	if want := map[string]string{leaderThrottleReplicas: leader["orders"], followerThrottleReplica: follower["orders"]}; !equalMaps(throttleAtSubmit, want) {
		t.Errorf("topic configs at the first submission %v, want %v", throttleAtSubmit, want)
	}
	firstSet, firstSubmit := indexOf(f.log, "broker 1: set "+leaderThrottleRate), indexOf(f.log, "submit ")
	lastSubmit, elect := lastIndexOf(f.log, "submit "), indexOf(f.log, "elect ")
	unthrottle := indexOf(f.log, "broker 1: delete "+leaderThrottleRate)
	if firstSet < 0 || firstSet > firstSubmit || lastSubmit > elect || elect > unthrottle {
		t.Errorf("steps out of order (want throttle, submits, election, unthrottle):\n%s", strings.Join(f.log, "\n"))
	}
	for b, cfg := range f.brokerCfg {
		if len(cfg) != 0 {
			t.Errorf("broker %d keeps configs %v after the moves", b, cfg)
		}
	}
	if len(f.topicCfg["orders"]) != 0 {
		t.Errorf("topic orders keeps configs %v after the moves", f.topicCfg["orders"])
	}
	for _, want := range []string{"moves left (2 in flight)", "682.7 KiB left", "341.3 KiB left", "768.0 KiB left", "all moves done", "removed the throttle"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not show %q:\n%s", want, out)
		}
	}
}

// Moves the cluster refuses, or that end elsewhere (cancelled by someone
// else), are reported as failed, and only the others have their leaders
// elected.
func TestExecuteFailures(t *testing.T) {
	t.Parallel()
	parts := roundRobin("t", 4, 1, 1, 0)
	moves := []partitionMove{
		{Topic: "t", Partition: 0, From: []int32{1}, To: []int32{2}},
		{Topic: "t", Partition: 1, From: []int32{1}, To: []int32{2}},
		{Topic: "t", Partition: 2, From: []int32{1}, To: []int32{3}},
	}
	f := newFakeCluster(2, 100, parts)
	f.refuse["t-1"] = true
	f.revert["t-2"] = true
	x, out := newTestExecution(f, 0, 0)
	x.settle = 5 * time.Millisecond
	failed, err := x.run(t.Context(), moves)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if len(failed) != 2 || failed[0].Partition != 1 || failed[1].Partition != 2 ||
		!strings.Contains(failed[0].Error, "INVALID_REPLICA_ASSIGNMENT") || !strings.Contains(failed[1].Error, "ended with replicas 1, not 3") {
		t.Errorf("failed = %+v, want t-1 refused and t-2 ended on 1", failed)
	}
	if e := f.log[indexOf(f.log, "elect ")]; e != "elect t-0" {
		t.Errorf("election %q, want of t-0 alone", e)
	}
	if indexOf(f.log, "broker") >= 0 {
		t.Errorf("configs altered without --throttle:\n%s", strings.Join(f.log, "\n"))
	}
}

// Interrupted after the moves are submitted, the execution leaves them and
// the throttle in place and says how to see, cancel and unthrottle them.
func TestExecuteInterrupted(t *testing.T) {
	t.Parallel()
	parts := roundRobin("t", 3, 1, 1, 0)
	moves := []partitionMove{
		{Topic: "t", Partition: 0, From: []int32{1}, To: []int32{2}},
		{Topic: "t", Partition: 1, From: []int32{1}, To: []int32{2}},
		{Topic: "t", Partition: 2, From: []int32{1}, To: []int32{3}},
	}
	f := newFakeCluster(1000, 100, parts)
	ctx, cancel := context.WithCancel(t.Context())
	f.onSubmit = cancel
	x, out := newTestExecution(f, 1000, 2)
	_, err := x.run(ctx, moves)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run = %v, want context.Canceled", err)
	}
	x.leftBehind("Interrupted", len(moves))
	for _, want := range []string{
		"Interrupted: the cluster goes on with the 2 moves submitted; 1 not started.",
		"gregor cluster reassignments --cancel",
		"gregor cluster reassignments --clear-throttles",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if f.inFlight() != 2 || f.brokerCfg[1][leaderThrottleRate] != "1000" {
		t.Errorf("%d moves in flight, broker 1 configs %v; want the 2 moves and the throttle left", f.inFlight(), f.brokerCfg[1])
	}
	if indexOf(f.log, "elect") >= 0 {
		t.Errorf("leaders elected after an interruption:\n%s", strings.Join(f.log, "\n"))
	}
}

// A second execution of the same moves is refused while the first runs.
func TestExecuteRefusesMovesInFlight(t *testing.T) {
	t.Parallel()
	parts := roundRobin("t", 1, 1, 1, 0)
	moves := []partitionMove{{Topic: "t", Partition: 0, From: []int32{1}, To: []int32{2}}}
	f := newFakeCluster(1000, 100, parts)
	if _, err := f.AlterPartitionAssignments(t.Context(), kadm.AlterPartitionAssignmentsReq{"t": {0: {2}}}); err != nil {
		t.Fatal(err)
	}
	x, _ := newTestExecution(f, 0, 0)
	if _, err := x.run(t.Context(), moves); err == nil || !strings.Contains(err.Error(), "1 of these partitions is being moved already") {
		t.Errorf("run = %v, want a refusal naming the partition in flight", err)
	}
}

func TestClearAllThrottles(t *testing.T) {
	t.Parallel()
	f := newFakeCluster(1, 1, roundRobin("a", 1, 1, 1, 0))
	f.parts["b-0"] = &fakePart{replicas: []int32{1}, leader: 1}
	f.brokerCfg[1] = map[string]string{leaderThrottleRate: "10", followerThrottleRate: "10", "log.cleaner.threads": "2"}
	f.topicCfg["a"] = map[string]string{leaderThrottleReplicas: "0:1", "retention.ms": "5"}
	f.topicCfg["b"] = map[string]string{"retention.ms": "5"}
	p := &op{adm: fakeWithBrokers{f, []int32{1, 2}}, timeout: time.Minute}
	got, err := clearAllThrottles(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Brokers, []int32{1}) || !slices.Equal(got.Topics, []string{"a"}) {
		t.Errorf("removed from brokers %v and topics %v, want broker 1 and topic a", got.Brokers, got.Topics)
	}
	if want := map[string]string{"log.cleaner.threads": "2"}; !equalMaps(f.brokerCfg[1], want) {
		t.Errorf("broker 1 configs %v, want %v", f.brokerCfg[1], want)
	}
	if want := map[string]string{"retention.ms": "5"}; !equalMaps(f.topicCfg["a"], want) || !equalMaps(f.topicCfg["b"], want) {
		t.Errorf("topic configs %v, %v; want retention.ms alone", f.topicCfg["a"], f.topicCfg["b"])
	}
}

// fakeWithBrokers is fakeCluster whose metadata lists brokers.
type fakeWithBrokers struct {
	*fakeCluster
	brokers []int32
}

func (f fakeWithBrokers) Metadata(ctx context.Context, topics ...string) (kadm.Metadata, error) {
	md, err := f.fakeCluster.Metadata(ctx, topics...)
	for _, b := range f.brokers {
		md.Brokers = append(md.Brokers, kadm.BrokerDetail{NodeID: b})
	}
	return md, err
}
