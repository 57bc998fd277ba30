package saramasuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

func admin(t *compat.T) (sarama.ClusterAdmin, error) {
	adm, err := sarama.NewClusterAdmin(t.Brokers(), config())
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	return adm, nil
}

// adminTopics creates a topic with a config, checks that a second create
// fails with TOPIC_ALREADY_EXISTS, lists and describes it, grows it to 5
// partitions and deletes it.
func adminTopics(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	adm, err := admin(t)
	if err != nil {
		return "", err
	}
	defer adm.Close()

	_, cancel := t.Step(ctx, "create topic")
	defer cancel()
	retention := "123456789"
	detail := &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1, ConfigEntries: map[string]*string{"retention.ms": &retention}}
	if err := adm.CreateTopic(topic, detail, false); err != nil {
		return "", fmt.Errorf("create topic: %w", err)
	}
	_, cancel = t.Step(ctx, "create the topic again")
	defer cancel()
	if err := adm.CreateTopic(topic, detail, false); !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return "", fmt.Errorf("second create of %s answered %s, want TOPIC_ALREADY_EXISTS", topic, compat.Said(err))
	}

	lctx, cancel := t.Step(ctx, "list and describe")
	defer cancel()
	err = compat.Eventually(lctx, func(context.Context) error {
		all, err := adm.ListTopics()
		if err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		td, ok := all[topic]
		if !ok {
			return fmt.Errorf("list topics: %s missing from %d topics", topic, len(all))
		}
		if td.NumPartitions != 3 || td.ReplicationFactor != 1 {
			return fmt.Errorf("list topics: %s has %d partitions, replication factor %d; want 3, 1", topic, td.NumPartitions, td.ReplicationFactor)
		}
		if v := td.ConfigEntries["retention.ms"]; v == nil || *v != retention {
			return fmt.Errorf("list topics: %s has retention.ms %v, want %s", topic, deref(v), retention)
		}
		return describeTopic(adm, topic, 3)
	})
	if err != nil {
		return "", err
	}

	pctx, cancel := t.Step(ctx, "add partitions")
	defer cancel()
	if err := adm.CreatePartitions(topic, 5, nil, false); err != nil {
		return "", fmt.Errorf("grow to 5 partitions: %w", err)
	}
	err = compat.Eventually(pctx, func(context.Context) error { return describeTopic(adm, topic, 5) })
	if err != nil {
		return "", err
	}

	xctx, cancel := t.Step(ctx, "delete topic")
	defer cancel()
	if err := adm.DeleteTopic(topic); err != nil {
		return "", fmt.Errorf("delete topic: %w", err)
	}
	err = compat.Poll(xctx, 100*time.Millisecond, func(context.Context) (bool, string, error) {
		md, err := adm.DescribeTopics([]string{topic})
		if err != nil {
			return false, "", fmt.Errorf("describe after delete: %w", err)
		}
		if len(md) != 1 {
			return false, "", fmt.Errorf("describe after delete: %d topics in the answer, want 1", len(md))
		}
		return errors.Is(md[0].Err, sarama.ErrUnknownTopicOrPartition),
			fmt.Sprintf("describe of the deleted topic answers %v, want UNKNOWN_TOPIC_OR_PARTITION", md[0].Err), nil
	})
	if err != nil {
		return "", err
	}
	names, err := adm.ListTopics()
	if err != nil {
		return "", fmt.Errorf("list topics after delete: %w", err)
	}
	if _, ok := names[topic]; ok {
		return "", fmt.Errorf("list topics: deleted topic %s still listed", topic)
	}
	return "created with retention.ms, listed, described, grown 3 to 5 partitions, deleted", nil
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// describeTopic checks that topic has an ID and n partitions, each with a
// leader that is its single replica and in sync.
func describeTopic(adm sarama.ClusterAdmin, topic string, n int) error {
	md, err := adm.DescribeTopics([]string{topic})
	if err != nil {
		return fmt.Errorf("describe %s: %w", topic, err)
	}
	if len(md) != 1 || md[0].Name != topic {
		return fmt.Errorf("describe %s: %d topics in the answer", topic, len(md))
	}
	tm := md[0]
	if !errors.Is(tm.Err, sarama.ErrNoError) {
		return fmt.Errorf("describe %s: %w", topic, tm.Err)
	}
	if tm.Uuid == (sarama.Uuid{}) {
		return fmt.Errorf("describe %s: topic ID is all zero", topic)
	}
	if len(tm.Partitions) != n {
		return fmt.Errorf("describe %s: %d partitions, want %d", topic, len(tm.Partitions), n)
	}
	seen := make(map[int32]bool)
	for _, pm := range tm.Partitions {
		seen[pm.ID] = true
		if !errors.Is(pm.Err, sarama.ErrNoError) {
			return fmt.Errorf("describe %s: partition %d: %w", topic, pm.ID, pm.Err)
		}
		if pm.Leader < 0 || !slices.Equal(pm.Replicas, []int32{pm.Leader}) || !slices.Equal(pm.Isr, []int32{pm.Leader}) {
			return fmt.Errorf("describe %s: partition %d leader %d replicas %v ISR %v, want the leader as the single replica, in sync",
				topic, pm.ID, pm.Leader, pm.Replicas, pm.Isr)
		}
	}
	for p := range int32(n) {
		if !seen[p] {
			return fmt.Errorf("describe %s: partition %d missing", topic, p)
		}
	}
	return nil
}

