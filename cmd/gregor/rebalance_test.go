package main

import (
	"strings"
	"testing"
)

// testRebalance runs against TestCLI's single in-process broker: there,
// every plan is empty (one broker holds everything), so it checks the plan
// output, the refusals of bad input and of brokers that do not exist. The
// moves themselves need a cluster and the reassignment APIs: they are
// checked by hand against Apache Kafka (see the commit that added this).
func testRebalance(t *testing.T, c *cli) {
	const topic = "cli-rebalance"
	c.run("topic", "create", topic, "-p", "3")

	if got, want := c.run("cluster", "rebalance"), "The replicas are balanced: nothing to move.\n"; got != want {
		t.Errorf("cluster rebalance = %q, want %q", got, want)
	}
	var plan movePlan
	c.runJSON(&plan, "cluster", "rebalance", "--topics", topic)
	if len(plan.Moves) != 0 || plan.Executed || plan.Decommission != nil || len(plan.Brokers) != 1 {
		t.Fatalf("cluster rebalance --json = %+v, want no moves, not executed, one broker", plan)
	}
	if b := plan.Brokers[0]; b.ID != 1 || b.Replicas < 3 || b.ReplicasAfter != b.Replicas || b.LeadersAfter != b.Leaders {
		t.Errorf("broker load %+v, want broker 1 with the 3 replicas of %s or more, unchanged", b, topic)
	}
	// Nothing to move: --execute has nothing to do either.
	c.runJSON(&plan, "cluster", "rebalance", "--topics", topic, "--execute", "--throttle", "1MB")
	if len(plan.Moves) != 0 || plan.Executed {
		t.Errorf("cluster rebalance --execute --json = %+v, want no moves", plan)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "rebalance", "--topics", "cli-rebalance-none"}, "topic cli-rebalance-none does not exist"},
		{[]string{"cluster", "rebalance", "--execute", "--throttle", "fast"}, `--throttle "fast": want a rate in bytes/s`},
		{[]string{"cluster", "rebalance", "--execute", "--throttle", "0"}, `--throttle "0": want a rate in bytes/s above 0`},
		{[]string{"cluster", "rebalance", "--execute", "--batch", "-1"}, "--batch -1: want 0 (all at once) or more"},
		{[]string{"cluster", "rebalance", "--throttle", "1MB"}, "--throttle and --batch apply to --execute only"},
		{[]string{"cluster", "rebalance", "extra"}, "unknown command"},
		{[]string{"cluster", "decommission", "9"}, "broker 9 is not in the cluster and holds no replicas"},
		{[]string{"cluster", "decommission", "x"}, `broker "x": want a broker id`},
		{[]string{"cluster", "decommission"}, "accepts 1 arg(s)"},
		// The only broker cannot be emptied.
		{[]string{"cluster", "decommission", "1"}, "no broker would remain"},
		{[]string{"cluster", "reassignments", "--topic", topic}, "--topic and --partition choose what --cancel cancels"},
		{[]string{"cluster", "reassignments", "--cancel", "--partition", "1"}, "--partition: give the --topic too"},
		{[]string{"cluster", "reassignments", "--cancel", "--topic", topic, "--partition", "x"}, `--partition: partition "x"`},
	} {
		if _, err := c.fail("", tt.args...); !strings.Contains(err.Error(), tt.want) {
			t.Errorf("gregor %s: %v, want an error saying %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

func TestParseByteRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{
		"1": 1, "50000000": 50000000, "50MB": 50e6, "48MiB": 48 << 20, "2 GiB": 2 << 30, "10KB": 10e3, "3KiB": 3072, "7B": 7, "1GB": 1e9,
	} {
		if got, err := parseByteRate(in); err != nil || got != want {
			t.Errorf("parseByteRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "MB", "1.5MB", "10TB", "9999999999999GiB"} {
		if got, err := parseByteRate(in); err == nil {
			t.Errorf("parseByteRate(%q) = %d, want an error", in, got)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	for in, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB", 2 << 40: "2.0 TiB", 5000 << 40: "5000.0 TiB",
	} {
		if got := formatBytes(in); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

// The throttled replicas are set as Kafka's reassignment tool sets them:
// on the leader side every current replica, on the follower side the new
// ones only; reorders copy nothing and throttle no broker.
func TestThrottledReplicas(t *testing.T) {
	t.Parallel()
	moves := []partitionMove{
		{Topic: "a", Partition: 0, From: []int32{1, 2, 3}, To: []int32{4, 2, 3}},
		{Topic: "a", Partition: 5, From: []int32{2, 3}, To: []int32{5, 6}},
		{Topic: "b", Partition: 1, From: []int32{1, 2}, To: []int32{2, 1}},
	}
	leader, follower := throttledReplicas(moves)
	if want := map[string]string{"a": "0:1,0:2,0:3,5:2,5:3", "b": "1:1,1:2"}; !equalMaps(leader, want) {
		t.Errorf("leader throttled replicas %v, want %v", leader, want)
	}
	if want := map[string]string{"a": "0:4,5:5,5:6"}; !equalMaps(follower, want) {
		t.Errorf("follower throttled replicas %v, want %v", follower, want)
	}
	if got, want := int32s(movingBrokers(moves)), "1,2,3,4,5,6"; got != want {
		t.Errorf("moving brokers %s, want %s", got, want)
	}
	if got := movingBrokers(moves[2:]); len(got) != 0 {
		t.Errorf("moving brokers of a reorder: %v, want none", got)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestLoads(t *testing.T) {
	t.Parallel()
	brokers := brokersOf(3, 3)
	parts := []planPartition{
		{Topic: "t", Partition: 0, Replicas: []int32{3, 1}},
		{Topic: "t", Partition: 1, Replicas: []int32{1, 2}},
	}
	moves := []partitionMove{{Topic: "t", Partition: 0, From: []int32{3, 1}, To: []int32{2, 1}}}
	got := loads(brokers, parts, moves)
	want := []brokerLoad{
		{ID: 1, Replicas: 2, ReplicasAfter: 2, Leaders: 1, LeadersAfter: 1},
		{ID: 2, Replicas: 1, ReplicasAfter: 2, Leaders: 0, LeadersAfter: 1},
		{ID: 3, Leaving: true, Replicas: 1, ReplicasAfter: 0, Leaders: 1, LeadersAfter: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("loads = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("load of broker %d = %+v, want %+v", want[i].ID, got[i], want[i])
		}
	}
}
