package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// `cluster rebalance`, `cluster decommission` and `cluster reassignments`
// move partition replicas between brokers with Kafka's reassignment APIs
// (AlterPartitionReassignments and ListPartitionReassignments, KIP-455),
// throttled with Kafka's replication quotas (KIP-73), and end with a
// preferred leader election (ElectLeaders). The plan is planMoves'
// (rebalance_plan.go); this file reads the cluster, prints the plan and
// carries it out.

const rebalanceLong = `Plan partition moves that even out the replicas and the preferred
leaders (first replicas) over the brokers, and print them. Without --execute
nothing changes (a dry run).

The plan keeps every partition's replication factor and its replicas on
distinct brokers, spreads them over as many racks as it can when every
broker has a rack, and prefers moves that copy few bytes (sizes come from
DescribeLogDirs). It is the same for the same cluster.

With --execute the moves are submitted (--batch at a time), their progress
is shown until they are done, the preferred leaders are elected and the
throttle, if any, is removed. With nothing to move, --execute still elects
the preferred leader of partitions led by another replica. --throttle limits the replication traffic of
the moves, in bytes/s, on the brokers they involve (Kafka's
leader.replication.throttled.rate and follower.replication.throttled.rate,
applied to the moving replicas only).

Ctrl-C stops watching; the moves submitted go on in the cluster. See them
with 'gregor cluster reassignments', cancel them with --cancel there.`

const decommissionLong = `Plan the moves that take every replica off broker ID, so that it can be
stopped for good, and even out the replicas and preferred leaders over the
other brokers; print them. Without --execute nothing changes (a dry run).
With --execute the moves are carried out as by 'gregor cluster rebalance
--execute'.

ID may be a broker that is gone already, if it still holds replicas.`

const reassignmentsLong = `List the partition moves in flight in the cluster (from any tool) with the
bytes their new replicas still have to copy: the leader's size minus the
size of each new replica.

--cancel cancels them all, or those of --topic (and --partition): each
partition goes back to its replicas before the move. When none is left in
flight, the replication throttles are removed, as --clear-throttles does.

--clear-throttles removes the throttles a move sets and leaves: the broker
configs leader.replication.throttled.rate and
follower.replication.throttled.rate, and the topic configs
leader.replication.throttled.replicas and
follower.replication.throttled.replicas, wherever they are set.`

// The replication throttle configs, Kafka's names (KIP-73).
const (
	leaderThrottleRate      = "leader.replication.throttled.rate"
	followerThrottleRate    = "follower.replication.throttled.rate"
	leaderThrottleReplicas  = "leader.replication.throttled.replicas"
	followerThrottleReplica = "follower.replication.throttled.replicas"
)

// errNotReassignable is the error of commands that need the reassignment
// APIs of a cluster that does not serve them.
var errNotReassignable = errors.New("the cluster does not serve partition reassignment (AlterPartitionReassignments and ListPartitionReassignments)")

// moveOptions are the flags of rebalance and decommission.
type moveOptions struct {
	topics   []string
	execute  bool
	throttle string
	batch    int
	interval time.Duration
}

func (m *moveOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&m.execute, "execute", false, "carry out the moves (without it: only print them)")
	f.StringVar(&m.throttle, "throttle", "", "limit the moves' replication to `RATE` bytes/s per broker (e.g. 50000000, 50MB, 48MiB); none when not given")
	f.IntVar(&m.batch, "batch", 0, "move at most `N` partitions at a time (0: all at once)")
	f.DurationVar(&m.interval, "interval", 2*time.Second, "show the progress this often")
}

