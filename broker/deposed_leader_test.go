package broker

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gregor-io/gregor/protocol"
)

// TestDeposedLeaderAcks: a leadership that moves while an acks=all produce
// is being appended never gets those records acknowledged by the former
// leader. The move is applied at the two points of the produce where the
// metadata watch can land: before the append (nothing is appended, under
// no epoch), and after it, when the new state's ISR no longer holds the
// former leader and its followers never fetched the records (the answer is
// NOT_LEADER_OR_FOLLOWER, not an acknowledgement of records the new leader
// lacks).
func TestDeposedLeaderAcks(t *testing.T) {
	t.Parallel()
	for _, appended := range []bool{false, true} {
		t.Run(fmt.Sprint("appended=", appended), func(t *testing.T) {
			t.Parallel()
			bs := startCluster(t, 2)
			w1 := dialWire(t, bs[0])
			rt := w1.createTopicResultAssigned("deposed", [][]int32{{1, 2}}, nil)
			checkCode(t, "create", rt.ErrorCode, protocol.None)
			waitISR(t, bs[0], "deposed", 0, "[1 2]")
			rp := w1.producePartition(-1, "deposed", 0, buildBatch(t, plainHeader(), "acked", 5))
			checkCode(t, "acks=all with both in sync", rp.ErrorCode, protocol.None)

			// Broker 2 stops fetching, so that nothing new is replicated.
			bs[1].pauseFetchers.Store(true)
			waitFor(t, 20*time.Second, "broker 2's fetches done", func() error {
				if n := bs[1].fetchesInFlight.Load(); n != 0 {
					return fmt.Errorf("%d in flight", n)
				}
				return nil
			})
			p := bs[0].parts.Load().byName["deposed"][0]
			before := p.log().LogEndOffset()
			var moved atomic.Bool
			race := func(rp *partition, after bool) {
				if rp != p || after != appended || !moved.CompareAndSwap(false, true) {
					return
				}
				// What the metadata watch applies when a controller that
				// sees only broker 2 elects it: a new epoch, an ISR of 2.
				st := *p.state.Load()
				st.Leader, st.LeaderEpoch, st.ISR = 2, st.LeaderEpoch+1, []int32{2}
				st.PartitionEpoch++
				st.Replicas = slices.Clone(st.Replicas)
				p.state.Store(&st)
				if err := bs[0].applyRole(p, &st); err != nil {
					t.Errorf("apply the new role: %v", err)
				}
			}
			bs[0].produceRace.Store(&race)
			rp = w1.producePartition(-1, "deposed", 0, buildBatch(t, plainHeader(), "deposed", 3))
			bs[0].produceRace.Store(nil)
			if !moved.Load() {
				t.Fatal("the produce did not reach the point where the leadership moves")
			}
			checkCode(t, "acks=all to the deposed leader", rp.ErrorCode, protocol.NotLeaderOrFollower)
			end := p.log().LogEndOffset()
			switch {
			case !appended && end != before:
				t.Fatalf("log end %d after a produce refused before its append, want %d: records went in under an epoch this broker does not lead", end, before)
			case appended && end != before+3:
				t.Fatalf("log end %d, want %d (the records appended before the move)", end, before+3)
			}
			if hw := p.log().HighWatermark(); hw > before {
				t.Fatalf("high watermark %d passed records broker 2 never fetched (log end then %d)", hw, before)
			}
		})
	}
}
