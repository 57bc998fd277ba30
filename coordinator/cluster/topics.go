package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxAttempts bounds every compare-and-swap retry loop. Each lost attempt
// means another writer won, so the loops always make progress as a whole;
// the bound keeps one caller from starving forever.
const maxAttempts = 100

// TopicSpec describes a topic to create.
type TopicSpec struct {
	// Name must be a legal Kafka topic name: 1 to 249 characters of
	// [a-zA-Z0-9._-], and neither "." nor "..".
	Name string
	// ID is the topic id to use; the zero id means "generate a random one".
	// The zero id and Uuid(0, 1) (KRaft's metadata topic) are never used.
	ID TopicID
	// Assignments has one replica list (broker ids, preferred leader first)
	// per partition. At least one partition; each list non-empty, without
	// repeats. Whether the brokers exist is the caller's check.
	Assignments [][]int32
	// Configs are the topic's dynamic configs (Kafka names); nil for none.
	Configs map[string]string
}

// CreateTopic creates a topic, its id index, its partition states and its
// configs in one transaction, so no reader ever sees part of a topic. Each
// partition starts as newPartition makes it (leader epoch 0, partition
// epoch 0, its eligible replicas in the ISR). It fails with
// ErrTopicExists when the name is taken (of several concurrent creators of
// one name exactly one succeeds) and ErrTopicIDExists when a given ID is.
// On success the topic is in Snapshot.
func (c *Cluster) CreateTopic(ctx context.Context, spec TopicSpec) (Topic, error) {
	if err := c.checkOpen(); err != nil {
		return Topic{}, err
	}
	if err := validateTopicName(spec.Name); err != nil {
		return Topic{}, err
	}
	if len(spec.Assignments) == 0 {
		return Topic{}, fmt.Errorf("%w: topic %q has no partitions", ErrInvalidAssignment, spec.Name)
	}
	if err := validateAssignments(spec.Assignments); err != nil {
		return Topic{}, fmt.Errorf("topic %q: %w", spec.Name, err)
	}
	if !spec.ID.IsZero() && spec.ID.reserved() {
		return Topic{}, fmt.Errorf("%w: topic id %s is reserved", ErrInvalidTopic, spec.ID)
	}
	t := Topic{Name: spec.Name, Partitions: make([]PartitionState, len(spec.Assignments))}
	md := c.Snapshot()
	for p, replicas := range spec.Assignments {
		t.Partitions[p] = newPartition(md, replicas)
	}
	if len(spec.Configs) > 0 {
		t.Configs = maps.Clone(spec.Configs)
	}

	topicKey, cfgKey := c.keys.topic(spec.Name), c.keys.topicConfig(spec.Name)
	for range maxAttempts {
		t.ID = spec.ID
		if t.ID.IsZero() {
			t.ID = randomID()
		}
		idKey := c.keys.topicID(t.ID)
		ops := make([]clientv3.Op, 0, 3+len(t.Partitions))
		ops = append(ops,
			clientv3.OpPut(topicKey, encode(topicRecord{ID: t.ID.String(), Partitions: int32(len(t.Partitions))})),
			clientv3.OpPut(idKey, encode(topicIDRecord{Name: t.Name})))
		for p, ps := range t.Partitions {
			ops = append(ops, clientv3.OpPut(c.keys.partition(t.Name, int32(p)), encode(partitionRecord(ps))))
		}
		if t.Configs != nil {
			ops = append(ops, clientv3.OpPut(cfgKey, encode(configRecord{Config: t.Configs})))
		} else {
			ops = append(ops, clientv3.OpDelete(cfgKey)) // no leftovers from older versions or hand edits
		}

		octx, cancel := c.opCtx(ctx)
		resp, err := c.client.Txn(octx).
			If(clientv3.Compare(clientv3.CreateRevision(topicKey), "=", 0),
				clientv3.Compare(clientv3.CreateRevision(idKey), "=", 0)).
			Then(ops...).
			Else(clientv3.OpGet(topicKey, clientv3.WithCountOnly())).
			Commit()
		cancel()
		if err != nil {
			return Topic{}, fmt.Errorf("create topic %q: %w", spec.Name, err)
		}
		if resp.Succeeded {
			if err := c.awaitVisible(ctx, resp.Header.Revision); err != nil {
				return Topic{}, fmt.Errorf("create topic %q: %w", spec.Name, err)
			}
			c.log.Info("created topic", "topic", t.Name, "topic_id", t.ID.String(), "partitions", len(t.Partitions))
			return t, nil
		}
		if resp.Responses[0].GetResponseRange().Count > 0 {
			return Topic{}, fmt.Errorf("create topic %q: %w", spec.Name, ErrTopicExists)
		}
		if !spec.ID.IsZero() {
			return Topic{}, fmt.Errorf("create topic %q: %w: %s", spec.Name, ErrTopicIDExists, spec.ID)
		}
		// A random id collided: astronomically unlikely; draw another.
	}
	return Topic{}, fmt.Errorf("create topic %q: %w", spec.Name, ErrConflict)
}

