package broker

// DeleteTopics (key 20), versions 1-6.
//
// Topics by name (all versions) or, from v6, by id. An unknown name is
// UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID; naming both a
// name and an id, or neither, is INVALID_REQUEST. The registry removes the
// topic, its partition states and configs in one transaction; this broker
// deletes its logs before answering, the others when they see the change.
//
// Authorization, as Kafka's controller: DELETE on the cluster allows every
// topic; without it a topic needs DELETE on itself, and DESCRIBE to learn
// whether it exists. By name: without DESCRIBE, TOPIC_AUTHORIZATION_FAILED
// whether it exists or not; with it, an unknown name is
// UNKNOWN_TOPIC_OR_PARTITION and one without DELETE
// TOPIC_AUTHORIZATION_FAILED. By id (not secret): an unknown one is
// UNKNOWN_TOPIC_ID; one without DELETE TOPIC_AUTHORIZATION_FAILED, with the
// topic's name only when DESCRIBE allows it. A denied topic's id is never
// answered for its name.
//
// A topic about to be deleted counts its partitions against the
// controller_mutation_rate quota (client_quotas.go): from v5 a topic met
// with the quota used up fails with THROTTLING_QUOTA_EXCEEDED and stays.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var deleteTopicsAPI = handler{key: 20, min: 1, max: 6, handle: (*Broker).handleDeleteTopics}

func (b *Broker) handleDeleteTopics(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	topics := req.Topics
	if hdr.APIVersion < 6 {
		topics = nil
		for _, name := range req.TopicNames {
			n := name
			topics = append(topics, kmsg.DeleteTopicsRequestTopic{Topic: &n})
		}
	}
	describable, deletable := c.topicsAllowed(acl.OpDescribe), c.topicsAllowed(acl.OpDelete)
	if c.authorizedCluster(acl.OpDelete) {
		every := func(string) bool { return true }
		describable, deletable = every, every
	}
	denied := func(out *kmsg.DeleteTopicsResponseTopic) {
		msg := "Topic authorization failed."
		out.ErrorCode, out.ErrorMessage = int16(protocol.TopicAuthorizationFailed), &msg
	}
	mutations := c.mutationQuota(hdr, 5)
	defer c.endMutations(mutations)
	// quotaRefuses counts a topic's partitions against the controller
	// mutation quota, as Kafka's controller does for a topic it has; a
	// topic this view does not have yet has no known count.
	quotaRefuses := func(t *cluster.Topic) bool {
		return t != nil && !mutations.Record(len(t.Partitions), time.Now())
	}
	deleted := false
	for _, rt := range topics {
		out := kmsg.NewDeleteTopicsResponseTopic()
		out.Topic, out.TopicID = rt.Topic, rt.TopicID
		md := b.cluster.Snapshot()
		var err error
		switch {
		case rt.Topic != nil && rt.TopicID != [16]byte{}, rt.Topic == nil && rt.TopicID == [16]byte{}:
			err = newTopicError(protocol.InvalidRequest, "Either the topic name or the topic id must be given, not both.")
		case rt.Topic != nil:
			t := md.Topics[*rt.Topic]
			if !describable(*rt.Topic) || (t != nil && !deletable(*rt.Topic)) {
				denied(&out)
				resp.Topics = append(resp.Topics, out)
				continue
			}
			if t != nil {
				out.TopicID = t.ID
			}
			err = cluster.ErrUnknownTopic
			switch {
			case !deletable(*rt.Topic):
			case quotaRefuses(t):
				err = errMutationQuota()
			default:
				// Even when this view does not have it yet.
				err = b.cluster.DeleteTopic(ctx, *rt.Topic)
			}
			if errors.Is(err, cluster.ErrUnknownTopic) {
				err = newTopicError(protocol.UnknownTopicOrPartition, "This server does not host this topic-partition.")
			}
		default:
			t := md.TopicsByID[cluster.TopicID(rt.TopicID)]
			if t != nil && !deletable(t.Name) {
				if describable(t.Name) {
					name := t.Name
					out.Topic = &name
				}
				denied(&out)
				resp.Topics = append(resp.Topics, out)
				continue
			}
			if t != nil {
				name := t.Name
				out.Topic = &name
			}
			err = cluster.ErrUnknownTopic
			// The authorizer decides by name: an id this view does not
			// have yet is tried only when there is none.
			switch {
			case t == nil && b.cfg.AuthorizerClassName != "":
			case quotaRefuses(t):
				err = errMutationQuota()
			default:
				err = b.cluster.DeleteTopicByID(ctx, cluster.TopicID(rt.TopicID))
			}
			if errors.Is(err, cluster.ErrUnknownTopic) {
				err = newTopicError(protocol.UnknownTopicID, "This server does not host this topic ID.")
			}
		}
		if err != nil {
			msg := err.Error()
			out.ErrorCode, out.ErrorMessage = int16(errorCode(err)), &msg
		} else {
			deleted = true
		}
		resp.Topics = append(resp.Topics, out)
	}
	if deleted {
		if err := b.syncPartitions(b.cluster.Snapshot()); err != nil {
			b.logger.Error("deleting logs of deleted topics failed", "err", err)
		}
	}
	return resp, nil
}
