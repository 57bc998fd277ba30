package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// nemesis is one kind of fault. inject starts it and returns what it did
// and the heal that ends it; the cycle holds the fault for its time
// (hold, when longer than the harness's fault time) and then heals it.
type nemesis struct {
	name string
	// network nemeses need the brokers' own network, mounts ones a file
	// system per broker (both root only).
	network, mounts bool
	// etcd nemeses need the etcd members as processes of their own
	// (-etcd).
	etcd bool
	// fuse nemeses need each broker's data dir on a lazyfs (root,
	// /dev/fuse and -lazyfs; any network).
	fuse   bool
	doc    string
	inject func(ctx context.Context, h *harness, n int) (detail string, heal func(context.Context) error, err error)
}

// nemeses are all the harness knows, in the order a run goes round them.
var nemeses = []nemesis{
	{name: "kill-leader", doc: "SIGKILL of a random partition's leader; restarted with its data at the heal",
		inject: func(ctx context.Context, h *harness, _ int) (string, func(context.Context) error, error) {
			v, err := h.settled(ctx)
			if err != nil {
				return "", nil, err
			}
			return h.kill(ctx, v.Parts[h.rng.Int32N(h.o.partitions)].Leader, "leader")
		}},
	{name: "kill-controller", doc: "SIGKILL of the controller; restarted at the heal",
		inject: func(ctx context.Context, h *harness, _ int) (string, func(context.Context) error, error) {
			v, err := h.settled(ctx)
			if err != nil {
				return "", nil, err
			}
			return h.kill(ctx, v.Controller, "controller")
		}},
	{name: "kill-random", doc: "SIGKILL of a random broker; restarted at the heal",
		inject: func(ctx context.Context, h *harness, _ int) (string, func(context.Context) error, error) {
			return h.kill(ctx, h.c.Brokers[h.rng.IntN(len(h.c.Brokers))].ID, "random broker")
		}},
	{name: "kill-etcd", etcd: true, doc: "SIGKILL of an etcd member (odd cycles the raft leader, even cycles a follower), the brokers untouched; restarted with its data at the heal",
		inject: func(ctx context.Context, h *harness, n int) (string, func(context.Context) error, error) {
			leader, err := h.etcdLeader(ctx)
			if err != nil {
				return "", nil, err
			}
			m, role := leader, "raft leader"
			if n%2 == 0 {
				var others []*lab.Member
				for _, o := range h.c.Members {
					if o != leader {
						others = append(others, o)
					}
				}
				m, role = others[h.rng.IntN(len(others))], "follower"
			}
			if _, err := h.c.KillMember(ctx, m); err != nil {
				return "", nil, err
			}
			return fmt.Sprintf("kill -9 etcd member %d, a %s", m.ID, role), func(context.Context) error {
				return h.c.StartMember(m)
			}, nil
		}},
	{name: "pause-leader", doc: "SIGSTOP of a random partition's leader for 1.5 session timeouts (at least the fault time), then SIGCONT",
		inject: func(ctx context.Context, h *harness, _ int) (string, func(context.Context) error, error) {
			v, err := h.settled(ctx)
			if err != nil {
				return "", nil, err
			}
			b := h.c.Broker(v.Parts[h.rng.Int32N(h.o.partitions)].Leader)
			if b == nil {
				return "", nil, fmt.Errorf("no broker is the leader")
			}
			if err := h.c.Signal(b, syscall.SIGSTOP); err != nil {
				return "", nil, err
			}
			h.hold = h.o.sessionTimeout * 3 / 2
			return fmt.Sprintf("SIGSTOP broker %d (leader of %v)", b.ID, led(v, b.ID)), func(context.Context) error {
				return h.c.Signal(b, syscall.SIGCONT)
			}, nil
		}},
	{name: "partition-minority", network: true, doc: "a random partition's leader cut off from the other two brokers, both ways; clients still reach all three",
		inject: func(ctx context.Context, h *harness, _ int) (string, func(context.Context) error, error) {
			v, err := h.settled(ctx)
			if err != nil {
				return "", nil, err
			}
			i := h.index(v.Parts[h.rng.Int32N(h.o.partitions)].Leader)
			for j := range h.net.brokers {
				if j != i {
					if err := h.cut(i, j); err != nil {
						return "", nil, err
					}
				}
			}
			if h.o.expectLoss {
				h.until = h.ledElsewhere(int32(i+1), led(v, int32(i+1)), time.Now())
			}
			return fmt.Sprintf("broker %d (leader of %v) | brokers %v", i+1, led(v, int32(i+1)), others(len(h.net.brokers), i)), h.healNet, nil
		}},
	{name: "partition-bridge", network: true, doc: "a random broker sees both others, which do not see each other; clients reach all",
		inject: func(ctx context.Context, h *harness, _ int) (string, func(context.Context) error, error) {
			mid := h.rng.IntN(len(h.net.brokers))
			o := others(len(h.net.brokers), mid)
			if err := h.cut(o[0]-1, o[1]-1); err != nil {
				return "", nil, err
			}
			return fmt.Sprintf("brokers %d and %d cut, broker %d the bridge", o[0], o[1], mid+1), h.healNet, nil
		}},
	{name: "partition-one-way", network: true, doc: "every packet from (odd cycles) or to (even cycles) a random partition's leader and the other brokers dropped, one direction only",
		inject: func(ctx context.Context, h *harness, n int) (string, func(context.Context) error, error) {
			v, err := h.settled(ctx)
			if err != nil {
				return "", nil, err
			}
			i := h.index(v.Parts[h.rng.Int32N(h.o.partitions)].Leader)
			dir := "from"
			for j := range h.net.brokers {
				if j == i {
					continue
				}
				src, dst := h.net.brokers[i], h.net.brokers[j]
				if n%2 == 0 {
					src, dst, dir = dst, src, "to"
				}
				if err := h.net.drop(src, dst); err != nil {
					return "", nil, err
				}
			}
			return fmt.Sprintf("packets %s broker %d (leader of %v) and the other brokers dropped", dir, i+1, led(v, int32(i+1))), h.healNet, nil
		}},
	{name: "slow-link", network: true, doc: "links of one random broker (odd cycles) or of all (even cycles) slow and lossy: netem where the kernel has it, else a rate limit with a short queue",
		inject: func(_ context.Context, h *harness, n int) (string, func(context.Context) error, error) {
			which := []int{h.rng.IntN(len(h.net.brokers))}
			if n%2 == 0 {
				which = []int{0, 1, 2}
			}
			var what string
			for _, i := range which {
				var err error
				if what, err = h.net.slow(i); err != nil {
					return "", nil, err
				}
			}
			var ids []int
			for _, i := range which {
				ids = append(ids, i+1)
			}
			return fmt.Sprintf("%s on the links of brokers %v", what, ids), h.healNet, nil
		}},
}