// DeleteTopic deletes a topic with everything stored for it (record, id
// index, partition states, configs) in one transaction. ErrUnknownTopic when
// there is no such topic. On success the topic is gone from Snapshot.
func (c *Cluster) DeleteTopic(ctx context.Context, name string) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	return c.deleteTopic(ctx, name, nil)
}

// DeleteTopicByID is DeleteTopic for the topic that has id.
func (c *Cluster) DeleteTopicByID(ctx context.Context, id TopicID) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	resp, err := c.client.Get(octx, c.keys.topicID(id))
	cancel()
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", id, err)
	}
	var r topicIDRecord
	if len(resp.Kvs) == 0 || unmarshal(resp.Kvs[0].Value, &r) != nil || r.Name == "" {
		return fmt.Errorf("delete topic %s: %w", id, ErrUnknownTopic)
	}
	return c.deleteTopic(ctx, r.Name, &id)
}

// deleteTopic deletes topic name, if it has id *want (when want is not nil).
// The transaction compares the topic record's mod revision with the one
// read, so it deletes exactly the topic it looked at.
func (c *Cluster) deleteTopic(ctx context.Context, name string, want *TopicID) error {
	what := name
	if want != nil {
		what = want.String()
	}
	topicKey := c.keys.topic(name)
	for range maxAttempts {
		octx, cancel := c.opCtx(ctx)
		modRev, rec, err := c.getTopic(octx, name)
		if err != nil {
			cancel()
			return fmt.Errorf("delete topic %s: %w", what, err)
		}
		id, idErr := ParseTopicID(rec.ID)
		if want != nil && (idErr != nil || id != *want) {
			cancel()
			return fmt.Errorf("delete topic %s: %w", what, ErrUnknownTopic)
		}
		ops := []clientv3.Op{
			clientv3.OpDelete(topicKey),
			clientv3.OpDelete(c.keys.partitionsOf(name), clientv3.WithPrefix()),
			clientv3.OpDelete(c.keys.topicConfig(name)),
		}
		if idErr == nil {
			ops = append(ops, clientv3.OpDelete(c.keys.topicID(id)))
		}
		resp, err := c.client.Txn(octx).
			If(clientv3.Compare(clientv3.ModRevision(topicKey), "=", modRev)).
			Then(ops...).
			Commit()
		cancel()
		if err != nil {
			return fmt.Errorf("delete topic %s: %w", what, err)
		}
		if resp.Succeeded {
			if err := c.awaitVisible(ctx, resp.Header.Revision); err != nil {
				return fmt.Errorf("delete topic %s: %w", what, err)
			}
			c.log.Info("deleted topic", "topic", name, "topic_id", rec.ID)
			return nil
		}
	}
	return fmt.Errorf("delete topic %s: %w", what, ErrConflict)
}

// newPartition is the first state of a partition with replicas (preferred
// leader first), as md shows the brokers: every eligible replica (live, not
// shutting down) is in the ISR, in replica order, and the first of them
// leads. An empty log is in sync with any other empty log, so followers
// need not fetch before they count (as Kafka starts a partition): the high
// watermark still waits for each of them to fetch what the leader
// appends. With no eligible replica, the first replica leads alone in the
// ISR, and the controller takes it from there as from a dead leader.
func newPartition(md *Metadata, replicas []int32) PartitionState {
	st := PartitionState{Leader: replicas[0], Replicas: slices.Clone(replicas)}
	for _, r := range replicas {
		if md.eligible(r) {
			st.ISR = append(st.ISR, r)
		}
	}
	if len(st.ISR) == 0 {
		st.ISR = []int32{replicas[0]}
	} else {
		st.Leader = st.ISR[0]
	}
	return st
}