func newClusterRebalanceCmd(o *clientOptions) *cobra.Command {
	m := &moveOptions{}
	cmd := &cobra.Command{
		Use:   "rebalance [--topics a,b] [--execute [--throttle RATE] [--batch N]]",
		Short: "Even out replicas and leaders over the brokers (a dry run unless --execute)",
		Long:  rebalanceLong,
		Example: `  gregor cluster rebalance
  gregor cluster rebalance --topics orders,payments --execute --throttle 50MB --batch 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return moveReplicas(cmd, o, m, -1)
		},
	}
	m.addFlags(cmd)
	cmd.Flags().StringSliceVar(&m.topics, "topics", nil, "plan for these topics only, balancing their replicas among themselves (default: all topics)")
	return cmd
}

func newClusterDecommissionCmd(o *clientOptions) *cobra.Command {
	m := &moveOptions{}
	cmd := &cobra.Command{
		Use:   "decommission ID [--execute [--throttle RATE] [--batch N]]",
		Short: "Move every replica off a broker so that it can be stopped (a dry run unless --execute)",
		Long:  decommissionLong,
		Example: `  gregor cluster decommission 4
  gregor cluster decommission 4 --execute --throttle 100MB`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 32)
			if err != nil || id < 0 {
				return fmt.Errorf("broker %q: want a broker id, a number >= 0", args[0])
			}
			return moveReplicas(cmd, o, m, int32(id))
		},
	}
	m.addFlags(cmd)
	return cmd
}

// reassignAdmin is what the move commands ask of a cluster: a
// *kadm.Client, or a simulated cluster in tests.
type reassignAdmin interface {
	Metadata(ctx context.Context, topics ...string) (kadm.Metadata, error)
	DescribeAllLogDirs(ctx context.Context, s kadm.TopicsSet) (kadm.DescribedAllLogDirs, error)
	ApiVersions(ctx context.Context) (kadm.BrokersApiVersions, error)
	AlterPartitionAssignments(ctx context.Context, req kadm.AlterPartitionAssignmentsReq) (kadm.AlterPartitionAssignmentsResponses, error)
	ListPartitionReassignments(ctx context.Context, s kadm.TopicsSet) (kadm.ListPartitionReassignmentsResponses, error)
	ElectLeaders(ctx context.Context, how kadm.ElectLeadersHow, s kadm.TopicsSet) (kadm.ElectLeadersResults, error)
	AlterBrokerConfigs(ctx context.Context, configs []kadm.AlterConfig, brokers ...int32) (kadm.AlterConfigsResponses, error)
	AlterTopicConfigs(ctx context.Context, configs []kadm.AlterConfig, topics ...string) (kadm.AlterConfigsResponses, error)
	DescribeBrokerConfigs(ctx context.Context, brokers ...int32) (kadm.ResourceConfigs, error)
	DescribeTopicConfigs(ctx context.Context, topics ...string) (kadm.ResourceConfigs, error)
}

// op is a long-running admin command: unlike newAdmin's, its context is
// not bounded by --timeout as a whole; each request is.
type op struct {
	adm     reassignAdmin
	timeout time.Duration
	close   func()
	// warn receives warnings; warned holds the brokers whose sizes could
	// not be read, said once each.
	warn   io.Writer
	warned map[int32]bool
}

func (o *clientOptions) newOp(cmd *cobra.Command) (*op, error) {
	cl, err := o.newClient()
	if err != nil {
		return nil, err
	}
	return &op{adm: kadm.NewClient(cl), timeout: o.timeout, close: cl.Close, warn: cmd.ErrOrStderr(), warned: map[int32]bool{}}, nil
}

// req returns the context of one request: ctx bounded by --timeout.
func (p *op) req(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, p.timeout)
}

// metadata reads the metadata of topics (all when none), fresh: kadm
// otherwise answers from a cache up to 5 s old, and a move's end must be
// read from the cluster. (Asking for authorized operations is what makes
// kadm bypass its cache.)
func (p *op) metadata(ctx context.Context, topics ...string) (kadm.Metadata, error) {
	ctx, cancel := p.req(ctx)
	defer cancel()
	md, err := p.adm.Metadata(kadm.WithAuthorizedOps(ctx), topics...)
	if err != nil {
		return md, fmt.Errorf("metadata: %w", err)
	}
	return md, nil
}

// sizes returns the size of each replica of the partitions of s, by
// topic, partition and broker; replicas being moved between a broker's log
// dirs count once (the current one). A broker that does not answer (one
// that is gone, say, and being decommissioned) is warned about, and its
// replicas are missing from the result; when none answers, that is an
// error.
func (p *op) sizes(ctx context.Context, s kadm.TopicsSet) (map[string]map[int32]map[int32]int64, error) {
	out := map[string]map[int32]map[int32]int64{}
	if len(s) == 0 {
		return out, nil
	}
	ctx, cancel := p.req(ctx)
	defer cancel()
	all, err := p.adm.DescribeAllLogDirs(ctx, s)
	var se *kadm.ShardErrors
	if errors.As(err, &se) && len(all) > 0 {
		for _, e := range se.Errs {
			id := e.Broker.NodeID
			if p.warned[id] {
				continue
			}
			p.warned[id] = true
			from := fmt.Sprintf("broker %d", id)
			if id < 0 {
				from = "brokers not in the cluster"
			}
			fmt.Fprintf(p.warn, "gregor: warning: no replica sizes from %s (%v): their replicas count as empty\n", from, e.Err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("describe log dirs: %w", err)
	}
	for _, dirs := range all {
		if err := dirs.Error(); err != nil {
			return nil, fmt.Errorf("describe log dirs: %w", err)
		}
		dirs.EachPartition(func(d kadm.DescribedLogDirPartition) {
			if d.IsFuture {
				return
			}
			if out[d.Topic] == nil {
				out[d.Topic] = map[int32]map[int32]int64{}
			}
			if out[d.Topic][d.Partition] == nil {
				out[d.Topic][d.Partition] = map[int32]int64{}
			}
			out[d.Topic][d.Partition][d.Broker] = d.Size
		})
	}
	return out, nil
}

// reassignable reports whether the cluster serves partition reassignment:
// whether every broker that answers ApiVersions advertises
// AlterPartitionReassignments and ListPartitionReassignments. A cluster
// that does not can have no move in flight, and cannot make one.
func (p *op) reassignable(ctx context.Context) (bool, error) {
	rctx, cancel := p.req(ctx)
	defer cancel()
	vs, err := p.adm.ApiVersions(rctx)
	if err != nil {
		return false, fmt.Errorf("api versions: %w", err)
	}
	answered := false
	for _, v := range vs {
		if v.Err != nil {
			continue
		}
		answered = true
		_, alter := v.KeyMaxVersion(kmsg.AlterPartitionAssignments.Int16())
		_, list := v.KeyMaxVersion(kmsg.ListPartitionReassignments.Int16())
		if !alter || !list {
			return false, nil
		}
	}
	if !answered {
		return false, errors.New("api versions: no broker answered")
	}
	return true, nil
}

// leaderSize is the size of a partition's data: its leader's replica, or
// with no leader known the largest replica among from.
func leaderSize(sizes map[int32]int64, leader int32, from []int32) int64 {
	if s, ok := sizes[leader]; ok {
		return s
	}
	var s int64
	for _, b := range from {
		s = max(s, sizes[b])
	}
	return s
}

// brokerLoad is a broker's replicas and preferred leaderships before and
// after a plan.
type brokerLoad struct {
	ID            int32  `json:"id"`
	Rack          string `json:"rack,omitempty"`
	Leaving       bool   `json:"leaving,omitempty"`
	Replicas      int    `json:"replicas"`
	ReplicasAfter int    `json:"replicas_after"`
	Leaders       int    `json:"leaders"`
	LeadersAfter  int    `json:"leaders_after"`
}

// movePlan is what rebalance and decommission print, and --json writes.
type movePlan struct {
	// Decommission is the broker emptied, if any.
	Decommission *int32          `json:"decommission,omitempty"`
	Brokers      []brokerLoad    `json:"brokers"`
	Moves        []partitionMove `json:"moves"`
	// Bytes is what the moves copy in all.
	Bytes    int64 `json:"bytes"`
	Executed bool  `json:"executed"`
	// Seconds is how long the execution took.
	Seconds float64 `json:"seconds,omitempty"`
	// Failed are the moves that the cluster refused or that ended
	// elsewhere than planned.
	Failed []moveFailure `json:"failed,omitempty"`

	// reassignable is whether the cluster can carry out moves.
	reassignable bool
	// unpreferred are the partitions not led by their first replica.
	unpreferred kadm.TopicsSet
}

type moveFailure struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Error     string `json:"error"`
}

// readPlan reads the cluster and plans the moves of topics (all when
// none), emptying broker leaving when it is >= 0.
func readPlan(ctx context.Context, p *op, topics []string, leaving int32) (movePlan, error) {
	md, err := p.metadata(ctx)
	if err != nil {
		return movePlan{}, err
	}
	var brokers []planBroker
	inCluster := map[int32]bool{}
	for _, b := range md.Brokers {
		inCluster[b.NodeID] = true
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		brokers = append(brokers, planBroker{ID: b.NodeID, Rack: rack, Leaving: b.NodeID == leaving})
	}
	names := topics
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(md.Topics))
	}
	set := kadm.TopicsSet{}
	holdsLeaving := false
	for _, t := range names {
		td, ok := md.Topics[t]
		if !ok {
			return movePlan{}, fmt.Errorf("topic %s does not exist", t)
		}
		if td.Err != nil {
			return movePlan{}, fmt.Errorf("topic %s: %w", t, td.Err)
		}
		for _, pd := range td.Partitions {
			set.Add(t, pd.Partition)
			holdsLeaving = holdsLeaving || slices.Contains(pd.Replicas, leaving)
		}
	}
	if leaving >= 0 && !inCluster[leaving] {
		if !holdsLeaving {
			return movePlan{}, fmt.Errorf("broker %d is not in the cluster and holds no replicas", leaving)
		}
		// A broker that is gone, with replicas left to move.
		brokers = append(brokers, planBroker{ID: leaving, Leaving: true})
	}
	// During a move the metadata lists the old and the new replicas
	// together: a plan made then would be wrong.
	ok, err := p.reassignable(ctx)
	if err != nil {
		return movePlan{}, err
	}
	if ok {
		x := &execution{op: p}
		inFlight, err := x.listReassignments(ctx, set)
		if err != nil {
			return movePlan{}, err
		}
		if n := countReassignments(inFlight); n > 0 {
			return movePlan{}, fmt.Errorf("%s being moved: wait for them or cancel them, then plan again (see 'gregor cluster reassignments')", plural(n, "partition is", "partitions are"))
		}
	}
	sizes, err := p.sizes(ctx, set)
	if err != nil {
		return movePlan{}, err
	}
	var parts []planPartition
	unpreferred := kadm.TopicsSet{}
	for _, t := range names {
		for _, pd := range md.Topics[t].Partitions.Sorted() {
			if len(pd.Replicas) > 0 && pd.Leader != pd.Replicas[0] {
				unpreferred.Add(t, pd.Partition)
			}
			parts = append(parts, planPartition{
				Topic: t, Partition: pd.Partition, Replicas: pd.Replicas, Leader: pd.Leader,
				Size: leaderSize(sizes[t][pd.Partition], pd.Leader, pd.Replicas),
			})
		}
	}
	moves, err := planMoves(brokers, parts)
	if err != nil {
		if errors.Is(err, errUnknownBroker) {
			err = fmt.Errorf("%w (if that broker is gone for good, 'gregor cluster decommission' moves its replicas)", err)
		}
		return movePlan{}, fmt.Errorf("plan: %w", err)
	}
	plan := movePlan{Moves: moves, Brokers: loads(brokers, parts, moves), reassignable: ok, unpreferred: unpreferred}
	if plan.Moves == nil {
		plan.Moves = []partitionMove{}
	}
	if leaving >= 0 {
		plan.Decommission = &leaving
	}
	for _, m := range moves {
		plan.Bytes += m.Bytes
	}
	return plan, nil
}

// loads counts replicas and preferred leaders per broker before and after
// the moves.
func loads(brokers []planBroker, parts []planPartition, moves []partitionMove) []brokerLoad {
	byID := map[int32]*brokerLoad{}
	var out []*brokerLoad
	for _, b := range brokers {
		l := &brokerLoad{ID: b.ID, Rack: b.Rack, Leaving: b.Leaving}
		byID[b.ID] = l
		out = append(out, l)
	}
	after := map[string][]int32{}
	for _, m := range moves {
		after[m.Topic+"\x00"+strconv.Itoa(int(m.Partition))] = m.To
	}
	for _, p := range parts {
		to, ok := after[p.Topic+"\x00"+strconv.Itoa(int(p.Partition))]
		if !ok {
			to = p.Replicas
		}
		for i, b := range p.Replicas {
			byID[b].Replicas++
			if i == 0 {
				byID[b].Leaders++
			}
		}
		for i, b := range to {
			byID[b].ReplicasAfter++
			if i == 0 {
				byID[b].LeadersAfter++
			}
		}
	}
	slices.SortFunc(out, func(a, b *brokerLoad) int { return cmp.Compare(a.ID, b.ID) })
	res := make([]brokerLoad, len(out))
	for i, l := range out {
		res[i] = *l
	}
	return res
}

// printPlan prints the moves and the brokers' loads.
func printPlan(w io.Writer, plan movePlan) error {
	if len(plan.Moves) == 0 {
		fmt.Fprintln(w, "The replicas are balanced: nothing to move.")
		return nil
	}
	tb := newTable(w, "TOPIC", "PARTITION", "FROM", "TO", "BYTES")
	copies := 0
	for _, m := range plan.Moves {
		tb.row(m.Topic, m.Partition, int32s(m.From), int32s(m.To), formatBytes(m.Bytes))
		copies += len(m.added())
	}
	if err := tb.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tb = newTable(w, "BROKER", "RACK", "REPLICAS", "AFTER", "LEADERS", "AFTER")
	for _, b := range plan.Brokers {
		id := strconv.Itoa(int(b.ID))
		if b.Leaving {
			id += " (leaving)"
		}
		tb.row(id, orDash(b.Rack), b.Replicas, b.ReplicasAfter, b.Leaders, b.LeadersAfter)
	}
	if err := tb.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s to move, %s to copy, %s in all.\n", plural(len(plan.Moves), "partition", "partitions"),
		plural(copies, "replica", "replicas"), formatBytes(plan.Bytes))
	return nil
}

// moveReplicas is rebalance (leaving < 0) and decommission.
func moveReplicas(cmd *cobra.Command, o *clientOptions, m *moveOptions, leaving int32) error {
	var rate int64
	if m.throttle != "" {
		r, err := parseByteRate(m.throttle)
		if err != nil {
			return err
		}
		rate = r
	}
	if m.batch < 0 {
		return fmt.Errorf("--batch %d: want 0 (all at once) or more", m.batch)
	}
	if m.interval <= 0 {
		return fmt.Errorf("--interval %s: want a positive duration", m.interval)
	}
	if !m.execute && (cmd.Flags().Changed("throttle") || cmd.Flags().Changed("batch")) {
		return errors.New("--throttle and --batch apply to --execute only")
	}
	topics := slices.Compact(slices.Sorted(slices.Values(m.topics)))
	for _, t := range topics {
		if t == "" {
			return errors.New("--topics: empty topic name")
		}
	}
	p, err := o.newOp(cmd)
	if err != nil {
		return err
	}
	defer p.close()
	ctx := cmd.Context()
	plan, err := readPlan(ctx, p, topics, leaving)
	if err != nil {
		return err
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if m.execute && len(plan.Moves) == 0 && len(plan.unpreferred) > 0 {
		// Nothing to move, but leaders to put back where they belong
		// (after an interrupted execution, or a broker's restart).
		x := &execution{op: p, out: errOut}
		if err := x.electPreferred(ctx, plan.unpreferred); err != nil {
			return err
		}
	}
	if !m.execute || len(plan.Moves) == 0 {
		if o.json {
			return writeJSON(out, plan)
		}
		if err := printPlan(out, plan); err != nil {
			return err
		}
		if len(plan.Moves) > 0 {
			fmt.Fprintln(errOut, "Dry run: nothing changed. Add --execute to make these moves.")
		} else if plan.Decommission != nil {
			fmt.Fprintf(out, "Broker %d holds no replicas: it can be stopped.\n", leaving)
		}
		return nil
	}
	if !o.json {
		if err := printPlan(out, plan); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	if !plan.reassignable {
		return errNotReassignable
	}

	ictx, stop := interruptible(ctx)
	defer stop()
	x := &execution{op: p, out: errOut, rate: rate, batch: m.batch, interval: m.interval}
	start := time.Now()
	failed, err := x.run(ictx, plan.Moves)
	if err != nil {
		if ictx.Err() != nil && ctx.Err() == nil {
			x.leftBehind("Interrupted", len(plan.Moves))
			return errors.New("interrupted")
		}
		x.leftBehind("Stopped", len(plan.Moves))
		return err
	}
	plan.Executed, plan.Failed = true, failed
	plan.Seconds = time.Since(start).Seconds()

	var leftErr error
	if plan.Decommission != nil {
		leftErr = x.checkEmpty(ctx, leaving)
	}
	if o.json {
		if err := writeJSON(out, plan); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "Moved %d of %s (%s) in %s.\n", len(plan.Moves)-len(failed), plural(len(plan.Moves), "partition", "partitions"),
			formatBytes(plan.Bytes), time.Since(start).Round(100*time.Millisecond))
		if plan.Decommission != nil && leftErr == nil {
			fmt.Fprintf(out, "Broker %d holds no replicas: it can be stopped.\n", leaving)
		}
	}
	if err := failures(len(failed), len(plan.Moves), "moves"); err != nil {
		return err
	}
	return leftErr
}

// execution carries out a plan's moves.
type execution struct {
	*op
	out      io.Writer // progress and notes
	rate     int64     // throttle in bytes/s, 0 for none
	batch    int       // moves in flight at most, 0 for all
	interval time.Duration

	// settle is how long a move that has left the reassignment list may
	// show other replicas in the metadata before it counts as failed;
	// settleTime when 0.
	settle time.Duration

	// What run has done so far, for leftBehind.
	throttled bool
	submitted int
	done      bool // all moves ended
}

// settleTime is how long a move that has left the reassignment list may
// show other replicas in the metadata before it counts as failed: brokers
// learn a finished move from the controller a little after it is done.
const settleTime = 30 * time.Second

// run sets the throttle, submits the moves keeping at most x.batch in
// flight, shows their progress until all are done, elects the preferred
// leaders and removes the throttle. It returns the moves that failed; an
// error means it could not go on, and x.leftBehind says what remains.
func (x *execution) run(ctx context.Context, moves []partitionMove) ([]moveFailure, error) {
	all := kadm.TopicsSet{}
	for _, m := range moves {
		all.Add(m.Topic, m.Partition)
	}
	inFlight, err := x.listReassignments(ctx, all)
	if err != nil {
		return nil, err
	}
	if n := countReassignments(inFlight); n > 0 {
		return nil, fmt.Errorf("%s being moved already: see 'gregor cluster reassignments'", plural(n, "of these partitions is", "of these partitions are"))
	}
	if x.rate > 0 {
		x.throttled = true
		if err := x.setThrottle(ctx, moves); err != nil {
			return nil, err
		}
	}

	var (
		failed  []moveFailure
		pending = slices.Clone(moves)
		running []partitionMove
		// unsettled are the running moves that have left the
		// reassignment list but not yet shown their new replicas in the
		// metadata, and since when.
		unsettled = map[string]time.Time{}
		start     = time.Now()
		tick      = time.NewTicker(x.interval)
	)
	defer tick.Stop()
	for {
		if n := len(pending); n > 0 && (x.batch == 0 || len(running) < x.batch) {
			if x.batch > 0 {
				n = min(n, x.batch-len(running))
			}
			ok, bad, err := x.submit(ctx, pending[:n])
			if err != nil {
				return nil, err
			}
			x.submitted += n
			pending = pending[n:]
			running = append(running, ok...)
			failed = append(failed, bad...)
		}
		set := kadm.TopicsSet{}
		for _, m := range running {
			set.Add(m.Topic, m.Partition)
		}
		inFlight, err := x.listReassignments(ctx, set)
		if err != nil {
			return nil, err
		}
		var ended []partitionMove
		still := running[:0]
		for _, m := range running {
			if _, ok := inFlight[m.Topic][m.Partition]; ok {
				still = append(still, m)
			} else {
				ended = append(ended, m)
			}
		}
		// A move that has left the list is done when the metadata shows
		// its new replicas.
		wrong, err := x.checkDone(ctx, ended)
		if err != nil {
			return nil, err
		}
		for _, m := range ended {
			k := fmt.Sprintf("%s-%d", m.Topic, m.Partition)
			why, bad := wrong[k]
			if !bad {
				delete(unsettled, k)
				continue
			}
			if _, ok := unsettled[k]; !ok {
				unsettled[k] = time.Now()
			}
			if time.Since(unsettled[k]) < cmp.Or(x.settle, settleTime) {
				still = append(still, m)
				continue
			}
			delete(unsettled, k)
			failed = append(failed, moveFailure{m.Topic, m.Partition, why})
		}
		running = still
		if len(running) == 0 && len(pending) == 0 {
			break
		}
		if len(pending) > 0 && (x.batch == 0 || len(running) < x.batch) {
			continue // room for more: submit them now
		}
		if err := x.progress(ctx, start, running, len(pending), len(moves)); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
	x.done = true
	fmt.Fprintf(x.out, "[%s] all moves done\n", since(start))

	elect := kadm.TopicsSet{}
	for _, m := range moves {
		if !slices.ContainsFunc(failed, func(f moveFailure) bool { return f.Topic == m.Topic && f.Partition == m.Partition }) {
			elect.Add(m.Topic, m.Partition)
		}
	}
	if err := x.electPreferred(ctx, elect); err != nil {
		return nil, err
	}
	if x.throttled {
		if err := x.clearThrottle(ctx, moves); err != nil {
			return nil, err
		}
		x.throttled = false
	}
	slices.SortFunc(failed, func(a, b moveFailure) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, f := range failed {
		fmt.Fprintf(x.out, "gregor: %s-%d: %s\n", f.Topic, f.Partition, f.Error)
	}
	return failed, nil
}

// leftBehind says what an execution that stopped early (interrupted, or
// failed on a request) leaves in the cluster, and how to deal with it.
func (x *execution) leftBehind(why string, total int) {
	w := x.out
	fmt.Fprintln(w)
	switch {
	case x.done:
		fmt.Fprintf(w, "%s after the moves were done.\n", why)
	case x.submitted > 0:
		fmt.Fprintf(w, "%s: the cluster goes on with the %s submitted", why, plural(x.submitted, "move", "moves"))
		if total > x.submitted {
			fmt.Fprintf(w, "; %d not started", total-x.submitted)
		}
		fmt.Fprintln(w, ".")
		fmt.Fprintln(w, "  see them:    gregor cluster reassignments")
		fmt.Fprintln(w, "  cancel them: gregor cluster reassignments --cancel")
	default:
		fmt.Fprintf(w, "%s before any move was submitted.\n", why)
	}
	if x.submitted > 0 {
		fmt.Fprintln(w, "Preferred leaders may not be elected yet: once the moves are done, run this command again to finish.")
	}
	if x.throttled {
		fmt.Fprintln(w, "The replication throttle stays set; once the moves are done, remove it with")
		fmt.Fprintln(w, "  gregor cluster reassignments --clear-throttles")
	}
}

// since is the time since start for progress lines.
func since(start time.Time) string {
	return time.Since(start).Round(time.Second).String()
}

// submit submits moves; it returns those accepted and those refused.
func (x *execution) submit(ctx context.Context, moves []partitionMove) (ok []partitionMove, bad []moveFailure, err error) {
	var req kadm.AlterPartitionAssignmentsReq
	for _, m := range moves {
		req.Assign(m.Topic, m.Partition, m.To)
	}
	rctx, cancel := x.req(ctx)
	defer cancel()
	resp, err := x.adm.AlterPartitionAssignments(rctx, req)
	if err != nil {
		return nil, nil, fmt.Errorf("submit moves: %w", err)
	}
	for _, m := range moves {
		r, found := resp[m.Topic][m.Partition]
		switch {
		case !found:
			bad = append(bad, moveFailure{m.Topic, m.Partition, "not in the response"})
		case r.Err != nil:
			bad = append(bad, moveFailure{m.Topic, m.Partition, kafkaErr(r.Err, r.ErrMessage).Error()})
		default:
			ok = append(ok, m)
		}
	}
	fmt.Fprintf(x.out, "submitted %s (%d refused)\n", plural(len(moves), "move", "moves"), len(bad))
	return ok, bad, nil
}

// listReassignments lists the partitions of s that are being moved.
func (x *execution) listReassignments(ctx context.Context, s kadm.TopicsSet) (kadm.ListPartitionReassignmentsResponses, error) {
	rctx, cancel := x.req(ctx)
	defer cancel()
	r, err := x.adm.ListPartitionReassignments(rctx, s)
	if err != nil {
		return nil, fmt.Errorf("list reassignments: %w", err)
	}
	return r, nil
}

func countReassignments(r kadm.ListPartitionReassignmentsResponses) int {
	n := 0
	r.Each(func(kadm.ListPartitionReassignmentsResponse) { n++ })
	return n
}

// checkDone reads the replicas of moves that are no longer in flight and
// returns why, by "topic-partition", for those that do not show the
// replicas planned (yet: the metadata may lag, or the move was cancelled).
func (x *execution) checkDone(ctx context.Context, ended []partitionMove) (map[string]string, error) {
	wrong := map[string]string{}
	if len(ended) == 0 {
		return wrong, nil
	}
	topics := map[string]bool{}
	for _, m := range ended {
		topics[m.Topic] = true
	}
	md, err := x.metadata(ctx, slices.Sorted(maps.Keys(topics))...)
	if err != nil {
		return nil, err
	}
	for _, m := range ended {
		k := fmt.Sprintf("%s-%d", m.Topic, m.Partition)
		pd, ok := md.Topics[m.Topic].Partitions[m.Partition]
		switch {
		case !ok:
			wrong[k] = "the partition is gone"
		case !slices.Equal(pd.Replicas, m.To):
			wrong[k] = fmt.Sprintf("ended with replicas %s, not %s (cancelled?)", int32s(pd.Replicas), int32s(m.To))
		}
	}
	return wrong, nil
}

// moveProgress is one move in flight and what its new replicas still have
// to copy.
type moveProgress struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
	BytesLeft int64   `json:"bytes_left"`
}

// bytesLeft fills in the bytes left of ps: for each adding replica, the
// leader's size minus its own.
func (p *op) bytesLeft(ctx context.Context, ps []moveProgress) error {
	if len(ps) == 0 {
		return nil
	}
	set := kadm.TopicsSet{}
	topics := map[string]bool{}
	for _, m := range ps {
		set.Add(m.Topic, m.Partition)
		topics[m.Topic] = true
	}
	md, err := p.metadata(ctx, slices.Sorted(maps.Keys(topics))...)
	if err != nil {
		return err
	}
	sizes, err := p.sizes(ctx, set)
	if err != nil {
		return err
	}
	for i, m := range ps {
		sz := sizes[m.Topic][m.Partition]
		var from []int32
		for _, b := range m.Replicas {
			if !slices.Contains(m.Adding, b) {
				from = append(from, b)
			}
		}
		leader := md.Topics[m.Topic].Partitions[m.Partition].Leader
		total := leaderSize(sz, leader, from)
		ps[i].BytesLeft = 0
		for _, b := range m.Adding {
			ps[i].BytesLeft += max(0, total-sz[b])
		}
	}
	return nil
}

// progress prints the moves in flight and what they have left.
func (x *execution) progress(ctx context.Context, start time.Time, running []partitionMove, pending, total int) error {
	ps := make([]moveProgress, len(running))
	for i, m := range running {
		ps[i] = moveProgress{Topic: m.Topic, Partition: m.Partition, Replicas: m.From, Adding: m.added()}
	}
	if err := x.bytesLeft(ctx, ps); err != nil {
		return err
	}
	var left int64
	for _, p := range ps {
		left += p.BytesLeft
	}
	fmt.Fprintf(x.out, "[%s] %d of %d moves left (%d in flight), %s to copy\n",
		since(start), len(running)+pending, total, len(running), formatBytes(left))
	const shown = 10
	for i, p := range ps {
		if i == shown {
			fmt.Fprintf(x.out, "    ... and %d more\n", len(ps)-shown)
			break
		}
		fmt.Fprintf(x.out, "    %s-%d  %s -> %s  %s left\n", p.Topic, p.Partition,
			int32s(running[i].From), int32s(running[i].To), formatBytes(p.BytesLeft))
	}
	return nil
}

// electPreferred elects the preferred (first) replica of the partitions
// of s as leader. A partition led by it already is fine; other failures
// are reported, not fatal: the moves are done.
func (x *execution) electPreferred(ctx context.Context, s kadm.TopicsSet) error {
	if len(s) == 0 {
		return nil
	}
	rctx, cancel := x.req(ctx)
	defer cancel()
	rs, err := x.adm.ElectLeaders(rctx, kadm.ElectPreferredReplica, s)
	if err != nil {
		return fmt.Errorf("elect preferred leaders: %w", err)
	}
	elected, already, failed := 0, 0, 0
	for _, t := range slices.Sorted(maps.Keys(rs)) {
		for _, p := range slices.Sorted(maps.Keys(rs[t])) {
			r := rs[t][p]
			switch {
			case r.Err == nil:
				elected++
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				already++
			default:
				failed++
				fmt.Fprintf(x.out, "gregor: warning: electing the preferred leader of %s-%d: %v\n", t, p, kafkaErr(r.Err, r.ErrMessage))
			}
		}
	}
	fmt.Fprintf(x.out, "preferred leaders: %d elected, %d leading already, %d failed\n", elected, already, failed)
	return nil
}

// throttledReplicas returns, per topic, the leader and follower throttled
// replica lists of moves, as Kafka's reassignment tool sets them: the
// leader side throttles every current replica (any may lead and serve the
// copy), the follower side the new replicas only.
func throttledReplicas(moves []partitionMove) (leader, follower map[string]string) {
	ls, fs := map[string][]string{}, map[string][]string{}
	for _, m := range moves {
		for _, b := range m.From {
			ls[m.Topic] = append(ls[m.Topic], fmt.Sprintf("%d:%d", m.Partition, b))
		}
		for _, b := range m.added() {
			fs[m.Topic] = append(fs[m.Topic], fmt.Sprintf("%d:%d", m.Partition, b))
		}
	}
	join := func(in map[string][]string) map[string]string {
		out := map[string]string{}
		for t, l := range in {
			out[t] = strings.Join(l, ",")
		}
		return out
	}
	return join(ls), join(fs)
}

// movingBrokers returns the brokers that moves copy from or to.
func movingBrokers(moves []partitionMove) []int32 {
	var bs []int32
	for _, m := range moves {
		if len(m.added()) == 0 {
			continue // a reorder copies nothing
		}
		bs = append(bs, m.From...)
		bs = append(bs, m.To...)
	}
	slices.Sort(bs)
	return slices.Compact(bs)
}

// setThrottle throttles the moves' replication to x.rate.
func (x *execution) setThrottle(ctx context.Context, moves []partitionMove) error {
	brokers := movingBrokers(moves)
	if len(brokers) == 0 {
		return nil
	}
	v := strconv.FormatInt(x.rate, 10)
	if err := alterBrokers(ctx, x.op, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: leaderThrottleRate, Value: &v},
		{Op: kadm.SetConfig, Name: followerThrottleRate, Value: &v},
	}, brokers); err != nil {
		return fmt.Errorf("set the throttle: %w", err)
	}
	leader, follower := throttledReplicas(moves)
	for _, t := range slices.Sorted(maps.Keys(leader)) {
		l, f := leader[t], follower[t]
		cfg := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: leaderThrottleReplicas, Value: &l}}
		if f != "" {
			cfg = append(cfg, kadm.AlterConfig{Op: kadm.SetConfig, Name: followerThrottleReplica, Value: &f})
		}
		if err := alterTopic(ctx, x.op, cfg, t); err != nil {
			return fmt.Errorf("set the throttle: %w", err)
		}
	}
	fmt.Fprintf(x.out, "throttled the moves' replication to %d bytes/s (%s/s) on brokers %s\n", x.rate, formatBytes(x.rate), int32s(brokers))
	return nil
}

// clearThrottle removes what setThrottle set.
func (x *execution) clearThrottle(ctx context.Context, moves []partitionMove) error {
	topics := map[string]bool{}
	for _, m := range moves {
		topics[m.Topic] = true
	}
	if err := clearThrottles(ctx, x.op, movingBrokers(moves), slices.Sorted(maps.Keys(topics))); err != nil {
		return err
	}
	fmt.Fprintln(x.out, "removed the throttle")
	return nil
}

// throttleDeletes are the config deletions that remove a throttle.
var (
	brokerThrottleDeletes = []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: leaderThrottleRate},
		{Op: kadm.DeleteConfig, Name: followerThrottleRate},
	}
	topicThrottleDeletes = []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: leaderThrottleReplicas},
		{Op: kadm.DeleteConfig, Name: followerThrottleReplica},
	}
)

// clearThrottles deletes the throttle configs of brokers and topics.
func clearThrottles(ctx context.Context, p *op, brokers []int32, topics []string) error {
	if len(brokers) > 0 {
		if err := alterBrokers(ctx, p, brokerThrottleDeletes, brokers); err != nil {
			return fmt.Errorf("remove the throttle: %w", err)
		}
	}
	for _, t := range topics {
		if err := alterTopic(ctx, p, topicThrottleDeletes, t); err != nil {
			return fmt.Errorf("remove the throttle: %w", err)
		}
	}
	return nil
}

// alterBrokers alters the configs of each of brokers.
func alterBrokers(ctx context.Context, p *op, cfg []kadm.AlterConfig, brokers []int32) error {
	rctx, cancel := p.req(ctx)
	defer cancel()
	rs, err := p.adm.AlterBrokerConfigs(rctx, cfg, brokers...)
	if err != nil {
		return fmt.Errorf("configs of brokers %s: %w", int32s(brokers), err)
	}
	for _, r := range rs {
		if err := kafkaErr(r.Err, r.ErrMessage); err != nil {
			return fmt.Errorf("configs of broker %s: %w", r.Name, err)
		}
	}
	return nil
}

// alterTopic alters the configs of topic.
func alterTopic(ctx context.Context, p *op, cfg []kadm.AlterConfig, topic string) error {
	rctx, cancel := p.req(ctx)
	defer cancel()
	rs, err := p.adm.AlterTopicConfigs(rctx, cfg, topic)
	if err != nil {
		return fmt.Errorf("configs of topic %s: %w", topic, err)
	}
	for _, r := range rs {
		if err := kafkaErr(r.Err, r.ErrMessage); err != nil {
			return fmt.Errorf("configs of topic %s: %w", r.Name, err)
		}
	}
	return nil
}

// checkEmpty checks that broker id holds no replica.
func (x *execution) checkEmpty(ctx context.Context, id int32) error {
	md, err := x.metadata(ctx)
	if err != nil {
		return err
	}
	var left []string
	for _, t := range slices.Sorted(maps.Keys(md.Topics)) {
		for _, pd := range md.Topics[t].Partitions.Sorted() {
			if slices.Contains(pd.Replicas, id) {
				left = append(left, fmt.Sprintf("%s-%d", t, pd.Partition))
			}
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("broker %d still holds replicas of %s (%s): do not stop it yet", id, plural(len(left), "partition", "partitions"), strings.Join(left, ", "))
	}
	return nil
}

func newClusterReassignmentsCmd(o *clientOptions) *cobra.Command {
	var (
		cancel, clearThr bool
		topic            string
		partitions       string
	)
	cmd := &cobra.Command{
		Use:   "reassignments [--cancel [--topic T [--partition 0,1]]] [--clear-throttles]",
		Short: "List the partition moves in flight; cancel them; remove the throttles they leave",
		Long:  reassignmentsLong,
		Example: `  gregor cluster reassignments
  gregor cluster reassignments --cancel --topic orders --partition 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (topic != "" || partitions != "") && !cancel {
				return errors.New("--topic and --partition choose what --cancel cancels: give --cancel")
			}
			if partitions != "" && topic == "" {
				return errors.New("--partition: give the --topic too")
			}
			var only []int32
			if partitions != "" {
				ps, err := parsePartitions(partitions)
				if err != nil {
					return fmt.Errorf("--partition: %w", err)
				}
				only = ps
			}
			p, err := o.newOp(cmd)
			if err != nil {
				return err
			}
			defer p.close()
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			if clearThr && !cancel {
				t, err := clearAllThrottles(ctx, p)
				if err != nil {
					return err
				}
				if o.json {
					return writeJSON(out, map[string]any{"throttles_removed": t})
				}
				t.print(out)
				return nil
			}
			if ok, err := p.reassignable(ctx); err != nil {
				return err
			} else if !ok {
				return errNotReassignable
			}
			ps, err := listAllReassignments(ctx, p)
			if err != nil {
				return err
			}
			if cancel {
				return cancelReassignments(cmd, o, p, ps, topic, only, clearThr)
			}
			if o.json {
				return writeJSON(out, ps)
			}
			return printReassignments(out, ps)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&cancel, "cancel", false, "cancel the moves in flight (all, or those of --topic and --partition)")
	f.StringVar(&topic, "topic", "", "with --cancel: cancel the moves of `TOPIC` only")
	f.StringVar(&partitions, "partition", "", "with --cancel and --topic: cancel the moves of these `PARTITIONS` (0,1,...) only")
	f.BoolVar(&clearThr, "clear-throttles", false, "remove the replication throttles from every broker and topic")
	return cmd
}

