package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

const resetOffsetsLong = `Compute new committed offsets for a group on the partitions of --topic,
print them next to the current ones and, with --execute, commit them.
Without --execute nothing changes (a dry run).

--topic T takes every partition of T; --topic T:0,2 only partitions 0 and
2. New offsets are kept between the log start and the log end offset of
each partition.

The group must have no members when the offsets are committed: stop its
consumers first.`

// resetOffsetsOptions are the flags of `group reset-offsets`.
type resetOffsetsOptions struct {
	topics     []string
	toEarliest bool
	toLatest   bool
	toOffset   int64
	shiftBy    int64
	execute    bool
}

// offsetReset is one partition's current and new committed offset;
// Current is -1 when the group has not committed one.
type offsetReset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Current   int64  `json:"current"`
	New       int64  `json:"new"`
}

// resetOffsetsResult is what --json prints.
type resetOffsetsResult struct {
	Group    string        `json:"group"`
	Executed bool          `json:"executed"`
	Offsets  []offsetReset `json:"offsets"`
}

func newGroupResetOffsetsCmd(o *clientOptions) *cobra.Command {
	r := &resetOffsetsOptions{}
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP --topic TOPIC[:PARTITIONS] (--to-earliest | --to-latest | --to-offset N | --shift-by N) [--execute]",
		Short: "Move a group's committed offsets (a dry run unless --execute)",
		Long:  resetOffsetsLong,
		Example: `  gregor group reset-offsets audit --topic orders --to-earliest
  gregor group reset-offsets audit --topic orders:0,1 --shift-by -100 --execute`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeGroups(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return resetOffsets(cmd, o, r, args[0])
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&r.topics, "topic", nil, "reset the partitions of `TOPIC`, or TOPIC:0,1 for some of them (repeatable)")
	f.BoolVar(&r.toEarliest, "to-earliest", false, "to the log start offset")
	f.BoolVar(&r.toLatest, "to-latest", false, "to the log end offset")
	f.Int64Var(&r.toOffset, "to-offset", 0, "to offset `N`")
	f.Int64Var(&r.shiftBy, "shift-by", 0, "by `N` from the committed offset (negative: back)")
	f.BoolVar(&r.execute, "execute", false, "commit the new offsets (without it: only print them)")
	cmd.MarkFlagsMutuallyExclusive("to-earliest", "to-latest", "to-offset", "shift-by")
	cmd.MarkFlagsOneRequired("to-earliest", "to-latest", "to-offset", "shift-by")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}

// parseTopicPartitions parses TOPIC or TOPIC:0,1.
func parseTopicPartitions(s string) (string, []int32, error) {
	t, ps, ok := strings.Cut(s, ":")
	if t == "" {
		return "", nil, fmt.Errorf("--topic %q: no topic name", s)
	}
	if !ok {
		return t, nil, nil
	}
	parts, err := parsePartitions(ps)
	if err != nil {
		return "", nil, fmt.Errorf("--topic %q: %w", s, err)
	}
	return t, parts, nil
}

func resetOffsets(cmd *cobra.Command, o *clientOptions, r *resetOffsetsOptions, group string) error {
	// The partitions to reset, by topic; nil means all of them.
	want := map[string][]int32{}
	var topics []string
	for _, s := range r.topics {
		t, ps, err := parseTopicPartitions(s)
		if err != nil {
			return err
		}
		if _, ok := want[t]; !ok {
			topics = append(topics, t)
		}
		want[t] = append(want[t], ps...)
		if ps == nil {
			want[t] = nil
		}
	}

	a, err := o.newAdmin(cmd)
	if err != nil {
		return err
	}
	defer a.close()

	gs, err := a.DescribeGroups(a.ctx, group)
	if err != nil {
		return fmt.Errorf("describe group %s: %w", group, err)
	}
	if g, ok := gs[group]; ok {
		if err := kafkaErr(g.Err, g.ErrMessage); err != nil && !isGroupNotFound(err) {
			return fmt.Errorf("describe group %s: %w", group, err)
		}
		if len(g.Members) > 0 || (g.State != "Empty" && g.State != "Dead" && g.State != "") {
			msg := fmt.Sprintf("group %s is %s with %d members: offsets can only be reset when it has none; stop its consumers first",
				group, g.State, len(g.Members))
			if r.execute {
				return errors.New(msg)
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "gregor: warning:", msg)
		}
	}

	md, err := a.Metadata(a.ctx, topics...)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok {
			return fmt.Errorf("topic %s: not in the metadata response", t)
		}
		if td.Err != nil {
			return fmt.Errorf("topic %s: %w", t, td.Err)
		}
		if want[t] == nil {
			want[t] = td.Partitions.Numbers()
		}
		for _, p := range want[t] {
			if _, ok := td.Partitions[p]; !ok {
				return fmt.Errorf("topic %s has no partition %d", t, p)
			}
		}
	}

	committed, err := a.FetchOffsets(a.ctx, group)
	if err != nil && !isGroupNotFound(err) {
		return fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	starts, err := a.ListStartOffsets(a.ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := a.ListEndOffsets(a.ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}

	res := resetOffsetsResult{Group: group, Executed: r.execute, Offsets: []offsetReset{}}
	var commit kadm.Offsets
	slices.Sort(topics)
	for _, t := range topics {
		ps := slices.Clone(want[t])
		slices.Sort(ps)
		ps = slices.Compact(ps)
		for _, p := range ps {
			start, _ := starts.Lookup(t, p)
			end, _ := ends.Lookup(t, p)
			cur := int64(-1)
			if c, ok := committed.Lookup(t, p); ok && c.Err == nil {
				cur = c.At
			}
			var n int64
			switch {
			case r.toEarliest:
				n = start.Offset
			case r.toLatest:
				n = end.Offset
			case cmd.Flags().Changed("to-offset"):
				n = r.toOffset
			default:
				if cur < 0 {
					return fmt.Errorf("%s partition %d: the group has no committed offset to shift; use --to-offset", t, p)
				}
				n = cur + r.shiftBy
			}
			n = max(start.Offset, min(n, end.Offset))
			res.Offsets = append(res.Offsets, offsetReset{Topic: t, Partition: p, Current: cur, New: n})
			commit.Add(kadm.Offset{Topic: t, Partition: p, At: n, LeaderEpoch: -1})
		}
	}

	if r.execute {
		resp, err := a.CommitOffsets(a.ctx, group, commit)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("commit offsets of group %s: %w", group, err)
		}
	}
	if o.json {
		return writeJSON(cmd.OutOrStdout(), res)
	}
	tb := newTable(cmd.OutOrStdout(), "TOPIC", "PARTITION", "CURRENT", "NEW")
	for _, x := range res.Offsets {
		tb.row(x.Topic, x.Partition, offsetCell(x.Current), x.New)
	}
	if err := tb.flush(); err != nil {
		return err
	}
	if r.execute {
		fmt.Fprintf(cmd.ErrOrStderr(), "Committed the new offsets of group %s\n", group)
	} else {
		fmt.Fprintln(cmd.ErrOrStderr(), "Dry run: nothing changed. Add --execute to commit these offsets.")
	}
	return nil
}

// isGroupNotFound reports whether err says the group does not exist, which
// for a reset only means it has no offsets yet.
func isGroupNotFound(err error) bool {
	return errors.Is(err, kerr.GroupIDNotFound)
}