// CreatePartitions grows topic name to count partitions, appending
// newAssignments (one replica list per new partition, as in TopicSpec) as
// partitions count-len(newAssignments) .. count-1. Like Kafka's
// CreatePartitions it fails with ErrInvalidPartitions unless the topic has
// exactly count-len(newAssignments) partitions when the change commits:
// the transaction compares the topic record's mod revision, so a concurrent
// change makes it re-read and re-check rather than append twice.
func (c *Cluster) CreatePartitions(ctx context.Context, name string, count int32, newAssignments [][]int32) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	if len(newAssignments) == 0 {
		return fmt.Errorf("create partitions of %q: %w: no new partitions", name, ErrInvalidPartitions)
	}
	if err := validateAssignments(newAssignments); err != nil {
		return fmt.Errorf("create partitions of %q: %w", name, err)
	}
	from := count - int32(len(newAssignments))
	if from < 1 {
		return fmt.Errorf("create partitions of %q: %w: %d new partitions cannot make %d in all",
			name, ErrInvalidPartitions, len(newAssignments), count)
	}
	topicKey := c.keys.topic(name)
	for range maxAttempts {
		octx, cancel := c.opCtx(ctx)
		modRev, rec, err := c.getTopic(octx, name)
		if err != nil {
			cancel()
			return fmt.Errorf("create partitions of %q: %w", name, err)
		}
		if rec.Partitions != from {
			cancel()
			return fmt.Errorf("create partitions of %q: %w: topic has %d partitions, not %d",
				name, ErrInvalidPartitions, rec.Partitions, from)
		}
		rec.Partitions = count
		ops := []clientv3.Op{clientv3.OpPut(topicKey, encode(rec))}
		md := c.Snapshot()
		for i, replicas := range newAssignments {
			st := newPartition(md, replicas)
			ps := partitionRecord{Leader: st.Leader, ISR: st.ISR, Replicas: st.Replicas}
			ops = append(ops, clientv3.OpPut(c.keys.partition(name, from+int32(i)), encode(ps)))
		}
		resp, err := c.client.Txn(octx).
			If(clientv3.Compare(clientv3.ModRevision(topicKey), "=", modRev)).
			Then(ops...).
			Commit()
		cancel()
		if err != nil {
			return fmt.Errorf("create partitions of %q: %w", name, err)
		}
		if resp.Succeeded {
			if err := c.awaitVisible(ctx, resp.Header.Revision); err != nil {
				return fmt.Errorf("create partitions of %q: %w", name, err)
			}
			c.log.Info("created partitions", "topic", name, "from", from, "count", count)
			return nil
		}
	}
	return fmt.Errorf("create partitions of %q: %w", name, ErrConflict)
}

// getTopic reads a topic record and its mod revision. ErrUnknownTopic when
// absent.
func (c *Cluster) getTopic(ctx context.Context, name string) (int64, topicRecord, error) {
	var rec topicRecord
	resp, err := c.client.Get(ctx, c.keys.topic(name))
	if err != nil {
		return 0, rec, err
	}
	if len(resp.Kvs) == 0 {
		return 0, rec, ErrUnknownTopic
	}
	kv := resp.Kvs[0]
	if err := unmarshal(kv.Value, &rec); err != nil {
		return 0, rec, fmt.Errorf("decode topic record %s: %w", kv.Key, err)
	}
	return kv.ModRevision, rec, nil
}

// SetTopicConfigs replaces the dynamic configs of topic name with configs
// (nil or empty removes them all). ErrUnknownTopic when there is no such
// topic. On success Snapshot shows the new configs.
func (c *Cluster) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error {
	return c.UpdateTopicConfigs(ctx, name, func(map[string]string) (map[string]string, error) {
		return configs, nil
	})
}

// UpdateTopicConfigs changes the dynamic configs of topic name by a
// read-modify-write: update gets a copy of the current configs (nil when
// none) and returns the new ones, or an error that aborts without writing.
// The write compares what was read, so concurrent updates (Kafka's
// IncrementalAlterConfigs from two brokers) never lose one another; update
// may be called again after a conflict. ErrUnknownTopic when there is no
// such topic.
func (c *Cluster) UpdateTopicConfigs(ctx context.Context, name string, update func(map[string]string) (map[string]string, error)) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	if err := c.updateConfigs(ctx, c.keys.topicConfig(name), c.keys.topic(name), update); err != nil {
		return fmt.Errorf("set configs of topic %q: %w", name, err)
	}
	return nil
}

