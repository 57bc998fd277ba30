package franzsuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// adminTopics creates a topic with a config, checks that a second create
// fails with TOPIC_ALREADY_EXISTS, lists and describes it (partitions,
// leaders, replicas, the config), grows it to 5 partitions and deletes it.
func (s *suite) adminTopics(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	cl, err := s.client(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	cctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	retention := "123456789"
	resp, err := adm.CreateTopic(cctx, 3, 1, map[string]*string{"retention.ms": &retention}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return "", fmt.Errorf("create topic: %w (%s)", err, resp.ErrMessage)
	}
	if resp.NumPartitions != 3 || resp.ReplicationFactor != 1 {
		return "", fmt.Errorf("create topic answered %d partitions, replication factor %d; want 3, 1", resp.NumPartitions, resp.ReplicationFactor)
	}
	if c, ok := resp.Configs["retention.ms"]; !ok || c.MaybeValue() != retention {
		return "", fmt.Errorf("create topic answered retention.ms %q (present %v), want %s", c.MaybeValue(), ok, retention)
	}

	dctx, cancel := t.Step(ctx, "create the topic again")
	defer cancel()
	// kadm returns the topic's error also as the call's error.
	again, err := adm.CreateTopic(dctx, 3, 1, nil, topic)
	if err == nil {
		err = again.Err
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return "", fmt.Errorf("second create of %s answered %s, want TOPIC_ALREADY_EXISTS", topic, compat.Said(err))
	}

	lctx, cancel := t.Step(ctx, "list and describe")
	defer cancel()
	err = compat.Eventually(lctx, func(ctx context.Context) error {
		all, err := adm.ListTopics(ctx)
		if err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		if !all.Has(topic) {
			return fmt.Errorf("list topics: %s missing from %d topics", topic, len(all))
		}
		return describeTopic(ctx, adm, topic, 3)
	})
	if err != nil {
		return "", err
	}
	if err := topicConfig(lctx, adm, topic, "retention.ms", retention, kmsg.ConfigSourceDynamicTopicConfig); err != nil {
		return "", err
	}

	pctx, cancel := t.Step(ctx, "add partitions")
	defer cancel()
	grown, err := adm.UpdatePartitions(pctx, 5, topic)
	if err == nil {
		var r kadm.CreatePartitionsResponse
		if r, err = grown.On(topic, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		return "", fmt.Errorf("grow to 5 partitions: %w", err)
	}
	err = compat.Eventually(pctx, func(ctx context.Context) error { return describeTopic(ctx, adm, topic, 5) })
	if err != nil {
		return "", err
	}

	xctx, cancel := t.Step(ctx, "delete topic")
	defer cancel()
	del, err := adm.DeleteTopic(xctx, topic)
	if err == nil {
		err = del.Err
	}
	if err != nil {
		return "", fmt.Errorf("delete topic: %w (%s)", err, del.ErrMessage)
	}
	err = compat.Poll(xctx, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		all, err := adm.ListTopics(ctx)
		if err != nil {
			return false, "", fmt.Errorf("list topics: %w", err)
		}
		return !all.Has(topic), "the deleted topic is still listed", nil
	})
	if err != nil {
		return "", err
	}
	return "created with retention.ms, listed, described, grown 3 to 5 partitions, deleted", nil
}

// describeTopic checks that topic has n partitions, each with a leader that
// is its single replica and in sync.
func describeTopic(ctx context.Context, adm *kadm.Client, topic string, n int) error {
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("describe %s: %w", topic, err)
	}
	td, ok := tds[topic]
	if !ok {
		return fmt.Errorf("describe %s: not in the answer", topic)
	}
	if td.Err != nil {
		return fmt.Errorf("describe %s: %w", topic, td.Err)
	}
	if td.ID == (kadm.TopicID{}) {
		return fmt.Errorf("describe %s: topic ID is all zero", topic)
	}
	if len(td.Partitions) != n {
		return fmt.Errorf("describe %s: %d partitions, want %d", topic, len(td.Partitions), n)
	}
	for p := range int32(n) {
		pd, ok := td.Partitions[p]
		switch {
		case !ok:
			return fmt.Errorf("describe %s: partition %d missing", topic, p)
		case pd.Err != nil:
			return fmt.Errorf("describe %s: partition %d: %w", topic, p, pd.Err)
		case pd.Leader < 0 || !slices.Equal(pd.Replicas, []int32{pd.Leader}) || !slices.Equal(pd.ISR, []int32{pd.Leader}):
			return fmt.Errorf("describe %s: partition %d leader %d replicas %v ISR %v, want the leader as the single replica, in sync",
				topic, p, pd.Leader, pd.Replicas, pd.ISR)
		}
	}
	return nil
}

