package broker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ElectLeaders on three brokers: a partition whose preferred replica does
// not lead gets it as leader by a preferred election; a second election is
// not needed; an election over every partition leaves out the partitions
// that need none; an unclean election of a partition with a live leader is
// not needed.
func TestElectLeaders(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3, func(c *Config) { c.AutoLeaderRebalanceEnable = false })
	w := dialWire(t, bs[0])
	if rt := w.createTopicResultAssigned("el", [][]int32{{1, 2, 3}, {2, 3, 1}}, nil); rt.ErrorCode != 0 {
		t.Fatalf("create: %s", kerr.ErrorForCode(rt.ErrorCode))
	}
	ctx := testContext(t, 2*time.Minute)
	cl := newClient(t, bs[0])
	adm := kadm.NewClient(cl)
	waitMoved(t, bs, "el", 0, []int32{1, 2, 3})
	// Reorder the replicas: 2 becomes preferred while 1 still leads.
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("el", 0, []int32{2, 1, 3})
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res.Error() != nil {
		t.Fatalf("AlterPartitionAssignments: %v %v", err, res.Error())
	}
	waitMoved(t, bs, "el", 0, []int32{2, 1, 3})
	if st, _ := partitionState(bs[1], "el", 0); st.Leader != 1 {
		t.Fatalf("after the reorder broker %d leads, want 1 still", st.Leader)
	}

	elect := func(typ kadm.ElectLeadersHow, set kadm.TopicsSet) map[int32]error {
		t.Helper()
		res, err := adm.ElectLeaders(ctx, typ, set)
		if err != nil {
			t.Fatalf("ElectLeaders: %v", err)
		}
		out := map[int32]error{}
		for _, r := range res["el"] {
			out[r.Partition] = r.Err
		}
		return out
	}
	one := kadm.TopicsSet{"el": {0: {}}}
	if got := elect(kadm.ElectPreferredReplica, one); len(got) != 1 || got[0] != nil {
		t.Fatalf("preferred election: %v, want partition 0 elected", got)
	}
	for _, b := range bs {
		waitFor(t, 20*time.Second, fmt.Sprintf("broker %d sees broker 2 lead", b.cfg.NodeID), func() error {
			if st, _ := partitionState(b, "el", 0); st.Leader != 2 {
				return fmt.Errorf("leader %d", st.Leader)
			}
			return nil
		})
	}
	if got := elect(kadm.ElectPreferredReplica, one); !errors.Is(got[0], kerr.ElectionNotNeeded) {
		t.Fatalf("second preferred election: %v, want ELECTION_NOT_NEEDED", got)
	}
	if got := elect(kadm.ElectPreferredReplica, nil); len(got) != 0 {
		t.Fatalf("election of every partition: %v, want none listed (none needed)", got)
	}
	if got := elect(kadm.ElectLiveReplica, one); !errors.Is(got[0], kerr.ElectionNotNeeded) {
		t.Fatalf("unclean election with a live leader: %v, want ELECTION_NOT_NEEDED", got)
	}
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"nope": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["nope"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
	}
}
