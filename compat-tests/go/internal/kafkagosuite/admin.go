package kafkagosuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// Kafka's config sources (DescribeConfigs v1+), which kafka-go passes on as
// numbers.
const (
	sourceTopic   int8 = 1 // DYNAMIC_TOPIC_CONFIG
	sourceDefault int8 = 5 // DEFAULT_CONFIG
)

// adminTopics creates a topic with a config, checks that a second create
// fails with TOPIC_ALREADY_EXISTS, lists and describes it (metadata and
// configs), grows it to 5 partitions and deletes it.
func (s *suite) adminTopics(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	cl := client(t)
	cctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	retention := "123456789"
	if err := createTopic(cctx, t, topic, 3, kafka.ConfigEntry{ConfigName: "retention.ms", ConfigValue: retention}); err != nil {
		return "", err
	}
	actx, cancel := t.Step(ctx, "create the topic again")
	defer cancel()
	if err := createTopic(actx, t, topic, 3); !errors.Is(err, kafka.TopicAlreadyExists) {
		return "", fmt.Errorf("second create of %s answered %s, want TOPIC_ALREADY_EXISTS", topic, compat.Said(err))
	}

	lctx, cancel := t.Step(ctx, "list and describe")
	defer cancel()
	err := compat.Eventually(lctx, func(ctx context.Context) error {
		all, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
		if err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		if !slices.ContainsFunc(all.Topics, func(tp kafka.Topic) bool { return tp.Name == topic }) {
			return fmt.Errorf("list topics: %s missing from %d topics", topic, len(all.Topics))
		}
		return describeTopic(ctx, cl, topic, 3)
	})
	if err != nil {
		return "", err
	}
	if err := checkConfig(lctx, cl, topic, "retention.ms", retention, sourceTopic); err != nil {
		return "", err
	}

	pctx, cancel := t.Step(ctx, "add partitions")
	defer cancel()
	grown, err := cl.CreatePartitions(pctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{{Name: topic, Count: 5}}})
	if err == nil {
		err = grown.Errors[topic]
	}
	if err != nil {
		return "", fmt.Errorf("grow to 5 partitions: %w", err)
	}
	err = compat.Eventually(pctx, func(ctx context.Context) error { return describeTopic(ctx, cl, topic, 5) })
	if err != nil {
		return "", err
	}

	xctx, cancel := t.Step(ctx, "delete topic")
	defer cancel()
	del, err := cl.DeleteTopics(xctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err == nil {
		err = del.Errors[topic]
	}
	if err != nil {
		return "", fmt.Errorf("delete topic: %w", err)
	}
	err = compat.Poll(xctx, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		all, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
		if err != nil {
			return false, "", fmt.Errorf("list topics: %w", err)
		}
		listed := slices.ContainsFunc(all.Topics, func(tp kafka.Topic) bool { return tp.Name == topic })
		return !listed, "the deleted topic is still listed", nil
	})
	if err != nil {
		return "", err
	}
	return "created with retention.ms, listed, described, grown 3 to 5 partitions, deleted", nil
}

// describeTopic checks that topic has n partitions, each with a leader that
// is its single replica and in sync.
func describeTopic(ctx context.Context, cl *kafka.Client, topic string, n int) error {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return fmt.Errorf("describe %s: %w", topic, err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Name != topic {
		return fmt.Errorf("describe %s: %d topics in the answer", topic, len(md.Topics))
	}
	tp := md.Topics[0]
	if tp.Error != nil {
		return fmt.Errorf("describe %s: %w", topic, tp.Error)
	}
	if len(tp.Partitions) != n {
		return fmt.Errorf("describe %s: %d partitions, want %d", topic, len(tp.Partitions), n)
	}
	seen := make(map[int]bool)
	for _, p := range tp.Partitions {
		seen[p.ID] = true
		ids := func(bs []kafka.Broker) []int {
			var out []int
			for _, b := range bs {
				out = append(out, b.ID)
			}
			return out
		}
		if p.Error != nil {
			return fmt.Errorf("describe %s: partition %d: %w", topic, p.ID, p.Error)
		}
		if p.Leader.ID < 0 || !slices.Equal(ids(p.Replicas), []int{p.Leader.ID}) || !slices.Equal(ids(p.Isr), []int{p.Leader.ID}) {
			return fmt.Errorf("describe %s: partition %d leader %d replicas %v ISR %v, want the leader as the single replica, in sync",
				topic, p.ID, p.Leader.ID, ids(p.Replicas), ids(p.Isr))
		}
	}
	for p := range n {
		if !seen[p] {
			return fmt.Errorf("describe %s: partition %d missing", topic, p)
		}
	}
	return nil
}

// topicConfig returns one config of topic as DescribeConfigs answers it.
func topicConfig(ctx context.Context, cl *kafka.Client, topic, key string) (kafka.DescribeConfigResponseConfigEntry, error) {
	resp, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic,
		ResourceName: topic,
	}}})
	if err != nil {
		return kafka.DescribeConfigResponseConfigEntry{}, fmt.Errorf("describe configs of %s: %w", topic, err)
	}
	if len(resp.Resources) != 1 {
		return kafka.DescribeConfigResponseConfigEntry{}, fmt.Errorf("describe configs of %s: %d resources in the answer", topic, len(resp.Resources))
	}
	r := resp.Resources[0]
	if r.Error != nil {
		return kafka.DescribeConfigResponseConfigEntry{}, fmt.Errorf("describe configs of %s: %w", topic, r.Error)
	}
	for _, e := range r.ConfigEntries {
		if e.ConfigName == key {
			return e, nil
		}
	}
	return kafka.DescribeConfigResponseConfigEntry{}, fmt.Errorf("describe configs of %s: %s missing from %d configs", topic, key, len(r.ConfigEntries))
}

