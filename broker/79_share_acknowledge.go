package broker

// ShareAcknowledge (key 79), versions 1-2.
//
// Share groups (KIP-932): a member acknowledges records it acquired with
// ShareFetch (accept, release, reject; gaps for offsets with no record)
// without fetching more, in its share session on the partitions' leader.
// The answer waits until the new state is durable at the share
// coordinator. Epoch 0 is INVALID_SHARE_SESSION_EPOCH (a session is opened
// by ShareFetch only); -1 closes the session after the acknowledgements and
// releases what the member still holds. v2 (KIP-1222) adds the renew
// type (4), which extends locks, and the lock timeout in the answer.
//
// Authorization, as Kafka's: READ on the group before anything else (the
// whole request GROUP_AUTHORIZATION_FAILED), then READ on each topic: the
// acknowledgements of a partition of a topic without it are not applied
// and the partition is TOPIC_AUTHORIZATION_FAILED.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
)

var shareAcknowledgeAPI = handler{key: 79, min: 1, max: 2, handle: (*Broker).handleShareAcknowledge}

func (b *Broker) handleShareAcknowledge(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	groupID, memberID := derefStr(req.GroupID), derefStr(req.MemberID)
	if !c.authorized(acl.OpRead, acl.ResourceGroup, groupID) {
		resp.ErrorCode = int16(protocol.GroupAuthorizationFailed)
		return resp, nil
	}
	fail := func(code protocol.ErrorCode, msg string) (kmsg.Response, error) {
		resp.ErrorCode = int16(code)
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	resp.AcquisitionLockTimeoutMillis = int32(b.shareSettings(groupID).lockDuration / time.Millisecond)
	acks := map[shareTP][]share.Ack{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			for _, ab := range p.AcknowledgementBatches {
				tp := shareTP{t.TopicID, p.Partition}
				acks[tp] = append(acks[tp], share.Ack{First: ab.FirstOffset, Last: ab.LastOffset, Types: ab.AcknowledgeTypes})
			}
		}
	}
	switch {
	case checkAckTypes(req.Version, acks) != protocol.None:
		return fail(protocol.InvalidRequest, "Unknown acknowledge type for this version.")
	case groupID == "" || memberID == "":
		return fail(protocol.InvalidRequest, "GroupId and MemberId must be set.")
	case req.ShareSessionEpoch == 0:
		return fail(protocol.InvalidShareSessionEpoch, "A share session is opened by ShareFetch.")
	}
	sess, code := b.shares.session(shareSessionKey{groupID, memberID}, req.ShareSessionEpoch, time.Now())
	if code != protocol.None {
		return fail(code, "")
	}
	defer sess.mu.Unlock()
	unreadable := shareTopicsUnreadable(c, b.cluster.Snapshot())
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			tp := shareTP{t.TopicID, p.Partition}
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			code := protocol.TopicAuthorizationFailed
			if !unreadable(tp.topicID) {
				var sp *sharePart
				if sp, code = b.sharePartFor(ctx, groupID, tp); code == protocol.None {
					code = b.shares.acknowledge(ctx, sp, memberID, acks[tp])
				}
			}
			rp.ErrorCode = int16(code)
			b.setShareLeaderHint(&rp.CurrentLeader.LeaderID, &rp.CurrentLeader.LeaderEpoch, tp, code)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.ShareSessionEpoch == -1 {
		delete(c.shareSessions, sess.key)
		for _, tp := range sess.mu.parts {
			if sp, code := b.sharePartFor(ctx, groupID, tp); code == protocol.None {
				b.shares.releaseMember(ctx, sp, memberID)
			}
		}
	}
	return resp, nil
}
