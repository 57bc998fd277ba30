package broker

// Metadata (key 3), versions 0-13.
//
// Brokers, cluster id and controller come from the registry's cached view;
// topics with their partitions' leader, leader epoch (v7+), replicas, ISR
// and offline replicas (v5+), and topic ids (v10+). A null topic list (v1+)
// or an empty one (v0) asks for every topic; v10+ may name topics by id
// (UNKNOWN_TOPIC_ID when unknown). With auto.create.topics.enable and the
// request's allow_auto_topic_creation (v4+; always before v4), an unknown
// topic with a valid name is created with num.partitions and
// default.replication.factor; unlike Kafka, whose creation completes
// asynchronously and answers LEADER_NOT_AVAILABLE first, the topic is
// created before the response and returned whole. Internal topics are
// never auto-created here.
//
// Brokers are told with their endpoint on the listener the request came in
// on, and a broker without that listener is left out, as Kafka does. A
// partition whose leader is live but lacks the listener has no leader (-1)
// and LISTENER_NOT_FOUND from v6 (LEADER_NOT_AVAILABLE before), which
// points at a listener configured on some brokers only; its replicas and
// ISR are listed as they are, and replicas without the listener count as
// offline.
//
// Authorization, as Kafka's: a topic needs DESCRIBE. Asking for every topic
// lists only those; a topic asked for by name without it gets
// TOPIC_AUTHORIZATION_FAILED and nothing else (no id, whether it exists or
// not), one asked for by id the same with its id and no name. When the
// request may auto-create topics, a missing one (even with an illegal
// name) needs CREATE on the cluster or on the topic, or it gets
// TOPIC_AUTHORIZATION_FAILED and is not created. Authorized operations
// (v8+, when asked) are the principal's on each allowed topic, described or
// reported missing, and, in v8-10, on the cluster (none without DESCRIBE
// on it).