// checkConfig waits until DescribeConfigs answers value and source for a
// topic config (a KRaft broker applies a change a moment after answering
// the request that made it).
func checkConfig(ctx context.Context, cl *kafka.Client, topic, key, value string, source int8) error {
	return compat.Eventually(ctx, func(ctx context.Context) error {
		e, err := topicConfig(ctx, cl, topic, key)
		if err != nil {
			return err
		}
		if e.ConfigValue != value || e.ConfigSource != source {
			return fmt.Errorf("config %s of %s is %q from source %d, want %q from %d", key, topic, e.ConfigValue, e.ConfigSource, value, source)
		}
		return nil
	})
}

// alter sends one IncrementalAlterConfigs for topic.
func alter(ctx context.Context, cl *kafka.Client, topic string, cs ...kafka.IncrementalAlterConfigsRequestConfig) error {
	resp, err := cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafka.ResourceTypeTopic,
		ResourceName: topic,
		Configs:      cs,
	}}})
	if err != nil {
		return err
	}
	if len(resp.Resources) != 1 {
		return fmt.Errorf("%d resources in the answer", len(resp.Resources))
	}
	return resp.Resources[0].Error
}

// adminConfigs describes a new topic's configs, sets two with
// IncrementalAlterConfigs, reads them back, deletes one (back to its
// default, the other kept), checks that an invalid value is refused with
// INVALID_CONFIG, and that the legacy AlterConfigs replaces the whole set.
func (s *suite) adminConfigs(ctx context.Context, t *compat.T) (string, error) {
	topic := t.Name("")
	cl := client(t)
	cctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(cctx, t, topic, 3); err != nil {
		return "", err
	}
	dctx, cancel := t.Step(ctx, "describe defaults")
	defer cancel()
	if err := checkConfig(dctx, cl, topic, "cleanup.policy", "delete", sourceDefault); err != nil {
		return "", err
	}
	var def, defRetention kafka.DescribeConfigResponseConfigEntry
	err := compat.Eventually(dctx, func(ctx context.Context) (err error) {
		if def, err = topicConfig(ctx, cl, topic, "max.message.bytes"); err == nil {
			defRetention, err = topicConfig(ctx, cl, topic, "retention.ms")
		}
		return err
	})
	if err != nil {
		return "", err
	}
	for _, c := range []kafka.DescribeConfigResponseConfigEntry{def, defRetention} {
		if c.ConfigSource == sourceTopic || c.ConfigValue == "" {
			return "", fmt.Errorf("%s of a new topic is %q from source %d, want a default", c.ConfigName, c.ConfigValue, c.ConfigSource)
		}
	}

	actx, cancel := t.Step(ctx, "incremental alter")
	defer cancel()
	retention, maxBytes := "3600000", "200000"
	err = alter(actx, cl, topic,
		kafka.IncrementalAlterConfigsRequestConfig{Name: "retention.ms", Value: retention, ConfigOperation: kafka.ConfigOperationSet},
		kafka.IncrementalAlterConfigsRequestConfig{Name: "max.message.bytes", Value: maxBytes, ConfigOperation: kafka.ConfigOperationSet})
	if err != nil {
		return "", fmt.Errorf("set retention.ms and max.message.bytes: %w", err)
	}
	for key, value := range map[string]string{"retention.ms": retention, "max.message.bytes": maxBytes} {
		if err := checkConfig(actx, cl, topic, key, value, sourceTopic); err != nil {
			return "", fmt.Errorf("after set: %w", err)
		}
	}

	xctx, cancel := t.Step(ctx, "incremental delete")
	defer cancel()
	err = alter(xctx, cl, topic, kafka.IncrementalAlterConfigsRequestConfig{Name: "max.message.bytes", ConfigOperation: kafka.ConfigOperationDelete})
	if err != nil {
		return "", fmt.Errorf("delete max.message.bytes: %w", err)
	}
	if err := checkConfig(xctx, cl, topic, "max.message.bytes", def.ConfigValue, def.ConfigSource); err != nil {
		return "", fmt.Errorf("after delete: %w", err)
	}
	if err := checkConfig(xctx, cl, topic, "retention.ms", retention, sourceTopic); err != nil {
		return "", fmt.Errorf("after deleting another config: %w", err)
	}

	ictx, cancel := t.Step(ctx, "invalid value")
	defer cancel()
	bad := "not-a-number"
	err = alter(ictx, cl, topic, kafka.IncrementalAlterConfigsRequestConfig{Name: "retention.ms", Value: bad, ConfigOperation: kafka.ConfigOperationSet})
	if !errors.Is(err, kafka.InvalidConfiguration) {
		return "", fmt.Errorf("setting retention.ms to %q answered %s, want INVALID_CONFIG", bad, compat.Said(err))
	}
	if err := checkConfig(ictx, cl, topic, "retention.ms", retention, sourceTopic); err != nil {
		return "", fmt.Errorf("after the refused alter: %w", err)
	}
	// The legacy AlterConfigs replaces a topic's whole set of configs:
	// retention.ms, set before, goes back to its default.
	lctx, cancel := t.Step(ctx, "legacy alter")
	defer cancel()
	resp, err := cl.AlterConfigs(lctx, &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic,
		ResourceName: topic,
		Configs:      []kafka.AlterConfigRequestConfig{{Name: "cleanup.policy", Value: "compact"}},
	}}})
	if err == nil {
		err = resp.Errors[kafka.AlterConfigsResponseResource{Type: int8(kafka.ResourceTypeTopic), Name: topic}]
	}
	if err != nil {
		return "", fmt.Errorf("AlterConfigs cleanup.policy=compact: %w", err)
	}
	if err := checkConfig(lctx, cl, topic, "cleanup.policy", "compact", sourceTopic); err != nil {
		return "", fmt.Errorf("after AlterConfigs: %w", err)
	}
	if err := checkConfig(lctx, cl, topic, "retention.ms", defRetention.ConfigValue, defRetention.ConfigSource); err != nil {
		return "", fmt.Errorf("after AlterConfigs of another config (it replaces them all): %w", err)
	}
	return "described defaults, set 2 configs, deleted 1, invalid value refused, legacy AlterConfigs replaced all", nil
}