// listAllReassignments lists every move in flight, with bytes left.
func listAllReassignments(ctx context.Context, p *op) ([]moveProgress, error) {
	md, err := p.metadata(ctx)
	if err != nil {
		return nil, err
	}
	all := kadm.TopicsSet{}
	for t, td := range md.Topics {
		for part := range td.Partitions {
			all.Add(t, part)
		}
	}
	x := &execution{op: p}
	rs, err := x.listReassignments(ctx, all)
	if err != nil {
		return nil, err
	}
	ps := []moveProgress{}
	for _, r := range rs.Sorted() {
		ps = append(ps, moveProgress{
			Topic: r.Topic, Partition: r.Partition, Replicas: r.Replicas,
			Adding: r.AddingReplicas, Removing: r.RemovingReplicas,
		})
	}
	if err := p.bytesLeft(ctx, ps); err != nil {
		return nil, err
	}
	return ps, nil
}

func printReassignments(w io.Writer, ps []moveProgress) error {
	if len(ps) == 0 {
		fmt.Fprintln(w, "No partition is being moved.")
		return nil
	}
	tb := newTable(w, "TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING", "BYTES-LEFT")
	var left int64
	for _, p := range ps {
		tb.row(p.Topic, p.Partition, int32s(p.Replicas), int32s(p.Adding), int32s(p.Removing), formatBytes(p.BytesLeft))
		left += p.BytesLeft
	}
	if err := tb.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s in flight, %s to copy.\n", plural(len(ps), "move", "moves"), formatBytes(left))
	return nil
}