import (
	"context"
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var metadataAPI = handler{key: 3, min: 0, max: 13, handle: (*Broker).handleMetadata}

// operationsOmitted is the authorized operations of a response that was
// not asked for them (INT32_MIN).
const operationsOmitted int32 = -2147483648

func (b *Broker) handleMetadata(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	if code := metadataRequestError(req); code != protocol.None {
		return metadataErrorResponse(req, code), nil
	}
	md := b.cluster.Snapshot()
	all := req.Topics == nil || (hdr.APIVersion == 0 && len(req.Topics) == 0)
	autoCreate := b.cfg.AutoCreateTopicsEnable && (hdr.APIVersion < 4 || req.AllowAutoTopicCreation)
	describable := c.topicsAllowed(acl.OpDescribe)
	topicOps := func(name string) int32 {
		if !req.IncludeTopicAuthorizedOperations {
			return operationsOmitted
		}
		return c.authorizedOps(acl.ResourceTopic, name)
	}

	// Create what is missing first, so the response is built from one view.
	var createDenied map[string]bool
	if !all && autoCreate {
		created := false
		creatable := c.metadataCreatable()
		for _, t := range req.Topics {
			if t.Topic == nil || t.TopicID != [16]byte{} || md.Topics[*t.Topic] != nil || !describable(*t.Topic) {
				continue
			}
			if !creatable(*t.Topic) {
				if createDenied == nil {
					createDenied = map[string]bool{}
				}
				createDenied[*t.Topic] = true
				continue
			}
			if validTopicName(*t.Topic) != nil || internalTopics[*t.Topic] {
				continue
			}
			if err := b.autoCreateTopic(ctx, *t.Topic); err != nil && !errors.Is(err, cluster.ErrTopicExists) {
				b.logger.Warn("auto-creating a topic failed", "topic", *t.Topic, "err", err)
			}
			created = true
		}
		if created {
			md = b.cluster.Snapshot()
		}
	}

	for _, br := range md.Brokers {
		host, port, ok := br.Endpoint(c.listener)
		if !ok {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = br.NodeID, host, port, br.Rack
		resp.Brokers = append(resp.Brokers, mb)
	}
	id := md.ClusterID
	resp.ClusterID = &id
	resp.ControllerID = md.ControllerID
	resp.AuthorizedOperations = operationsOmitted
	if req.IncludeClusterAuthorizedOperations && hdr.APIVersion >= 8 && hdr.APIVersion <= 10 {
		resp.AuthorizedOperations = c.clusterAuthorizedOps()
	}

	if all {
		names := make([]string, 0, len(md.Topics))
		for name := range md.Topics {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if describable(name) {
				resp.Topics = append(resp.Topics, b.describeTopic(md, md.Topics[name], topicOps(name), c.listener, hdr.APIVersion))
			}
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		// A topic asked for by id is looked up by the id alone: the Java
		// client sends an empty name (not null) with it.
		byID := rt.TopicID != [16]byte{}
		var t *cluster.Topic
		switch {
		case byID:
			t = md.TopicsByID[cluster.TopicID(rt.TopicID)]
		case rt.Topic != nil:
			t = md.Topics[*rt.Topic]
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
		mt.AuthorizedOperations = operationsOmitted
		switch {
		case byID && t != nil && !describable(t.Name):
			// A topic id is not secret; its name is.
			mt.Topic = nil
			mt.ErrorCode = int16(protocol.TopicAuthorizationFailed)
		case !byID && rt.Topic != nil && !describable(*rt.Topic):
			mt.ErrorCode = int16(protocol.TopicAuthorizationFailed)
		case t != nil:
			mt = b.describeTopic(md, t, topicOps(t.Name), c.listener, hdr.APIVersion)
		case byID || rt.Topic == nil:
			mt.Topic = nil
			mt.ErrorCode = int16(protocol.UnknownTopicID)
		case createDenied[*rt.Topic]:
			mt.IsInternal = internalTopics[*rt.Topic]
			mt.ErrorCode = int16(protocol.TopicAuthorizationFailed)
		default:
			mt.AuthorizedOperations = topicOps(*rt.Topic)
			switch {
			case validTopicName(*rt.Topic) != nil:
				mt.ErrorCode = int16(protocol.InvalidTopicException)
			case autoCreate && !internalTopics[*rt.Topic]:
				// The creation failed or is not visible yet.
				mt.ErrorCode = int16(protocol.LeaderNotAvailable)
			default:
				mt.ErrorCode = int16(protocol.UnknownTopicOrPartition)
			}
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp, nil
}

// metadataCreatable returns a function reporting whether c's principal may
// have a topic auto-created: CREATE on the cluster (asked once, when first
// needed) or on the topic.
func (c *conn) metadataCreatable() func(name string) bool {
	onTopic := c.topicsAllowed(acl.OpCreate)
	asked, onCluster := false, false
	return func(name string) bool {
		if !asked {
			asked, onCluster = true, c.authorizedCluster(acl.OpCreate)
		}
		return onCluster || onTopic(name)
	}
}

// describeTopic is t's entry in a Metadata response of the given version,
// with ops as its authorized operations, for a client on listener.
func (b *Broker) describeTopic(md *cluster.Metadata, t *cluster.Topic, ops int32, listener string, version int16) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = internalTopics[t.Name]
	mt.AuthorizedOperations = ops
	for i, st := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(i)
		mp.Leader, mp.LeaderEpoch = st.Leader, st.LeaderEpoch
		mp.Replicas, mp.ISR = st.Replicas, st.ISR
		mp.OfflineReplicas = b.offlineReplicas(md, t, int32(i), listener)
		switch {
		case !b.leaderAvailable(md, t, int32(i)):
			mp.ErrorCode = int16(protocol.LeaderNotAvailable)
			mp.Leader = -1
		case !hasListener(md, st.Leader, listener):
			mp.ErrorCode = int16(protocol.ListenerNotFound)
			if version < 6 {
				mp.ErrorCode = int16(protocol.LeaderNotAvailable)
			}
			mp.Leader = -1
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// metadataRequestError returns the error that fails a whole Metadata
// request as Kafka 4.4 fails it: before v12 a topic must have a name and no
// id (INVALID_REQUEST); from v12 a request that names no topic by id and
// has a topic with neither name nor id fails with UNKNOWN_SERVER_ERROR,
// which is what Kafka answers (its lookup of the null name fails).
func metadataRequestError(req *kmsg.MetadataRequest) protocol.ErrorCode {
	byID, nullName := false, false
	for _, t := range req.Topics {
		byID = byID || t.TopicID != [16]byte{}
		nullName = nullName || t.Topic == nil
	}
	switch {
	case req.Version < 12 && (byID || nullName):
		return protocol.InvalidRequest
	case !byID && nullName:
		return protocol.UnknownServerError
	}
	return protocol.None
}

// metadataErrorResponse is Kafka's answer to a Metadata request that
// failed as a whole: each topic asked for, with the error, and no brokers.
func metadataErrorResponse(req *kmsg.MetadataRequest, code protocol.ErrorCode) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, rt := range req.Topics {
		mt := kmsg.NewMetadataResponseTopic()
		name := ""
		if rt.Topic != nil {
			name = *rt.Topic
		}
		mt.Topic, mt.TopicID, mt.ErrorCode = &name, rt.TopicID, int16(code)
		mt.AuthorizedOperations = operationsOmitted
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}
