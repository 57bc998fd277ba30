package broker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

// topicRequest is a topic to create, as CreateTopics or auto-creation asks.
type topicRequest struct {
	name        string
	partitions  int32     // -1: num.partitions
	replication int16     // -1: default.replication.factor
	assignments [][]int32 // explicit replica lists, or nil
	configs     map[string]*string
}

// topicError is a Kafka error code with its message, as admin responses
// carry them.
type topicError struct {
	code protocol.ErrorCode
	msg  string
}

func (e *topicError) Error() string { return e.msg }

// KafkaErrorCode makes protocol.ErrorCodeFor see the code.
func (e *topicError) KafkaErrorCode() protocol.ErrorCode { return e.code }

func newTopicError(code protocol.ErrorCode, format string, args ...any) *topicError {
	return &topicError{code: code, msg: fmt.Sprintf(format, args...)}
}

// maxPartitionsPerRequest is the most partitions one CreateTopics or
// CreatePartitions request may add: Kafka's controller refuses more in one
// request (its batch limit). It also keeps a hostile partition count from
// sizing an allocation: the assignment is built only below it.
const maxPartitionsPerRequest = 10000

func errTooManyPartitions() error {
	return newTopicError(protocol.PolicyViolation, "Excessively large number of partitions per request.")
}