// SetBrokerConfigs replaces the dynamic configs of broker nodeID, or the
// cluster-wide defaults for nodeID -1. The broker need not be registered
// (Kafka allows configs for brokers that are down). On success Snapshot
// shows the new configs.
func (c *Cluster) SetBrokerConfigs(ctx context.Context, nodeID int32, configs map[string]string) error {
	return c.UpdateBrokerConfigs(ctx, nodeID, func(map[string]string) (map[string]string, error) {
		return configs, nil
	})
}

// UpdateBrokerConfigs is UpdateTopicConfigs for the configs of broker
// nodeID (-1: the cluster-wide defaults).
func (c *Cluster) UpdateBrokerConfigs(ctx context.Context, nodeID int32, update func(map[string]string) (map[string]string, error)) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	if nodeID < -1 {
		return fmt.Errorf("set configs of broker %d: invalid node id", nodeID)
	}
	if err := c.updateConfigs(ctx, c.keys.brokerConfig(nodeID), "", update); err != nil {
		return fmt.Errorf("set configs of broker %d: %w", nodeID, err)
	}
	return nil
}

// UpdateGroupConfigs is UpdateTopicConfigs for the configs of a group (the
// GROUP config resource). The group need not exist.
func (c *Cluster) UpdateGroupConfigs(ctx context.Context, groupID string, update func(map[string]string) (map[string]string, error)) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	if err := c.updateConfigs(ctx, c.keys.groupConfig(groupID), "", update); err != nil {
		return fmt.Errorf("set configs of group %q: %w", groupID, err)
	}
	return nil
}

// updateConfigs is the compare-and-swap loop of the config updates. When
// owner is not empty, the key it names must exist (ErrUnknownTopic if not)
// and still be the same incarnation (create revision) at commit.
func (c *Cluster) updateConfigs(ctx context.Context, key, owner string, update func(map[string]string) (map[string]string, error)) error {
	for range maxAttempts {
		octx, cancel := c.opCtx(ctx)
		ops := []clientv3.Op{clientv3.OpGet(key)}
		if owner != "" {
			ops = append(ops, clientv3.OpGet(owner, clientv3.WithKeysOnly()))
		}
		read, err := c.client.Txn(octx).Then(ops...).Commit() // both keys at one revision
		cancel()
		if err != nil {
			return err
		}
		var cmps []clientv3.Cmp
		if owner != "" {
			okvs := read.Responses[1].GetResponseRange().Kvs
			if len(okvs) == 0 {
				return ErrUnknownTopic
			}
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(owner), "=", okvs[0].CreateRevision))
		}
		var cur map[string]string
		var modRev int64
		if kvs := read.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			var r configRecord
			if err := unmarshal(kvs[0].Value, &r); err != nil {
				return fmt.Errorf("decode config record %s: %w", key, err)
			}
			cur, modRev = r.Config, kvs[0].ModRevision
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", modRev))
		next, err := update(maps.Clone(cur))
		if err != nil {
			return err
		}
		op := clientv3.OpDelete(key)
		if len(next) > 0 {
			op = clientv3.OpPut(key, encode(configRecord{Config: next}))
		}
		octx, cancel = c.opCtx(ctx)
		resp, err := c.client.Txn(octx).If(cmps...).Then(op).Commit()
		cancel()
		if err != nil {
			return err
		}
		if resp.Succeeded {
			return c.awaitVisible(ctx, resp.Header.Revision)
		}
	}
	return ErrConflict
}

// validateTopicName applies Kafka's rules for topic names (Topic.validate).
func validateTopicName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 249 {
		return fmt.Errorf("%w: name %q is empty, \".\", \"..\" or longer than 249 characters", ErrInvalidTopic, name)
	}
	for i := 0; i < len(name); i++ {
		if !legalTopicByte(name[i]) {
			return fmt.Errorf("%w: name %q has a character outside [a-zA-Z0-9._-]", ErrInvalidTopic, name)
		}
	}
	return nil
}

func legalTopicByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return b == '.' || b == '_' || b == '-'
}

// validateAssignments checks that every replica list is non-empty, has no
// repeats and no negative broker ids.
func validateAssignments(as [][]int32) error {
	for p, replicas := range as {
		if len(replicas) == 0 {
			return fmt.Errorf("%w: partition %d has no replicas", ErrInvalidAssignment, p)
		}
		for i, r := range replicas {
			if r < 0 {
				return fmt.Errorf("%w: partition %d has broker id %d", ErrInvalidAssignment, p, r)
			}
			for _, q := range replicas[:i] {
				if q == r {
					return fmt.Errorf("%w: partition %d lists broker %d twice", ErrInvalidAssignment, p, r)
				}
			}
		}
	}
	return nil
}