// topicConfig returns one config of topic as DescribeConfigs answers it.
func topicConfig(adm sarama.ClusterAdmin, topic, key string) (sarama.ConfigEntry, error) {
	rs, err := adm.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: topic}}, sarama.DescribeConfigsOptions{})
	if err != nil {
		return sarama.ConfigEntry{}, fmt.Errorf("describe configs of %s: %w", topic, err)
	}
	if len(rs) != 1 || rs[0].Name != topic {
		return sarama.ConfigEntry{}, fmt.Errorf("describe configs of %s: %d resources in the answer", topic, len(rs))
	}
	if rs[0].ErrorCode != sarama.ErrNoError {
		return sarama.ConfigEntry{}, fmt.Errorf("describe configs of %s: %w (%s)", topic, rs[0].ErrorCode, rs[0].ErrorMsg)
	}
	for _, e := range rs[0].Configs {
		if e.Name == key {
			return e, nil
		}
	}
	return sarama.ConfigEntry{}, fmt.Errorf("describe configs of %s: %s missing from %d configs", topic, key, len(rs[0].Configs))
}

// checkConfig waits until DescribeConfigs answers value and source for a
// topic config (a KRaft broker applies a change a moment after answering
// the request that made it).
func checkConfig(ctx context.Context, adm sarama.ClusterAdmin, topic, key, value string, source sarama.ConfigSource) error {
	return compat.Eventually(ctx, func(context.Context) error {
		e, err := topicConfig(adm, topic, key)
		if err != nil {
			return err
		}
		if e.Value != value || e.Source != source {
			return fmt.Errorf("config %s of %s is %q from %s, want %q from %s", key, topic, e.Value, e.Source, value, source)
		}
		return nil
	})
}