// planTopic checks a topic request as Kafka does and returns the spec to
// create; nothing is written.
func (b *Broker) planTopic(md *cluster.Metadata, req topicRequest) (cluster.TopicSpec, error) {
	var spec cluster.TopicSpec
	if err := validTopicName(req.name); err != nil {
		return spec, newTopicError(protocol.InvalidTopicException, "%v", err)
	}
	if md.Topics[req.name] != nil {
		return spec, newTopicError(protocol.TopicAlreadyExists, "Topic '%s' already exists.", req.name)
	}
	if collides := collidingTopic(md, req.name); collides != "" {
		return spec, newTopicError(protocol.InvalidTopicException,
			"Topic '%s' collides with existing topic: %s", req.name, collides)
	}
	vals, err := configs.ValidateTopicNullable(req.configs)
	if err != nil {
		return spec, configError(err)
	}
	spec.Name, spec.Configs = req.name, vals
	brokers := make([]int32, 0, len(md.Brokers))
	for _, br := range md.Brokers {
		brokers = append(brokers, br.NodeID)
	}
	if req.assignments != nil {
		if req.partitions != -1 || req.replication != -1 {
			return spec, newTopicError(protocol.InvalidRequest,
				"Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
		}
		for i, replicas := range req.assignments {
			if len(replicas) == 0 {
				return spec, newTopicError(protocol.InvalidReplicaAssignment, "Partition %d has no replicas.", i)
			}
			for j, r := range replicas {
				if !slices.Contains(brokers, r) {
					return spec, newTopicError(protocol.InvalidReplicaAssignment,
						"Replica assignment for partition %d refers to unknown broker %d.", i, r)
				}
				if slices.Contains(replicas[:j], r) {
					return spec, newTopicError(protocol.InvalidReplicaAssignment,
						"Duplicate replica assignment for partition %d: %v.", i, replicas)
				}
			}
		}
		spec.Assignments = req.assignments
		return spec, nil
	}
	partitions, replication := req.partitions, req.replication
	if partitions == -1 {
		partitions = b.cfg.NumPartitions
	}
	if replication == -1 {
		replication = b.cfg.DefaultReplicationFactor
	}
	if partitions <= 0 {
		return spec, newTopicError(protocol.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	}
	if replication <= 0 {
		return spec, newTopicError(protocol.InvalidReplicationFactor, "Replication factor must be larger than 0.")
	}
	if int(replication) > len(brokers) {
		return spec, newTopicError(protocol.InvalidReplicationFactor,
			"Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.",
			replication, replication, len(brokers))
	}
	if spec.Assignments, err = assignReplicas(md.Brokers, partitions, replication); err != nil {
		return spec, newTopicError(protocol.InvalidReplicationFactor, "%v", err)
	}
	return spec, nil
}

// assignReplicas places partitions new partitions of replication factor
// replication over the live brokers with the cluster's Placer (striped
// over racks as Kafka's controller places them), from random starting
// offsets. It fails with cluster.ErrReplicationFactor when there are not
// enough brokers, which the callers check first for Kafka's message.
func assignReplicas(brokers []cluster.BrokerInfo, partitions int32, replication int16) ([][]int32, error) {
	p := cluster.NewPlacer(brokers, rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
	return p.Place(int(partitions), int(replication))
}

// collidingTopic returns an existing topic whose name equals name once '.'
// and '_' are treated alike (they collide in metric names), or "".
func collidingTopic(md *cluster.Metadata, name string) string {
	norm := func(s string) string {
		out := []byte(s)
		for i, c := range out {
			if c == '.' {
				out[i] = '_'
			}
		}
		return string(out)
	}
	n := norm(name)
	for other := range md.Topics {
		if other != name && norm(other) == n {
			return other
		}
	}
	return ""
}

// topicSyncWait bounds how long a topic create waits for this broker to
// open the new topic's logs: more than a few thousand partitions take,
// less than clients' request timeouts (the Java clients' is 30 s), so that
// a large topic is not reported as failed and created again.
const topicSyncWait = 10 * time.Second

// missingLogs counts the partitions of t assigned to this broker that it
// holds no log of.
func (b *Broker) missingLogs(t cluster.Topic) int {
	ps := b.parts.Load().byName[t.Name]
	n := 0
	for i, st := range t.Partitions {
		if slices.Contains(st.Replicas, b.cfg.NodeID) && (i >= len(ps) || ps[i] == nil) {
			n++
		}
	}
	return n
}

// createTopic creates a planned topic and waits, for at most wait, until
// this broker holds its logs, so that the response to the creator is
// already true here. Past wait it returns with the logs still being
// opened: the topic exists (Kafka's controller answers once the metadata
// is committed, before any broker has opened a log).
func (b *Broker) createTopic(ctx context.Context, spec cluster.TopicSpec, wait time.Duration) (cluster.Topic, error) {
	t, err := b.cluster.CreateTopic(ctx, spec)
	if err != nil {
		if errors.Is(err, cluster.ErrTopicExists) {
			return t, newTopicError(protocol.TopicAlreadyExists, "Topic '%s' already exists.", spec.Name)
		}
		return t, err
	}
	done := make(chan error, 1)
	b.goTracked(func() { done <- b.syncPartitions(b.cluster.Snapshot()) })
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err := <-done:
		if missing := b.missingLogs(t); missing > 0 && errors.Is(err, storage.ErrLogFailed) {
			// No online log dir could hold the new logs. The topic is
			// taken back out of the registry, so that the answer
			// (KAFKA_STORAGE_ERROR) is true, a retry can create it once
			// there is room, and no start-up meets a topic whose logs
			// it cannot create.
			if derr := b.cluster.DeleteTopic(ctx, spec.Name); derr != nil {
				b.logger.Error("removing a topic whose logs could not be created", "topic", spec.Name, "err", derr)
			} else if serr := b.syncPartitions(b.cluster.Snapshot()); serr != nil {
				b.logger.Error("applying metadata failed", "err", serr)
			}
			return t, newTopicError(protocol.KafkaStorageError,
				"Could not create %d of the logs of topic '%s': %v", missing, spec.Name, err)
		}
		return t, err
	case <-timer.C:
		b.logger.Info("topic created; its logs are still being opened", "topic", spec.Name,
			"partitions", len(spec.Assignments), "waited", wait)
		b.goTracked(func() {
			if err := <-done; err != nil {
				b.logger.Error("opening the logs of a new topic failed", "topic", spec.Name, "err", err)
			}
		})
		return t, nil
	}
}

// autoCreateTopic creates a topic with the broker's defaults.
func (b *Broker) autoCreateTopic(ctx context.Context, name string) error {
	spec, err := b.planTopic(b.cluster.Snapshot(), topicRequest{name: name, partitions: -1, replication: -1})
	if err != nil {
		return err
	}
	_, err = b.createTopic(ctx, spec, topicSyncWait)
	return err
}

// configError turns a config catalogue error into Kafka's code and message.
func configError(err error) *topicError {
	if errors.Is(err, configs.ErrInvalidRequest) {
		return &topicError{code: protocol.InvalidRequest, msg: err.Error()}
	}
	return &topicError{code: protocol.InvalidConfig, msg: err.Error()}
}
