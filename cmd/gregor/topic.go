package main

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newTopicCmd returns `gregor topic` and its subcommands.
func newTopicCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, alter and delete topics",
		Args:  cobra.NoArgs,
	}
	o.addFlags(cmd)
	o.addTimeoutFlag(cmd)
	cmd.AddCommand(
		newTopicCreateCmd(o),
		newTopicListCmd(o),
		newTopicDescribeCmd(o),
		newTopicDeleteCmd(o),
		newTopicAlterConfigCmd(o),
		newTopicAddPartitionsCmd(o),
	)
	return cmd
}

// kafkaErr adds the broker's error message, when it sent one, to err.
func kafkaErr(err error, msg string) error {
	if err == nil || msg == "" || strings.Contains(err.Error(), msg) {
		return err
	}
	return fmt.Errorf("%w: %s", err, msg)
}

// createTopicErr is the error of a kadm CreateTopic call with the broker's
// message: CreateTopic returns the topic's error code alone as its error,
// and the message only in the response.
func createTopicErr(r kadm.CreateTopicResponse, err error) error {
	if r.Err != nil {
		return kafkaErr(r.Err, r.ErrMessage)
	}
	return err
}

// failures is the error of a command that acts on several names and
// failed for some: each failure was reported already.
func failures(failed, total int, what string) error {
	if failed == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d %s failed", failed, total, what)
}

func newTopicCreateCmd(o *clientOptions) *cobra.Command {
	var (
		partitions int32
		rf         int16
		configs    []string
	)
	cmd := &cobra.Command{
		Use:     "create NAME",
		Short:   "Create a topic",
		Example: `  gregor topic create orders -p 6 -r 3 -c retention.ms=86400000 -c cleanup.policy=compact`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kvs, err := parseKeyValues("-c", configs)
			if err != nil {
				return err
			}
			cfg := make(map[string]*string, len(kvs))
			for _, kv := range kvs {
				cfg[kv[0]] = &kv[1]
			}
			a, err := o.newAdmin(cmd)
			if err != nil {
				return err
			}
			defer a.close()
			r, err := a.CreateTopic(a.ctx, partitions, rf, cfg, args[0])
			if err = createTopicErr(r, err); err != nil {
				return fmt.Errorf("create topic %s: %w", args[0], err)
			}
			if o.json {
				return writeJSON(cmd.OutOrStdout(), map[string]any{
					"topic": r.Topic, "id": topicID(r.ID), "partitions": r.NumPartitions, "replication_factor": r.ReplicationFactor,
				})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Created topic %s with %d partitions, replication factor %d\n",
				r.Topic, r.NumPartitions, r.ReplicationFactor)
			return nil
		},
	}
	f := cmd.Flags()
	f.Int32VarP(&partitions, "partitions", "p", -1, "number of partitions (-1: the broker's num.partitions)")
	f.Int16VarP(&rf, "replication-factor", "r", -1, "replicas of each partition (-1: the broker's default.replication.factor)")
	f.StringArrayVarP(&configs, "config", "c", nil, "topic config `KEY=VALUE` (repeatable)")
	return cmd
}

// topicID formats a topic id as Kafka's tools do: URL-safe base64
// without padding.
func topicID(id kadm.TopicID) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// topicSummary is a line of `topic list`.
type topicSummary struct {
	Topic             string `json:"topic"`
	ID                string `json:"id"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal"`
}

func newTopicListCmd(o *clientOptions) *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the topics",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := o.newAdmin(cmd)
			if err != nil {
				return err
			}
			defer a.close()
			list := a.ListTopics
			if internal {
				list = a.ListTopicsWithInternal
			}
			ts, err := list(a.ctx)
			if err != nil {
				return fmt.Errorf("list topics: %w", err)
			}
			out := []topicSummary{}
			for _, t := range ts.Sorted() {
				if t.Err != nil {
					return fmt.Errorf("list topics: %s: %w", t.Topic, t.Err)
				}
				out = append(out, topicSummary{
					Topic: t.Topic, ID: topicID(t.ID), Partitions: len(t.Partitions),
					ReplicationFactor: t.Partitions.NumReplicas(), Internal: t.IsInternal,
				})
			}
			if o.json {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			tb := newTable(cmd.OutOrStdout(), "TOPIC", "PARTITIONS", "REPLICATION-FACTOR")
			for _, t := range out {
				tb.row(t.Topic, t.Partitions, t.ReplicationFactor)
			}
			return tb.flush()
		},
	}
	cmd.Flags().BoolVar(&internal, "internal", false, "also list internal topics (__consumer_offsets, ...)")
	return cmd
}