// adminConfigs describes a new topic's configs, sets two with
// IncrementalAlterConfigs, reads them back, deletes one (back to its
// default, the other kept), checks that an invalid value is refused with
// INVALID_CONFIG, and that the legacy AlterConfigs replaces the whole set.
func adminConfigs(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	_, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(t, topic, 3); err != nil {
		return "", err
	}
	adm, err := admin(t)
	if err != nil {
		return "", err
	}
	defer adm.Close()

	cctx, cancel := t.Step(ctx, "describe defaults")
	defer cancel()
	if err := checkConfig(cctx, adm, topic, "cleanup.policy", "delete", sarama.SourceDefault); err != nil {
		return "", err
	}
	var def, defRetention sarama.ConfigEntry
	err = compat.Eventually(cctx, func(context.Context) (err error) {
		if def, err = topicConfig(adm, topic, "max.message.bytes"); err == nil {
			defRetention, err = topicConfig(adm, topic, "retention.ms")
		}
		return err
	})
	if err != nil {
		return "", err
	}
	for _, c := range []sarama.ConfigEntry{def, defRetention} {
		if c.Source == sarama.SourceTopic || c.Value == "" {
			return "", fmt.Errorf("%s of a new topic is %q from %s, want a default", c.Name, c.Value, c.Source)
		}
	}

	cctx, cancel = t.Step(ctx, "incremental alter")
	defer cancel()
	retention, maxBytes := "3600000", "200000"
	err = adm.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms":      {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &retention},
		"max.message.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &maxBytes},
	}, false)
	if err != nil {
		return "", fmt.Errorf("set retention.ms and max.message.bytes: %w", err)
	}
	for key, value := range map[string]string{"retention.ms": retention, "max.message.bytes": maxBytes} {
		if err := checkConfig(cctx, adm, topic, key, value, sarama.SourceTopic); err != nil {
			return "", fmt.Errorf("after set: %w", err)
		}
	}

	cctx, cancel = t.Step(ctx, "incremental delete")
	defer cancel()
	err = adm.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"max.message.bytes": {Operation: sarama.IncrementalAlterConfigsOperationDelete},
	}, false)
	if err != nil {
		return "", fmt.Errorf("delete max.message.bytes: %w", err)
	}
	if err := checkConfig(cctx, adm, topic, "max.message.bytes", def.Value, def.Source); err != nil {
		return "", fmt.Errorf("after delete: %w", err)
	}
	if err := checkConfig(cctx, adm, topic, "retention.ms", retention, sarama.SourceTopic); err != nil {
		return "", fmt.Errorf("after deleting another config: %w", err)
	}

	cctx, cancel = t.Step(ctx, "invalid value")
	defer cancel()
	bad := "not-a-number"
	err = adm.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &bad},
	}, false)
	if !errors.Is(err, sarama.ErrInvalidConfig) {
		return "", fmt.Errorf("setting retention.ms to %q answered %s, want INVALID_CONFIG", bad, compat.Said(err))
	}
	if err := checkConfig(cctx, adm, topic, "retention.ms", retention, sarama.SourceTopic); err != nil {
		return "", fmt.Errorf("after the refused alter: %w", err)
	}
	// The legacy AlterConfigs replaces a topic's whole set of configs:
	// retention.ms, set before, goes back to its default.
	cctx, cancel = t.Step(ctx, "legacy alter")
	defer cancel()
	compact := "compact"
	if err := adm.AlterConfig(sarama.TopicResource, topic, map[string]*string{"cleanup.policy": &compact}, false); err != nil {
		return "", fmt.Errorf("AlterConfigs cleanup.policy=compact: %w", err)
	}
	if err := checkConfig(cctx, adm, topic, "cleanup.policy", compact, sarama.SourceTopic); err != nil {
		return "", fmt.Errorf("after AlterConfigs: %w", err)
	}
	if err := checkConfig(cctx, adm, topic, "retention.ms", defRetention.Value, defRetention.Source); err != nil {
		return "", fmt.Errorf("after AlterConfigs of another config (it replaces them all): %w", err)
	}
	return "described defaults, set 2 configs, deleted 1, invalid value refused, legacy AlterConfigs replaced all", nil
}