// cancelResult is what --cancel did, for --json.
type cancelResult struct {
	Cancelled     []result `json:"cancelled"`
	StillInFlight int      `json:"still_in_flight"`
	// ThrottlesRemoved is set when the throttles were removed.
	ThrottlesRemoved *throttlesRemoved `json:"throttles_removed,omitempty"`
}

// throttlesRemoved names where throttle configs were deleted.
type throttlesRemoved struct {
	Brokers []int32  `json:"brokers"`
	Topics  []string `json:"topics"`
}

func (t throttlesRemoved) print(w io.Writer) {
	if len(t.Brokers) == 0 && len(t.Topics) == 0 {
		fmt.Fprintln(w, "No replication throttle is set.")
		return
	}
	fmt.Fprintf(w, "Removed the replication throttles of brokers %s and topics %s.\n",
		int32s(t.Brokers), orDash(strings.Join(t.Topics, ",")))
}

// cancelReassignments cancels the moves of ps (those of topic and
// partitions only, when given) and, when none is left in flight or
// clearThr is set, removes the throttles.
func cancelReassignments(cmd *cobra.Command, o *clientOptions, p *op, ps []moveProgress, topic string, partitions []int32, clearThr bool) error {
	ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	var (
		req    kadm.AlterPartitionAssignmentsReq
		chosen []moveProgress
		res    = cancelResult{Cancelled: []result{}}
	)
	for _, m := range ps {
		if topic != "" && m.Topic != topic || len(partitions) > 0 && !slices.Contains(partitions, m.Partition) {
			continue
		}
		req.CancelAssign(m.Topic, m.Partition)
		chosen = append(chosen, m)
	}
	failed := 0
	if len(chosen) > 0 {
		rctx, cancel := p.req(ctx)
		resp, err := p.adm.AlterPartitionAssignments(rctx, req)
		cancel()
		if err != nil {
			return fmt.Errorf("cancel moves: %w", err)
		}
		for _, m := range chosen {
			r := result{Name: fmt.Sprintf("%s-%d", m.Topic, m.Partition), Error: "not in the response"}
			if x, ok := resp[m.Topic][m.Partition]; ok {
				r.Error = errString(kafkaErr(x.Err, x.ErrMessage))
			}
			if r.Error != "" {
				failed++
				fmt.Fprintf(errOut, "gregor: partition %s: %s\n", r.Name, r.Error)
			} else if !o.json {
				fmt.Fprintf(out, "Cancelled the move of %s\n", r.Name)
			}
			res.Cancelled = append(res.Cancelled, r)
		}
	} else if !o.json {
		fmt.Fprintln(out, "No move to cancel.")
	}
	left, err := listAllReassignments(ctx, p)
	if err != nil {
		return err
	}
	res.StillInFlight = len(left)
	if len(left) == 0 || clearThr {
		t, err := clearAllThrottles(ctx, p)
		if err != nil {
			return err
		}
		res.ThrottlesRemoved = &t
		if !o.json {
			t.print(out)
		}
	} else if !o.json {
		fmt.Fprintf(out, "%s still in flight: the throttles stay.\n", plural(len(left), "move is", "moves are"))
	}
	if o.json {
		if err := writeJSON(out, res); err != nil {
			return err
		}
	}
	return failures(failed, len(chosen), "cancels")
}