// topicConfig waits until DescribeConfigs answers value and source for a
// topic config (a KRaft broker applies a change a moment after answering
// the request that made it).
func topicConfig(ctx context.Context, adm *kadm.Client, topic, key, value string, source kmsg.ConfigSource) error {
	return compat.Eventually(ctx, func(ctx context.Context) error {
		c, err := describeConfig(ctx, adm, topic, key)
		if err != nil {
			return err
		}
		if c.MaybeValue() != value || c.Source != source {
			return fmt.Errorf("config %s of %s is %q from %s, want %q from %s", key, topic, c.MaybeValue(), c.Source, value, source)
		}
		return nil
	})
}

func describeConfig(ctx context.Context, adm *kadm.Client, topic, key string) (kadm.Config, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return kadm.Config{}, fmt.Errorf("describe configs of %s: %w", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return kadm.Config{}, fmt.Errorf("describe configs of %s: %w (%s)", topic, err, rc.ErrMessage)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c, nil
		}
	}
	return kadm.Config{}, fmt.Errorf("describe configs of %s: %s missing from %d configs", topic, key, len(rc.Configs))
}

// adminConfigs describes a new topic's configs, sets two with
// IncrementalAlterConfigs, reads them back, deletes one of them (back to
// its default, the other kept), checks that an invalid value is refused
// with INVALID_CONFIG, and that the legacy AlterConfigs replaces the whole
// set.
func (s *suite) adminConfigs(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	cl, err := s.client(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(cctx, adm, topic, 3, nil); err != nil {
		return "", err
	}

	dctx, cancel := t.Step(ctx, "describe defaults")
	defer cancel()
	if err := topicConfig(dctx, adm, topic, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig); err != nil {
		return "", err
	}
	var def, defRetention kadm.Config
	err = compat.Eventually(dctx, func(ctx context.Context) (err error) {
		if def, err = describeConfig(ctx, adm, topic, "max.message.bytes"); err == nil {
			defRetention, err = describeConfig(ctx, adm, topic, "retention.ms")
		}
		return err
	})
	if err != nil {
		return "", err
	}
	for _, c := range []kadm.Config{def, defRetention} {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig || c.MaybeValue() == "" {
			return "", fmt.Errorf("%s of a new topic is %q from %s, want a default", c.Key, c.MaybeValue(), c.Source)
		}
	}

	actx, cancel := t.Step(ctx, "incremental alter")
	defer cancel()
	alter := func(ctx context.Context, cs ...kadm.AlterConfig) error {
		rs, err := adm.AlterTopicConfigs(ctx, cs, topic)
		if err != nil {
			return err
		}
		r, err := rs.On(topic, nil)
		if err == nil && r.Err != nil {
			err = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
		}
		return err
	}
	retention, maxBytes := "3600000", "200000"
	if err := alter(actx,
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: &retention},
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &maxBytes},
	); err != nil {
		return "", fmt.Errorf("set retention.ms and max.message.bytes: %w", err)
	}
	for key, value := range map[string]string{"retention.ms": retention, "max.message.bytes": maxBytes} {
		if err := topicConfig(actx, adm, topic, key, value, kmsg.ConfigSourceDynamicTopicConfig); err != nil {
			return "", fmt.Errorf("after set: %w", err)
		}
	}

	xctx, cancel := t.Step(ctx, "incremental delete")
	defer cancel()
	if err := alter(xctx, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "max.message.bytes"}); err != nil {
		return "", fmt.Errorf("delete max.message.bytes: %w", err)
	}
	if err := topicConfig(xctx, adm, topic, "max.message.bytes", def.MaybeValue(), def.Source); err != nil {
		return "", fmt.Errorf("after delete: %w", err)
	}
	if err := topicConfig(xctx, adm, topic, "retention.ms", retention, kmsg.ConfigSourceDynamicTopicConfig); err != nil {
		return "", fmt.Errorf("after deleting another config: %w", err)
	}

	ictx, cancel := t.Step(ctx, "invalid value")
	defer cancel()
	bad := "not-a-number"
	err = alter(ictx, kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: &bad})
	if !errors.Is(err, kerr.InvalidConfig) {
		return "", fmt.Errorf("setting retention.ms to %q answered %s, want INVALID_CONFIG", bad, compat.Said(err))
	}
	if err := topicConfig(ictx, adm, topic, "retention.ms", retention, kmsg.ConfigSourceDynamicTopicConfig); err != nil {
		return "", fmt.Errorf("after the refused alter: %w", err)
	}
	// The legacy AlterConfigs replaces a topic's whole set of configs:
	// retention.ms, set before, goes back to its default.
	lctx, cancel := t.Step(ctx, "legacy alter")
	defer cancel()
	compact := "compact"
	rs, err := adm.AlterTopicConfigsState(lctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: &compact}}, topic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = rs.On(topic, nil); err == nil && r.Err != nil {
			err = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
		}
	}
	if err != nil {
		return "", fmt.Errorf("AlterConfigs cleanup.policy=compact: %w", err)
	}
	if err := topicConfig(lctx, adm, topic, "cleanup.policy", compact, kmsg.ConfigSourceDynamicTopicConfig); err != nil {
		return "", fmt.Errorf("after AlterConfigs: %w", err)
	}
	if err := topicConfig(lctx, adm, topic, "retention.ms", defRetention.MaybeValue(), defRetention.Source); err != nil {
		return "", fmt.Errorf("after AlterConfigs of another config (it replaces them all): %w", err)
	}
	return "described defaults, set 2 configs, deleted 1, invalid value refused, legacy AlterConfigs replaced all", nil
}