// untilLimit bounds how much longer than its time a fault is held
// waiting for a holdUntil.
const untilLimit = 30 * time.Second

// holdUntil is a condition a nemesis holds its fault for: what it is,
// and whether it holds now.
type holdUntil struct {
	what string
	done func(context.Context) bool
}

// ledElsewhere is, for make chaos-broken, the condition under which a
// leader cut off from the other brokers loses acknowledged records: the
// other brokers agree that every partition it led since has another
// leader, and it has acknowledged writes to one of them after the cut
// (from then on its followers had none of them). Holding a fault for its
// time alone left that to chance: the etcd lease, the controller's move
// and the writers' acks all race the fault time, and in some runs the
// leader kept its partitions throughout or acknowledged nothing.
func (h *harness) ledElsewhere(id int32, parts []int32, cut time.Time) *holdUntil {
	return &holdUntil{
		what: fmt.Sprintf("brokers %v lead partitions %v elsewhere and broker %d acknowledged writes to them after the cut", others(len(h.c.Brokers), int(id)-1), parts, id),
		done: func(ctx context.Context) bool {
			for _, other := range others(len(h.c.Brokers), int(id)-1) {
				leaders, err := h.leadersSeenBy(ctx, int32(other))
				if err != nil {
					return false
				}
				for _, p := range parts {
					if l, ok := leaders[p]; !ok || l < 0 || l == id {
						return false
					}
				}
			}
			acks, _ := h.acks.Snapshot()
			after := cut.Add(time.Second)
			for _, a := range acks {
				if a.At.After(after) && slices.Contains(parts, a.Partition) {
					return true
				}
			}
			return false
		},
	}
}