// clearAllThrottles removes the throttle configs from every broker and
// topic that has them set.
func clearAllThrottles(ctx context.Context, p *op) (throttlesRemoved, error) {
	res := throttlesRemoved{Brokers: []int32{}, Topics: []string{}}
	md, err := p.metadata(ctx)
	if err != nil {
		return res, err
	}
	for _, b := range md.Brokers {
		rctx, cancel := p.req(ctx)
		rcs, err := p.adm.DescribeBrokerConfigs(rctx, b.NodeID)
		cancel()
		if err != nil {
			return res, fmt.Errorf("configs of broker %d: %w", b.NodeID, err)
		}
		if hasDynamic(rcs, kmsg.ConfigSourceDynamicBrokerConfig, leaderThrottleRate, followerThrottleRate) {
			res.Brokers = append(res.Brokers, b.NodeID)
		}
	}
	if topics := slices.Sorted(maps.Keys(md.Topics)); len(topics) > 0 {
		rctx, cancel := p.req(ctx)
		rcs, err := p.adm.DescribeTopicConfigs(rctx, topics...)
		cancel()
		if err != nil && !errors.As(err, new(*kadm.ShardErrors)) {
			return res, fmt.Errorf("describe topic configs: %w", err)
		}
		for _, rc := range rcs {
			if hasDynamic(kadm.ResourceConfigs{rc}, kmsg.ConfigSourceDynamicTopicConfig, leaderThrottleReplicas, followerThrottleReplica) {
				res.Topics = append(res.Topics, rc.Name)
			}
		}
		slices.Sort(res.Topics)
	}
	return res, clearThrottles(ctx, p, res.Brokers, res.Topics)
}

// hasDynamic reports whether one of names is set in rcs with source.
func hasDynamic(rcs kadm.ResourceConfigs, source kmsg.ConfigSource, names ...string) bool {
	for _, rc := range rcs {
		if rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			if slices.Contains(names, c.Key) && c.Source == source && c.Value != nil {
				return true
			}
		}
	}
	return false
}

// parseByteRate parses a rate in bytes/s: a number, with an optional unit
// KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
func parseByteRate(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("--throttle %q: want a rate in bytes/s above 0, such as 50000000, 50MB or 48MiB", s)
	}
	return n * mult, nil
}

// plural is n and the noun that goes with it: "1 move", "2 moves"; the
// nouns may carry a verb ("move is", "moves are").
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// formatBytes formats n bytes for people: "512 B", "1.5 KiB", "3.0 GiB".
func formatBytes(n int64) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	f, unit := float64(n)/(1<<10), "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if f < 1<<10 {
			break
		}
		f, unit = f/(1<<10), u
	}
	return fmt.Sprintf("%.1f %s", f, unit)
}