// topicDescription is what `topic describe` shows of a topic.
type topicDescription struct {
	Topic             string          `json:"topic"`
	ID                string          `json:"id"`
	Internal          bool            `json:"internal"`
	ReplicationFactor int             `json:"replication_factor"`
	Partitions        []partitionInfo `json:"partitions"`
	// Configs are the configs that are not at their default: set on the
	// topic, or inherited from a broker setting.
	Configs []configEntry `json:"configs"`
}

type partitionInfo struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas"`
	Error           string  `json:"error,omitempty"`
}

// configEntry is one config of a topic or broker.
type configEntry struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Source    string  `json:"source"`
	Sensitive bool    `json:"sensitive,omitempty"`
}

func (c configEntry) valueString() string {
	switch {
	case c.Sensitive:
		return "(sensitive)"
	case c.Value == nil:
		return "(null)"
	}
	return *c.Value
}

// configEntries converts configs, keeping those keep accepts.
func configEntries(cs []kadm.Config, keep func(kadm.Config) bool) []configEntry {
	out := []configEntry{}
	for _, c := range cs {
		if keep != nil && !keep(c) {
			continue
		}
		out = append(out, configEntry{Name: c.Key, Value: c.Value, Source: c.Source.String(), Sensitive: c.Sensitive})
	}
	slices.SortFunc(out, func(a, b configEntry) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func newTopicDescribeCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:               "describe NAME...",
		Short:             "Show topics' partitions (leader, replicas, ISR) and the configs that are not default",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := o.newAdmin(cmd)
			if err != nil {
				return err
			}
			defer a.close()
			md, err := a.Metadata(a.ctx, args...)
			if err != nil {
				return fmt.Errorf("describe topics: %w", err)
			}
			rcs, err := a.DescribeTopicConfigs(a.ctx, args...)
			if err != nil && !errors.As(err, new(*kadm.ShardErrors)) {
				return fmt.Errorf("describe topic configs: %w", err)
			}
			var (
				out    []topicDescription
				failed int
			)
			for _, name := range args {
				t, ok := md.Topics[name]
				if !ok || t.Err != nil {
					err := t.Err
					if err == nil {
						err = errors.New("not in the metadata response")
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "gregor: topic %s: %v\n", name, err)
					failed++
					continue
				}
				d := topicDescription{
					Topic: name, ID: topicID(t.ID), Internal: t.IsInternal,
					ReplicationFactor: t.Partitions.NumReplicas(), Partitions: []partitionInfo{},
				}
				for _, p := range t.Partitions.Sorted() {
					d.Partitions = append(d.Partitions, partitionInfo{
						Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
						Replicas: p.Replicas, ISR: p.ISR, OfflineReplicas: p.OfflineReplicas, Error: errString(p.Err),
					})
				}
				rc, err := rcs.On(name, nil)
				if err == nil {
					err = kafkaErr(rc.Err, rc.ErrMessage)
				}
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "gregor: configs of topic %s: %v\n", name, err)
					failed++
				}
				d.Configs = configEntries(rc.Configs, func(c kadm.Config) bool {
					return c.Source != kmsg.ConfigSourceDefaultConfig
				})
				out = append(out, d)
			}
			if o.json {
				if out == nil {
					out = []topicDescription{}
				}
				if err := writeJSON(cmd.OutOrStdout(), out); err != nil {
					return err
				}
			} else if err := printTopicDescriptions(cmd, out); err != nil {
				return err
			}
			return failures(failed, len(args), "topics")
		},
	}
}

