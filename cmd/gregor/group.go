package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// newGroupCmd returns `gregor group` and its subcommands.
func newGroupCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe, reset and delete consumer groups",
		Args:  cobra.NoArgs,
	}
	o.addFlags(cmd)
	o.addTimeoutFlag(cmd)
	cmd.AddCommand(
		newGroupListCmd(o),
		newGroupDescribeCmd(o),
		newGroupResetOffsetsCmd(o),
		newGroupDeleteCmd(o),
	)
	return cmd
}

// groupSummary is a line of `group list`.
type groupSummary struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

func newGroupListCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the consumer groups",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := o.newAdmin(cmd)
			if err != nil {
				return err
			}
			defer a.close()
			gs, err := a.ListGroups(a.ctx)
			if err != nil {
				return fmt.Errorf("list groups: %w", err)
			}
			out := []groupSummary{}
			for _, g := range gs.Sorted() {
				out = append(out, groupSummary{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
			}
			if o.json {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			tb := newTable(cmd.OutOrStdout(), "GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR")
			for _, g := range out {
				tb.row(g.Group, orDash(g.State), orDash(g.ProtocolType), g.Coordinator)
			}
			return tb.flush()
		},
	}
}

// groupDescription is what `group describe` shows of a group.
type groupDescription struct {
	Group        string        `json:"group"`
	State        string        `json:"state"`
	ProtocolType string        `json:"protocol_type"`
	Protocol     string        `json:"protocol"`
	Coordinator  int32         `json:"coordinator"`
	Members      []groupMember `json:"members"`
	Offsets      []groupOffset `json:"offsets"`
	// TotalLag sums the lag of the partitions whose lag is known.
	TotalLag int64  `json:"total_lag"`
	Error    string `json:"error,omitempty"`
}

type groupMember struct {
	MemberID   string            `json:"member_id"`
	InstanceID *string           `json:"instance_id"`
	ClientID   string            `json:"client_id"`
	ClientHost string            `json:"client_host"`
	Assigned   []topicPartitions `json:"assigned"`
}

type topicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// groupOffset is a partition the group consumes or has committed
// offsets for. Committed is -1 when there is no commit; Lag is -1 when it
// is not known (see Error).
type groupOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	LogStart  int64  `json:"log_start"`
	LogEnd    int64  `json:"log_end"`
	Lag       int64  `json:"lag"`
	MemberID  string `json:"member_id,omitempty"`
	Error     string `json:"error,omitempty"`
}

func describeGroupLag(l kadm.DescribedGroupLag) groupDescription {
	d := groupDescription{
		Group: l.Group, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol,
		Coordinator: l.Coordinator.NodeID, Members: []groupMember{}, Offsets: []groupOffset{},
		Error: errString(l.Error()),
	}
	for _, m := range l.Members {
		gm := groupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assigned: []topicPartitions{}}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				ps := slices.Clone(t.Partitions)
				slices.Sort(ps)
				gm.Assigned = append(gm.Assigned, topicPartitions{Topic: t.Topic, Partitions: ps})
			}
			slices.SortFunc(gm.Assigned, func(a, b topicPartitions) int { return strings.Compare(a.Topic, b.Topic) })
		}
		d.Members = append(d.Members, gm)
	}
	for _, p := range l.Lag.Sorted() {
		o := groupOffset{
			Topic: p.Topic, Partition: p.Partition, Committed: p.Commit.At,
			LogStart: p.Start.Offset, LogEnd: p.End.Offset, Lag: p.Lag, Error: errString(p.Err),
		}
		if p.Member != nil {
			o.MemberID = p.Member.MemberID
		}
		if o.Lag > 0 {
			d.TotalLag += o.Lag
		}
		d.Offsets = append(d.Offsets, o)
	}
	return d
}

func newGroupDescribeCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show groups' state, members and assignments, committed offsets and lag",
		Long: `Show each group's state, protocol and members with the partitions assigned
to them, and for every partition it consumes or has committed offsets for:
the committed offset, the log end offset and the lag between them, and the
total lag of the group. A partition without a committed offset lags by the
records from the log start.`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeGroups(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := o.newAdmin(cmd)
			if err != nil {
				return err
			}
			defer a.close()
			lags, err := a.Lag(a.ctx, args...)
			if err != nil {
				return fmt.Errorf("describe groups: %w", err)
			}
			out := []groupDescription{}
			failed := 0
			for _, g := range args {
				l, ok := lags[g]
				if !ok {
					l = kadm.DescribedGroupLag{Group: g, DescribeErr: errors.New("not in the response")}
				}
				d := describeGroupLag(l)
				if d.Error != "" {
					failed++
					fmt.Fprintf(cmd.ErrOrStderr(), "gregor: group %s: %s\n", g, d.Error)
				}
				out = append(out, d)
			}
			if o.json {
				if err := writeJSON(cmd.OutOrStdout(), out); err != nil {
					return err
				}
			} else if err := printGroupDescriptions(cmd, out); err != nil {
				return err
			}
			return failures(failed, len(args), "groups")
		},
	}
}

// offsetCell formats an offset that may be -1 (none).
func offsetCell(o int64) any {
	if o < 0 {
		return "-"
	}
	return o
}

func printGroupDescriptions(cmd *cobra.Command, ds []groupDescription) error {
	w := cmd.OutOrStdout()
	for i, d := range ds {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if d.Error != "" {
			fmt.Fprintf(w, "Group: %s  Error: %s\n", d.Group, d.Error)
			continue
		}
		protocol := d.ProtocolType
		if d.Protocol != "" {
			protocol += "/" + d.Protocol
		}
		fmt.Fprintf(w, "Group: %s  State: %s  Protocol: %s  Coordinator: %d\n", d.Group, d.State, orDash(protocol), d.Coordinator)
		if len(d.Members) > 0 {
			tb := newTable(w, "MEMBER", "CLIENT-ID", "HOST", "ASSIGNED")
			for _, m := range d.Members {
				var as []string
				for _, tp := range m.Assigned {
					as = append(as, tp.Topic+":"+int32s(tp.Partitions))
				}
				tb.row(m.MemberID, m.ClientID, m.ClientHost, orDash(strings.Join(as, " ")))
			}
			if err := tb.flush(); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(w, "No members")
		}
		if len(d.Offsets) > 0 {
			fmt.Fprintln(w)
			tb := newTable(w, "TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG", "MEMBER", "ERROR")
			for _, p := range d.Offsets {
				tb.row(p.Topic, p.Partition, offsetCell(p.Committed), offsetCell(p.LogEnd), offsetCell(p.Lag), orDash(p.MemberID), orDash(p.Error))
			}
			if err := tb.flush(); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "Total lag: %d\n", d.TotalLag)
	}
	return nil
}

func newGroupDeleteCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:               "delete GROUP...",
		Short:             "Delete groups and their committed offsets (the groups must have no members)",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeGroups(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := o.newAdmin(cmd)
			if err != nil {
				return err
			}
			defer a.close()
			resp, err := a.DeleteGroups(a.ctx, args...)
			if err != nil && !errors.As(err, new(*kadm.ShardErrors)) {
				return fmt.Errorf("delete groups: %w", err)
			}
			rs := make([]result, 0, len(args))
			for _, g := range args {
				r, ok := resp[g]
				if !ok {
					rs = append(rs, result{Name: g, Error: "not in the response"})
					continue
				}
				rs = append(rs, result{Name: g, Error: errString(kafkaErr(r.Err, r.ErrMessage))})
			}
			return printResults(cmd, o, "Deleted", "group", rs)
		},
	}
}