// adminGroups has a Reader in a group read a topic and commit, then lists
// the group, describes it (Stable, the member, its assignment), fetches its
// offsets, checks that deleting it while the member is in it fails with
// NON_EMPTY_GROUP, and after the member left sees it Empty and deletes it.
func (s *suite) adminGroups(ctx context.Context, t *compat.T) (string, error) {
	topic, group := t.Name(""), t.Name("g")
	recs := compat.Generate(720, 30, 3, compat.BaseTime())
	if err := s.setup(ctx, t, topic, 3, recs); err != nil {
		return "", err
	}
	rctx, cancel := t.Step(ctx, "member reads and commits")
	defer cancel()
	member := s.groupReader(t, group, topic)
	defer member.Close()
	var msgs []kafka.Message
	for len(msgs) < len(recs) {
		m, err := member.FetchMessage(rctx)
		if err != nil {
			return "", fmt.Errorf("member after %d of %d records: %w", len(msgs), len(recs), err)
		}
		msgs = append(msgs, m)
	}
	if err := member.CommitMessages(rctx, msgs...); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}

	cl := client(t)
	lctx, cancel := t.Step(ctx, "list groups")
	defer cancel()
	listed, err := cl.ListGroups(lctx, &kafka.ListGroupsRequest{})
	if err == nil {
		err = listed.Error
	}
	if err != nil {
		return "", fmt.Errorf("list groups: %w", err)
	}
	i := slices.IndexFunc(listed.Groups, func(g kafka.ListGroupsResponseGroup) bool { return g.GroupID == group })
	if i < 0 {
		return "", fmt.Errorf("list groups: %s missing from %d groups", group, len(listed.Groups))
	}
	if pt := listed.Groups[i].ProtocolType; pt != "consumer" {
		return "", fmt.Errorf("list groups: %s has protocol type %q, want consumer", group, pt)
	}

	dctx, cancel := t.Step(ctx, "describe group")
	defer cancel()
	dg, err := describeGroup(dctx, cl, group)
	if err != nil {
		return "", err
	}
	if dg.GroupState != "Stable" || len(dg.Members) != 1 {
		return "", fmt.Errorf("describe group: state %q with %d members, want Stable with 1", dg.GroupState, len(dg.Members))
	}
	dm := dg.Members[0]
	if dm.ClientID != clientID || dm.MemberID == "" {
		return "", fmt.Errorf("describe group: member %q client id %q, want a member id and %q", dm.MemberID, dm.ClientID, clientID)
	}
	if !slices.Equal(dm.MemberMetadata.Topics, []string{topic}) {
		return "", fmt.Errorf("describe group: member subscribed to %v, want [%s]", dm.MemberMetadata.Topics, topic)
	}
	as := dm.MemberAssignments.Topics
	if len(as) != 1 || as[0].Topic != topic || !slices.Equal(slices.Sorted(slices.Values(as[0].Partitions)), []int{0, 1, 2}) {
		return "", fmt.Errorf("describe group: member assigned %+v, want %s partitions [0 1 2]", as, topic)
	}

	fctx, cancel := t.Step(ctx, "fetch offsets")
	defer cancel()
	offs, err := cl.OffsetFetch(fctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0, 1, 2}}})
	if err == nil {
		err = offs.Error
	}
	if err != nil {
		return "", fmt.Errorf("fetch offsets: %w", err)
	}
	counts := compat.Counts(recs)
	if len(offs.Topics[topic]) != 3 {
		return "", fmt.Errorf("fetch offsets: %d partitions in the answer, want 3", len(offs.Topics[topic]))
	}
	for _, o := range offs.Topics[topic] {
		if o.Error != nil || o.CommittedOffset != int64(counts[int32(o.Partition)]) {
			return "", fmt.Errorf("fetch offsets: partition %d committed %d (%s), want %d", o.Partition, o.CommittedOffset, compat.Said(o.Error), counts[int32(o.Partition)])
		}
	}

	xctx, cancel := t.Step(ctx, "delete while a member is in it")
	defer cancel()
	if err := deleteGroup(xctx, cl, group); !errors.Is(err, kafka.NonEmptyGroup) {
		return "", fmt.Errorf("deleting a group with a member answered %s, want NON_EMPTY_GROUP", compat.Said(err))
	}

	ectx, cancel := t.Step(ctx, "member leaves; group Empty")
	defer cancel()
	if err := member.Close(); err != nil {
		return "", fmt.Errorf("close member: %w", err)
	}
	err = compat.Poll(ectx, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		dg, err := describeGroup(ctx, cl, group)
		if err != nil {
			return false, "", err
		}
		return dg.GroupState == "Empty" && len(dg.Members) == 0, fmt.Sprintf("group %s with %d members", dg.GroupState, len(dg.Members)), nil
	})
	if err != nil {
		return "", err
	}

	gctx, cancel := t.Step(ctx, "delete group")
	defer cancel()
	if err := deleteGroup(gctx, cl, group); err != nil {
		return "", fmt.Errorf("delete group: %w", err)
	}
	listed, err = cl.ListGroups(gctx, &kafka.ListGroupsRequest{})
	if err == nil {
		err = listed.Error
	}
	if err != nil {
		return "", fmt.Errorf("list groups after delete: %w", err)
	}
	if slices.ContainsFunc(listed.Groups, func(g kafka.ListGroupsResponseGroup) bool { return g.GroupID == group }) {
		return "", fmt.Errorf("list groups: deleted group %s still listed", group)
	}
	return "listed, described Stable with 1 member on 3 partitions, offsets fetched, delete refused while active, Empty after leave, deleted", nil
}

func describeGroup(ctx context.Context, cl *kafka.Client, group string) (kafka.DescribeGroupsResponseGroup, error) {
	resp, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return kafka.DescribeGroupsResponseGroup{}, fmt.Errorf("describe group: %w", err)
	}
	if len(resp.Groups) != 1 || resp.Groups[0].GroupID != group {
		return kafka.DescribeGroupsResponseGroup{}, fmt.Errorf("describe group: %d groups in the answer", len(resp.Groups))
	}
	g := resp.Groups[0]
	if g.Error != nil {
		return g, fmt.Errorf("describe group: %w", g.Error)
	}
	return g, nil
}

func deleteGroup(ctx context.Context, cl *kafka.Client, group string) error {
	resp, err := cl.DeleteGroups(ctx, &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return err
	}
	return resp.Errors[group]
}