func printTopicDescriptions(cmd *cobra.Command, ds []topicDescription) error {
	w := cmd.OutOrStdout()
	for i, d := range ds {
		if i > 0 {
			fmt.Fprintln(w)
		}
		internal := ""
		if d.Internal {
			internal = "  (internal)"
		}
		fmt.Fprintf(w, "Topic: %s  ID: %s  Partitions: %d  Replication factor: %d%s\n",
			d.Topic, d.ID, len(d.Partitions), d.ReplicationFactor, internal)
		if len(d.Configs) == 0 {
			fmt.Fprintln(w, "Configs: all default")
		} else {
			fmt.Fprintln(w, "Configs:")
			tb := newTable(w)
			for _, c := range d.Configs {
				tb.row("  "+c.Name+"="+c.valueString(), c.Source)
			}
			if err := tb.flush(); err != nil {
				return err
			}
		}
		tb := newTable(w, "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "ERROR")
		for _, p := range d.Partitions {
			tb.row(p.Partition, p.Leader, p.LeaderEpoch, int32s(p.Replicas), int32s(p.ISR), int32s(p.OfflineReplicas), orDash(p.Error))
		}
		if err := tb.flush(); err != nil {
			return err
		}
	}
	return nil
}

// result is the outcome for one name of a command that acts on several.
type result struct {
	Name  string `json:"name"`
	Error string `json:"error,omitempty"`
}

// printResults prints what a command did to each name: done, in the past
// tense, for those that succeeded, the error on stderr for the others. It
// returns the error for the exit status.
func printResults(cmd *cobra.Command, o *clientOptions, done, what string, rs []result) error {
	failed := 0
	for _, r := range rs {
		if r.Error != "" {
			failed++
			fmt.Fprintf(cmd.ErrOrStderr(), "gregor: %s %s: %s\n", what, r.Name, r.Error)
		} else if !o.json {
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s\n", done, what, r.Name)
		}
	}
	if o.json {
		if err := writeJSON(cmd.OutOrStdout(), rs); err != nil {
			return err
		}
	}
	return failures(failed, len(rs), what+"s")
}

func newTopicDeleteCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:               "delete NAME...",
		Short:             "Delete topics and their data",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := o.newAdmin(cmd)
			if err != nil {
				return err
			}
			defer a.close()
			resp, err := a.DeleteTopics(a.ctx, args...)
			if err != nil {
				return fmt.Errorf("delete topics: %w", err)
			}
			rs := make([]result, 0, len(args))
			for _, name := range args {
				r, ok := resp[name]
				switch {
				case !ok:
					rs = append(rs, result{Name: name, Error: "not in the response"})
				default:
					rs = append(rs, result{Name: name, Error: errString(kafkaErr(r.Err, r.ErrMessage))})
				}
			}
			return printResults(cmd, o, "Deleted", "topic", rs)
		},
	}
}

func newTopicAlterConfigCmd(o *clientOptions) *cobra.Command {
	var set, del []string
	cmd := &cobra.Command{
		Use:               "alter-config NAME...",
		Short:             "Set or delete topic configs (incrementally: other configs stay as they are)",
		Example:           `  gregor topic alter-config orders --set retention.ms=3600000 --delete cleanup.policy`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			kvs, err := parseKeyValues("--set", set)
			if err != nil {
				return err
			}
			if len(kvs) == 0 && len(del) == 0 {
				return errors.New("nothing to do: give --set KEY=VALUE or --delete KEY")
			}
			var alter []kadm.AlterConfig
			for _, kv := range kvs {
				alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[0], Value: &kv[1]})
			}
			for _, k := range del {
				alter = append(alter, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			}
			a, err := o.newAdmin(cmd)
			if err != nil {
				return err
			}
			defer a.close()
			resp, err := a.AlterTopicConfigs(a.ctx, alter, args...)
			if err != nil && !errors.As(err, new(*kadm.ShardErrors)) {
				return fmt.Errorf("alter topic configs: %w", err)
			}
			rs := make([]result, 0, len(args))
			for _, name := range args {
				r := result{Name: name, Error: "not in the response"}
				for _, x := range resp {
					if x.Name == name {
						r.Error = errString(kafkaErr(x.Err, x.ErrMessage))
					}
				}
				rs = append(rs, r)
			}
			return printResults(cmd, o, "Altered the configs of", "topic", rs)
		},
	}
	cmd.Flags().StringArrayVar(&set, "set", nil, "set config `KEY=VALUE` (repeatable)")
	cmd.Flags().StringArrayVar(&del, "delete", nil, "delete config `KEY`, so that its default applies (repeatable)")
	return cmd
}

func newTopicAddPartitionsCmd(o *clientOptions) *cobra.Command {
	var count int
	cmd := &cobra.Command{
		Use:   "add-partitions NAME...",
		Short: "Add partitions to topics",
		Long: `Add --count partitions to each topic. Partitions can be added, never
removed; records with keys may map to other partitions afterwards.`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 1 {
				return errors.New("--count: want 1 or more partitions to add")
			}
			a, err := o.newAdmin(cmd)
			if err != nil {
				return err
			}
			defer a.close()
			resp, err := a.CreatePartitions(a.ctx, count, args...)
			if err != nil && !errors.As(err, new(*kadm.ShardErrors)) {
				return fmt.Errorf("add partitions: %w", err)
			}
			rs := make([]result, 0, len(args))
			for _, name := range args {
				r, ok := resp[name]
				if !ok {
					rs = append(rs, result{Name: name, Error: "not in the response"})
					continue
				}
				rs = append(rs, result{Name: name, Error: errString(kafkaErr(r.Err, r.ErrMessage))})
			}
			return printResults(cmd, o, fmt.Sprintf("Added %d partitions to", count), "topic", rs)
		},
	}
	cmd.Flags().IntVar(&count, "count", 0, "number of partitions to add")
	return cmd
}