// adminGroups has a member of a group read a topic and commit, then lists
// the group, describes it (Stable, the member, its assignment), fetches its
// offsets, checks that deleting it while the member is in it fails with
// NON_EMPTY_GROUP, and after the member left sees it Empty and deletes it.
func (s *suite) adminGroups(ctx context.Context, t *compat.T) (string, error) {
	topic, group := t.Name(""), t.Name("g")
	recs := compat.Generate(700, 30, 3, compat.BaseTime())
	if err := s.setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}
	m, err := s.client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return "", err
	}
	defer m.Close()
	rctx, cancel := t.Step(ctx, "member reads and commits")
	defer cancel()
	n := 0
	epochs := make(map[int32]int32) // leader epoch of the last record read, per partition
	err = compat.Poll(rctx, 0, func(ctx context.Context) (bool, string, error) {
		fs := m.PollFetches(ctx)
		if err := fetchErr(fs); err != nil {
			return false, "", err
		}
		fs.EachRecord(func(kr *kgo.Record) { epochs[kr.Partition] = kr.LeaderEpoch })
		n += fs.NumRecords()
		return n >= len(recs), fmt.Sprintf("member read %d of %d records", n, len(recs)), nil
	})
	if err != nil {
		return "", err
	}
	if err := m.CommitUncommittedOffsets(rctx); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}

	cl, err := s.client(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	lctx, cancel := t.Step(ctx, "list groups")
	defer cancel()
	listed, err := adm.ListGroups(lctx)
	if err != nil {
		return "", fmt.Errorf("list groups: %w", err)
	}
	lg, ok := listed[group]
	if !ok {
		return "", fmt.Errorf("list groups: %s missing from %d groups", group, len(listed))
	}
	if lg.ProtocolType != "consumer" || lg.State != "Stable" {
		return "", fmt.Errorf("list groups: %s has protocol type %q state %q, want consumer, Stable", group, lg.ProtocolType, lg.State)
	}
	// ListGroups filtered by state (v4+).
	for state, want := range map[string]bool{"Stable": true, "Empty": false} {
		listed, err := adm.ListGroups(lctx, state)
		if err != nil {
			return "", fmt.Errorf("list groups in state %s: %w", state, err)
		}
		if _, ok := listed[group]; ok != want {
			return "", fmt.Errorf("list groups in state %s: %s listed %v, want %v", state, group, ok, want)
		}
	}

	dctx, cancel := t.Step(ctx, "describe group")
	defer cancel()
	dg, err := describeGroup(dctx, adm, group)
	if err != nil {
		return "", err
	}
	if dg.State != "Stable" || dg.ProtocolType != "consumer" || dg.Protocol == "" || len(dg.Members) != 1 {
		return "", fmt.Errorf("describe group: state %q protocol type %q protocol %q with %d members, want Stable, consumer, the assignor, 1 member",
			dg.State, dg.ProtocolType, dg.Protocol, len(dg.Members))
	}
	dm := dg.Members[0]
	if dm.ClientID != clientID || dm.MemberID == "" {
		return "", fmt.Errorf("describe group: member %q client id %q, want a member id and %q", dm.MemberID, dm.ClientID, clientID)
	}
	assigned := dg.AssignedPartitions()
	if ps := assigned.Sorted(); len(ps) != 1 || ps[0].Topic != topic || !slices.Equal(ps[0].Partitions, []int32{0, 1, 2}) {
		return "", fmt.Errorf("describe group: member assigned %v, want %s partitions [0 1 2]", ps, topic)
	}

	fctx, cancel := t.Step(ctx, "fetch offsets")
	defer cancel()
	offs, err := adm.FetchOffsets(fctx, group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return "", fmt.Errorf("fetch offsets: %w", err)
	}
	for p, n := range compat.Counts(recs) {
		// The commit carried the leader epoch of the last record read
		// (OffsetCommit v6+); OffsetFetch v5+ returns it.
		o, ok := offs.Lookup(topic, p)
		if !ok || o.At != int64(n) || o.LeaderEpoch != epochs[p] {
			return "", fmt.Errorf("fetch offsets: partition %d committed %d epoch %d (present %v), want %d epoch %d", p, o.At, o.LeaderEpoch, ok, n, epochs[p])
		}
	}

	xctx, cancel := t.Step(ctx, "delete while a member is in it")
	defer cancel()
	// kadm returns the group's error also as the call's error.
	busy, err := adm.DeleteGroup(xctx, group)
	if err == nil {
		err = busy.Err
	}
	if !errors.Is(err, kerr.NonEmptyGroup) {
		return "", fmt.Errorf("deleting a group with a member answered %s, want NON_EMPTY_GROUP", compat.Said(err))
	}

	ectx, cancel := t.Step(ctx, "member leaves; group Empty")
	defer cancel()
	if err := m.LeaveGroupContext(ectx); err != nil {
		return "", fmt.Errorf("leave group: %w", err)
	}
	m.Close()
	err = compat.Poll(ectx, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		dg, err := describeGroup(ctx, adm, group)
		if err != nil {
			return false, "", err
		}
		return dg.State == "Empty" && len(dg.Members) == 0, fmt.Sprintf("group %s with %d members", dg.State, len(dg.Members)), nil
	})
	if err != nil {
		return "", err
	}

	gctx, cancel := t.Step(ctx, "delete group")
	defer cancel()
	gone, err := adm.DeleteGroup(gctx, group)
	if err == nil {
		err = gone.Err
	}
	if err != nil {
		return "", fmt.Errorf("delete group: %w", err)
	}
	listed, err = adm.ListGroups(gctx)
	if err != nil {
		return "", fmt.Errorf("list groups after delete: %w", err)
	}
	if _, ok := listed[group]; ok {
		return "", fmt.Errorf("list groups: deleted group %s still listed", group)
	}
	return "listed Stable, described 1 member on 3 partitions, offsets fetched, delete refused while active, Empty after leave, deleted", nil
}

func describeGroup(ctx context.Context, adm *kadm.Client, group string) (kadm.DescribedGroup, error) {
	dgs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return kadm.DescribedGroup{}, fmt.Errorf("describe group: %w", err)
	}
	dg, ok := dgs[group]
	if !ok {
		return dg, fmt.Errorf("describe group: %s not in the answer", group)
	}
	if dg.Err != nil {
		return dg, fmt.Errorf("describe group: %w (%s)", dg.Err, dg.ErrMessage)
	}
	return dg, nil
}