// adminGroups has a member read a topic and commit, then lists the group,
// describes it (Stable, the member, its assignment), lists its committed
// offsets, checks that deleting it while the member is in it fails with
// NON_EMPTY_GROUP, and after the member left sees it Empty and deletes it.
func adminGroups(ctx context.Context, t *compat.T) (string, error) {
	topic, group := t.Name(""), t.Name("g")
	recs := compat.Generate(710, 30, 3, compat.BaseTime())
	if err := setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}

	rctx, cancel := t.Step(ctx, "member reads and commits")
	defer cancel()
	var (
		mu        sync.Mutex // ConsumeClaim runs one goroutine per partition
		read      int
		committed = make(chan struct{})
	)
	gm, err := join(ctx, t, config(), group, topic, handler{
		message: func(s sarama.ConsumerGroupSession, m *sarama.ConsumerMessage) {
			mu.Lock()
			defer mu.Unlock()
			s.MarkMessage(m, fmt.Sprintf("read by %s", clientID))
			if read++; read == len(recs) {
				s.Commit()
				close(committed)
			}
		},
	})
	if err != nil {
		return "", err
	}
	defer gm.stop()
	select {
	case <-committed:
	case <-rctx.Done():
		return "", fmt.Errorf("%w before the member read all %d records (%s)", rctx.Err(), len(recs), gm.errors())
	}

	adm, err := admin(t)
	if err != nil {
		return "", err
	}
	defer adm.Close()

	_, cancel = t.Step(ctx, "list groups")
	defer cancel()
	groups, err := adm.ListConsumerGroups()
	if err != nil {
		return "", fmt.Errorf("list groups: %w", err)
	}
	if pt, ok := groups[group]; !ok || pt != "consumer" {
		return "", fmt.Errorf("list groups: %s has protocol type %q (listed %v) among %d groups, want consumer", group, pt, ok, len(groups))
	}

	_, cancel = t.Step(ctx, "describe group")
	defer cancel()
	gd, err := describeGroup(adm, group)
	if err != nil {
		return "", err
	}
	if gd.State != "Stable" || gd.ProtocolType != "consumer" || gd.Protocol == "" || len(gd.Members) != 1 {
		return "", fmt.Errorf("describe group: state %q protocol type %q protocol %q with %d members, want Stable, consumer, the assignor, 1 member",
			gd.State, gd.ProtocolType, gd.Protocol, len(gd.Members))
	}
	for id, md := range gd.Members {
		if md.ClientId != clientID || id == "" {
			return "", fmt.Errorf("describe group: member %q client id %q, want a member id and %q", id, md.ClientId, clientID)
		}
		a, err := md.GetMemberAssignment()
		if err != nil {
			return "", fmt.Errorf("describe group: member assignment: %w", err)
		}
		ps := slices.Sorted(slices.Values(a.Topics[topic]))
		if len(a.Topics) != 1 || !slices.Equal(ps, []int32{0, 1, 2}) {
			return "", fmt.Errorf("describe group: member assigned %v, want %s partitions [0 1 2]", a.Topics, topic)
		}
	}

	_, cancel = t.Step(ctx, "list committed offsets")
	defer cancel()
	offs, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2}})
	if err != nil {
		return "", fmt.Errorf("list committed offsets: %w", err)
	}
	if !errors.Is(offs.Err, sarama.ErrNoError) {
		return "", fmt.Errorf("list committed offsets: %w", offs.Err)
	}
	for p, n := range compat.Counts(recs) {
		b := offs.GetBlock(topic, p)
		if b == nil || !errors.Is(b.Err, sarama.ErrNoError) || b.Offset != int64(n) || b.Metadata != "read by "+clientID {
			return "", fmt.Errorf("list committed offsets: partition %d answered %+v, want offset %d with the commit's metadata", p, b, n)
		}
	}

	_, cancel = t.Step(ctx, "delete while a member is in it")
	defer cancel()
	if err := adm.DeleteConsumerGroup(group); !errors.Is(err, sarama.ErrNonEmptyGroup) {
		return "", fmt.Errorf("deleting a group with a member answered %s, want NON_EMPTY_GROUP", compat.Said(err))
	}

	ectx, cancel := t.Step(ctx, "member leaves; group Empty")
	defer cancel()
	if err := gm.stop(); err != nil {
		return "", fmt.Errorf("close member: %w", err)
	}
	err = compat.Poll(ectx, 100*time.Millisecond, func(context.Context) (bool, string, error) {
		gd, err := describeGroup(adm, group)
		if err != nil {
			return false, "", err
		}
		return gd.State == "Empty" && len(gd.Members) == 0, fmt.Sprintf("group %s with %d members", gd.State, len(gd.Members)), nil
	})
	if err != nil {
		return "", err
	}

	_, cancel = t.Step(ctx, "delete group")
	defer cancel()
	if err := adm.DeleteConsumerGroup(group); err != nil {
		return "", fmt.Errorf("delete group: %w", err)
	}
	groups, err = adm.ListConsumerGroups()
	if err != nil {
		return "", fmt.Errorf("list groups after delete: %w", err)
	}
	if _, ok := groups[group]; ok {
		return "", fmt.Errorf("list groups: deleted group %s still listed", group)
	}
	return "listed, described Stable with 1 member on 3 partitions, offsets listed, delete refused while active, Empty after leave, deleted", nil
}

func describeGroup(adm sarama.ClusterAdmin, group string) (*sarama.GroupDescription, error) {
	gds, err := adm.DescribeConsumerGroups([]string{group})
	if err != nil {
		return nil, fmt.Errorf("describe group: %w", err)
	}
	if len(gds) != 1 || gds[0].GroupId != group {
		return nil, fmt.Errorf("describe group: %d groups in the answer", len(gds))
	}
	if !errors.Is(gds[0].Err, sarama.ErrNoError) {
		return nil, fmt.Errorf("describe group: %w", gds[0].Err)
	}
	return gds[0], nil
}
