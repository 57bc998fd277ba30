package broker

// CreateTopics (key 19), versions 2-7.
//
// Each topic is checked as Kafka's controller checks it: a legal name not
// colliding with another once '.' and '_' are treated alike, partitions and
// replication factor (-1 for the broker defaults) or an explicit
// assignment (not both), replicas on registered brokers, and configs known
// and valid (INVALID_CONFIG with Kafka's message). validate_only stops
// there. A request adding more than 10000 partitions in all fails for every
// topic with POLICY_VIOLATION, as Kafka 4's controller does. A topic named twice in one request fails with INVALID_REQUEST.
// v5+ responses carry the partition count, replication factor and every
// topic config's resolved value and source; v7 the new topic id. The
// response comes after this broker holds the new partitions' logs, or once
// the request's timeout (at most 10 s, for all its topics together) has
// passed, with the logs still being opened: the topics exist by then, and
// Kafka's controller answers once they are in the metadata.
//
// Authorization, as Kafka's controller: a topic needs CREATE on the cluster
// or on itself, or it gets TOPIC_AUTHORIZATION_FAILED ("Authorization
// failed.") and does not count toward the request's partitions; a topic
// named twice gets INVALID_REQUEST before that. A topic created, or
// validated, without DESCRIBE_CONFIGS on it is answered with its id but no
// configs, partition count or replication factor, and
// TOPIC_AUTHORIZATION_FAILED as its topic_config_error_code.

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var createTopicsAPI = handler{key: 19, min: 2, max: 7, handle: (*Broker).handleCreateTopics}

func (b *Broker) handleCreateTopics(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	// The request's timeout, when it has one, bounds the wait for this
	// broker's logs of its new topics, all of them together, as it bounds
	// Kafka's wait for the topics' creation.
	syncWait := topicSyncWait
	if req.TimeoutMillis > 0 {
		syncWait = min(syncWait, time.Duration(req.TimeoutMillis)*time.Millisecond)
	}
	syncDeadline := time.Now().Add(syncWait)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	// Kafka's controller asks for CREATE on the cluster first, then, without
	// it, on each topic named once; and for DESCRIBE_CONFIGS on each.
	clusterCreate := c.authorizedCluster(acl.OpCreate)
	mutations := c.mutationQuota(hdr, 6)
	defer c.endMutations(mutations)
	creatable := map[string]bool{}
	describable := map[string]bool{}
	for name, n := range count {
		if n == 1 {
			creatable[name] = clusterCreate || c.authorized(acl.OpCreate, acl.ResourceTopic, name)
			describable[name] = c.authorized(acl.OpDescribeConfigs, acl.ResourceTopic, name)
		}
	}
	total := int64(0)
	for _, t := range req.Topics {
		if count[t.Topic] == 1 && !creatable[t.Topic] {
			continue
		}
		switch {
		case len(t.ReplicaAssignment) > 0:
			total += int64(len(t.ReplicaAssignment))
		case t.NumPartitions == -1:
			total += int64(b.cfg.NumPartitions)
		case t.NumPartitions > 0:
			total += int64(t.NumPartitions)
		}
	}
	for _, rt := range req.Topics {
		out := kmsg.NewCreateTopicsResponseTopic()
		out.Topic = rt.Topic
		out.NumPartitions, out.ReplicationFactor = -1, -1
		if total > maxPartitionsPerRequest {
			setTopicError(&out, errTooManyPartitions())
			resp.Topics = append(resp.Topics, out)
			continue
		}
		if count[rt.Topic] > 1 {
			setTopicError(&out, newTopicError(protocol.InvalidRequest,
				"Create topics request from client contains duplicate topic %s.", rt.Topic))
			resp.Topics = append(resp.Topics, out)
			continue
		}
		if !creatable[rt.Topic] {
			setTopicError(&out, newTopicError(protocol.TopicAuthorizationFailed, "Authorization failed."))
			resp.Topics = append(resp.Topics, out)
			continue
		}
		treq := topicRequest{name: rt.Topic, partitions: rt.NumPartitions, replication: rt.ReplicationFactor}
		if len(rt.ReplicaAssignment) > 0 {
			as, err := assignmentsFromRequest(rt.ReplicaAssignment)
			if err != nil {
				setTopicError(&out, err)
				resp.Topics = append(resp.Topics, out)
				continue
			}
			treq.assignments = as
		}
		if len(rt.Configs) > 0 {
			treq.configs = map[string]*string{}
			for _, kv := range rt.Configs {
				treq.configs[kv.Name] = kv.Value
			}
		}
		md := b.cluster.Snapshot()
		spec, err := b.planTopic(md, treq)
		if err == nil && !mutations.Record(len(spec.Assignments), time.Now()) {
			err = errMutationQuota()
		}
		if err == nil && !req.ValidateOnly {
			var t cluster.Topic
			t, err = b.createTopic(ctx, spec, max(time.Until(syncDeadline), 0))
			spec.ID = t.ID
			md = b.cluster.Snapshot()
		}
		if err != nil {
			setTopicError(&out, err)
			resp.Topics = append(resp.Topics, out)
			continue
		}
		out.TopicID = spec.ID
		if !describable[rt.Topic] {
			out.ConfigErrorCode = int16(protocol.TopicAuthorizationFailed)
			resp.Topics = append(resp.Topics, out)
			continue
		}
		out.NumPartitions = int32(len(spec.Assignments))
		out.ReplicationFactor = int16(len(spec.Assignments[0]))
		if hdr.APIVersion >= 5 {
			out.Configs = b.describeNewTopicConfigs(md, spec.Configs)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp, nil
}

// assignmentsFromRequest orders explicit assignments by partition, which
// must be 0..n-1.
func assignmentsFromRequest(in []kmsg.CreateTopicsRequestTopicReplicaAssignment) ([][]int32, error) {
	out := make([][]int32, len(in))
	for _, a := range in {
		if a.Partition < 0 || int(a.Partition) >= len(in) || out[a.Partition] != nil {
			return nil, newTopicError(protocol.InvalidReplicaAssignment,
				"Partitions should be 0-based consecutive numbers; got partition %d.", a.Partition)
		}
		out[a.Partition] = a.Replicas
	}
	return out, nil
}

// describeNewTopicConfigs lists every topic config's value and source for
// a topic with the given overrides, as CreateTopics v5+ responses do.
func (b *Broker) describeNewTopicConfigs(md *cluster.Metadata, overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	defs := configs.Topics()
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(defs))
	for _, d := range defs {
		v, src, _ := configs.Resolve(d.Name, overrides, md.BrokerConfigs[b.cfg.NodeID], md.BrokerConfigs[-1], b.reportedStaticConfigs())
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Source, c.IsSensitive = d.Name, int8(src), d.Sensitive
		if src != configs.SourceDefault || !d.NullDefault {
			val := v
			c.Value = &val
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func setTopicError(out *kmsg.CreateTopicsResponseTopic, err error) {
	code := errorCode(err)
	msg := err.Error()
	out.ErrorCode, out.ErrorMessage = int16(code), &msg
	out.NumPartitions, out.ReplicationFactor = -1, -1
}