// leadersSeenBy asks broker id alone for the topic's partition leaders.
func (h *harness) leadersSeenBy(ctx context.Context, id int32) (map[int32]int32, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, h.cl.Broker(int(id)))
	if err != nil {
		return nil, err
	}
	leaders := map[int32]int32{}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		for _, p := range t.Partitions {
			leaders[p.Partition] = p.Leader
		}
	}
	return leaders, nil
}

// led lists the partitions broker id leads in view v.
func led(v lab.View, id int32) []int32 {
	var ps []int32
	for p := range int32(len(v.Parts)) {
		if v.Parts[p].Leader == id {
			ps = append(ps, p)
		}
	}
	return ps
}

// others lists the node ids of the n brokers but the one at index i.
func others(n, i int) []int {
	var o []int
	for j := range n {
		if j != i {
			o = append(o, j+1)
		}
	}
	return o
}

// index returns the broker index of node id (node ids are 1..n); a
// partition with no leader gives a random broker.
func (h *harness) index(id int32) int {
	if id < 1 || int(id) > len(h.c.Brokers) {
		return h.rng.IntN(len(h.c.Brokers))
	}
	return int(id) - 1
}

// cut drops every packet between brokers i and j, both ways.
func (h *harness) cut(i, j int) error {
	if err := h.net.drop(h.net.brokers[i], h.net.brokers[j]); err != nil {
		return err
	}
	return h.net.drop(h.net.brokers[j], h.net.brokers[i])
}

func (h *harness) healNet(context.Context) error { return h.net.heal() }

// kill SIGKILLs broker id and returns the heal that restarts it.
func (h *harness) kill(ctx context.Context, id int32, role string) (string, func(context.Context) error, error) {
	b := h.c.Broker(id)
	if b == nil {
		return "", nil, fmt.Errorf("no broker %d to kill (the %s)", id, role)
	}
	v, _ := lab.Metadata(ctx, h.adm, topic)
	if _, err := h.c.Kill(ctx, b); err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("kill -9 broker %d, the %s (leader of %v)", id, role, led(v, id)), func(context.Context) error {
		return h.c.Start(b)
	}, nil
}

// etcdLeader asks the etcd members for their raft leader (the status
// call of etcd's JSON gateway) and returns it.
func (h *harness) etcdLeader(ctx context.Context) (*lab.Member, error) {
	type status struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	ids := map[string]*lab.Member{}
	leader := ""
	for _, m := range h.c.Members {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, err := http.NewRequestWithContext(rctx, http.MethodPost, m.ClientURL()+"/v3/maintenance/status", strings.NewReader("{}"))
		if err != nil {
			cancel()
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			continue // a member down or cut off: ask the others
		}
		var st status
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		cancel()
		if err != nil {
			continue
		}
		ids[st.Header.MemberID] = m
		if st.Leader != "" && st.Leader != "0" {
			leader = st.Leader
		}
	}
	if m := ids[leader]; m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("no etcd member names a leader among the members that answered (%d of %d)", len(ids), len(h.c.Members))
}

// settled waits (at most a minute) until every partition has a leader
// and returns that view.
func (h *harness) settled(ctx context.Context) (lab.View, error) {
	var v lab.View
	if !lab.Poll(ctx, time.Minute, 200*time.Millisecond, func() bool {
		var err error
		v, err = lab.Metadata(ctx, h.adm, topic)
		return err == nil && v.AllLed(h.o.partitions)
	}) {
		return v, fmt.Errorf("no leader for every partition within 1m")
	}
	return v, nil
}
