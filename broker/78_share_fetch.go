package broker

// ShareFetch (key 78), versions 1-2.
//
// Share groups (KIP-932): a member fetches records of its assigned
// partitions from their leader, which acquires them for it (a lock of
// share.record.lock.duration.ms; AcquiredRecords says which offsets, with
// their delivery counts), and acknowledges earlier records in the same
// request. The share session (share_sessions.go) holds the partitions;
// acknowledgements are applied and made durable at the share coordinator
// before the answer, then records are acquired on every partition of the
// session, at most MaxRecords in all, waiting up to MaxWaitMs while none
// are available. Epoch -1 closes the session after its acknowledgements and
// fetches nothing. The records sent are whole batches of the log: the
// client keeps the acquired offsets only.
//
// v2 (KIP-1222) adds the renew acknowledgement (type 4: the lock is
// extended) and IsRenewAck, a request that only renews and fetches nothing;
// ShareAcquireMode record_limit asks for at most MaxRecords records, which
// Gregor always keeps to (it acquires record by record). Renew in a v1
// request is INVALID_REQUEST.
//
// Authorization, as Kafka's: READ on the group before anything else (the
// whole request GROUP_AUTHORIZATION_FAILED), then READ on each topic. A
// partition of a topic without it stays in the session but is
// TOPIC_AUTHORIZATION_FAILED on every fetch, nothing acquired, and its
// acknowledgements are not applied (acknowledge error
// TOPIC_AUTHORIZATION_FAILED). A topic id that names no topic is
// UNKNOWN_TOPIC_ID as before: there is no name to check.
//
// The record bytes count against the member's consumer_byte_rate, as in
// Kafka 4 (throttleShareFetch): max_bytes is capped to one measurement's
// worth of the quota, and a fetch that goes over it is answered with no
// records, the throttle time and its acknowledgement results.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/quota"
	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/coordinator/share"
	"github.com/gregor-io/gregor/protocol"
)

var shareFetchAPI = handler{key: 78, min: 1, max: 2, handle: (*Broker).handleShareFetch}

// maxShareFetchWait bounds a ShareFetch's MaxWaitMillis, as maxFetchWait
// does a Fetch's.
const maxShareFetchWait = maxFetchWait

func (b *Broker) handleShareFetch(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	groupID, memberID := derefStr(req.GroupID), derefStr(req.MemberID)
	if !c.authorized(acl.OpRead, acl.ResourceGroup, groupID) {
		resp.ErrorCode = int16(protocol.GroupAuthorizationFailed)
		return resp, nil
	}
	md := b.cluster.Snapshot()
	unreadable := shareTopicsUnreadable(c, md)
	set := b.shareSettings(groupID)
	resp.AcquisitionLockTimeoutMillis = int32(set.lockDuration / time.Millisecond)
	fail := func(code protocol.ErrorCode, msg string) (kmsg.Response, error) {
		resp.ErrorCode = int16(code)
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	if groupID == "" || memberID == "" {
		return fail(protocol.InvalidRequest, "GroupId and MemberId must be set.")
	}
	var requested []shareTP
	acks := map[shareTP][]share.Ack{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := shareTP{t.TopicID, p.Partition}
			requested = append(requested, tp)
			for _, ab := range p.AcknowledgementBatches {
				acks[tp] = append(acks[tp], share.Ack{First: ab.FirstOffset, Last: ab.LastOffset, Types: ab.AcknowledgeTypes})
			}
		}
	}
	if code := checkAckTypes(req.Version, acks); code != protocol.None {
		return fail(code, "Unknown acknowledge type for this version.")
	}
	if req.ShareSessionEpoch == 0 && len(acks) > 0 {
		return fail(protocol.InvalidRequest, "Acknowledge data is not allowed in the first request of a share session.")
	}
	var forgotten []shareTP
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forgotten = append(forgotten, shareTP{t.TopicID, p})
		}
	}
	now := time.Now()
	sess, code := b.shares.session(shareSessionKey{groupID, memberID}, req.ShareSessionEpoch, now)
	if code != protocol.None {
		return fail(code, "")
	}
	defer sess.mu.Unlock()
	switch req.ShareSessionEpoch {
	case 0:
		if c.shareSessions == nil {
			c.shareSessions = map[shareSessionKey]*shareSession{}
		}
		c.shareSessions[sess.key] = sess
	case -1:
		delete(c.shareSessions, sess.key)
	}
	out := newShareFetchOut(resp)
	if req.ShareSessionEpoch != -1 {
		// Only partitions that exist join the session, so that its size
		// is bounded by the cluster's partitions, whatever a client sends.
		// A partition the principal may not read joins it all the same,
		// as in Kafka: it is refused on each fetch.
		known := requested[:0:0]
		for _, tp := range requested {
			t := md.TopicsByID[cluster.TopicID(tp.topicID)]
			switch {
			case t == nil:
				out.partition(tp).ErrorCode = int16(protocol.UnknownTopicID)
			case tp.partition < 0 || int(tp.partition) >= len(t.Partitions):
				code := protocol.UnknownTopicOrPartition
				if unreadable(tp.topicID) {
					code = protocol.TopicAuthorizationFailed
				}
				out.partition(tp).ErrorCode = int16(code)
			default:
				known = append(known, tp)
			}
		}
		sess.updateLocked(known, forgotten)
	}

	// 1. Acknowledgements, durable before anything is answered.
	for _, tp := range requested {
		if a := acks[tp]; len(a) > 0 {
			rp := out.partition(tp)
			code := protocol.TopicAuthorizationFailed
			if !unreadable(tp.topicID) {
				var sp *sharePart
				if sp, code = b.sharePartFor(ctx, groupID, tp); code == protocol.None {
					code = b.shares.acknowledge(ctx, sp, memberID, a)
				}
			}
			rp.AcknowledgeErrorCode = int16(code)
			out.acked[tp] = true
			b.setShareLeaderHint(&rp.CurrentLeader.LeaderID, &rp.CurrentLeader.LeaderEpoch, tp, code)
		}
	}
	if req.IsRenewAck && req.ShareSessionEpoch != -1 {
		return out.done(), nil
	}
	if req.ShareSessionEpoch == -1 {
		for _, tp := range sess.mu.parts {
			if sp, code := b.sharePartFor(ctx, groupID, tp); code == protocol.None {
				b.shares.releaseMember(ctx, sp, memberID)
			}
		}
		return out.done(), nil
	}

	// 2. Records: acquire on every partition of the session the principal
	// may read, waiting while there are none.
	var readable []shareTP
	for _, tp := range sess.mu.parts {
		if unreadable(tp.topicID) {
			out.partition(tp).ErrorCode = int16(protocol.TopicAuthorizationFailed)
			continue
		}
		readable = append(readable, tp)
	}
	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = shareFetchDefaultMaxRecords
	}
	maxBytes := int64(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = 50 << 20
	}
	// As a consumer fetch's: capped to what the consumer_byte_rate bucket
	// lets through (quota.Manager.MaxFetch).
	if most, ok := b.clientQuotas.mgr.MaxFetch(quota.UserOf(c.principal), c.clientID, time.Now()); ok && most < float64(maxBytes) {
		maxBytes = max(int64(most), 1)
	}
	acquiredOn := map[shareTP]acquiredRuns{}
	wait := min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, maxShareFetchWait)
	deadline := now.Add(wait)
	var parkedAt time.Time
	for {
		wake := make(chan struct{}, 1)
		var unsubs []func()
		var partWakes []chan struct{}
		got := 0
		for _, tp := range readable {
			if got >= maxRecords || maxBytes <= 0 {
				break
			}
			sp, code := b.sharePartFor(ctx, groupID, tp)
			if code != protocol.None {
				rp := out.partition(tp)
				rp.ErrorCode = int16(code)
				b.setShareLeaderHint(&rp.CurrentLeader.LeaderID, &rp.CurrentLeader.LeaderEpoch, tp, code)
				continue
			}
			unsubs = append(unsubs, sp.log.Subscribe(wake))
			partWakes = append(partWakes, sp.wakeChan())
			recs, acquired, err := b.shares.acquire(sp, memberID, maxRecords-got, maxBytes, set.readCommitted)
			if err != nil {
				rp := out.partition(tp)
				rp.ErrorCode = int16(errorCode(err))
				continue
			}
			if len(acquired) == 0 {
				continue
			}
			rp := out.partition(tp)
			rp.Records = recs
			acquiredOn[tp] = acquiredRuns{sp, acquired}
			maxBytes -= int64(len(recs))
			for _, a := range acquired {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
				rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
				got += int(a.Last - a.First + 1)
			}
		}
		left := time.Until(deadline)
		if got > 0 || len(acks) > 0 || left <= 0 || len(readable) == 0 {
			for _, u := range unsubs {
				u()
			}
			break
		}
		if parkedAt.IsZero() {
			parkedAt = time.Now()
			c.releaseSlot()
		}
		timer := time.NewTimer(left)
		merged := make(chan struct{})
		stop := make(chan struct{})
		for _, w := range partWakes {
			go func() {
				select {
				case <-w:
					select {
					case merged <- struct{}{}:
					default:
					}
				case <-stop:
				}
			}()
		}
		select {
		case <-wake:
		case <-merged:
		case <-timer.C:
		case <-ctx.Done():
		}
		close(stop)
		timer.Stop()
		for _, u := range unsubs {
			u()
		}
		if ctx.Err() != nil {
			break
		}
	}
	if !parkedAt.IsZero() {
		c.addParked(time.Since(parkedAt))
	}
	if d := b.throttleShareFetch(ctx, c, memberID, out, acquiredOn); d > 0 {
		return out.done(), nil
	}
	if req.ShareSessionEpoch == 0 {
		// The answer that opens a session lists every partition of it,
		// those with nothing to acquire too, as Kafka's full share
		// session response does; later answers only those with news.
		for _, tp := range readable {
			out.partition(tp)
		}
	}
	return out.done(), nil
}

// acquiredRuns are the records a ShareFetch acquired on one share
// partition.
type acquiredRuns struct {
	sp   *sharePart
	runs []share.AcquiredRun
}

// throttleShareFetch records the record bytes a ShareFetch is about to
// send against the connection's consumer_byte_rate, as Kafka's
// handleShareFetchRequest records the response's, and returns the
// throttle time. A throttled fetch's bytes are taken back and, as Kafka
// answers it, its response carries no records, only the acknowledgement
// results and the throttle time (applyClientQuotas sets it and mutes the
// connection). Its records are released at once, where Kafka leaves them
// acquired until their locks expire: either way they are offered again
// with the delivery counts they had.
func (b *Broker) throttleShareFetch(ctx context.Context, c *conn, memberID string, out *shareFetchOut, acquiredOn map[shareTP]acquiredRuns) time.Duration {
	if len(acquiredOn) == 0 || !b.clientQuotas.mgr.Enabled(quota.Fetch) {
		return 0
	}
	var n int
	for tp := range acquiredOn {
		n += len(out.parts[tp].Records)
	}
	user, now := quota.UserOf(c.principal), time.Now()
	d := b.clientQuotas.mgr.Record(quota.Fetch, user, c.clientID, float64(n), now)
	if d <= 0 {
		return 0
	}
	b.clientQuotas.mgr.Unrecord(quota.Fetch, user, c.clientID, float64(n), now)
	for _, a := range acquiredOn {
		release := make([]share.Ack, 0, len(a.runs))
		for _, r := range a.runs {
			release = append(release, share.Ack{First: r.First, Last: r.Last, Types: []int8{share.AckRelease}})
		}
		b.shares.acknowledge(ctx, a.sp, memberID, release)
	}
	// Only the acknowledgement results stay, as Kafka adds them to its
	// empty throttled response.
	order := out.order[:0]
	for _, tp := range out.order {
		rp := out.parts[tp]
		if !out.acked[tp] {
			delete(out.parts, tp)
			continue
		}
		rp.ErrorCode, rp.Records, rp.AcquiredRecords = 0, []byte{}, nil
		order = append(order, tp)
	}
	out.order = order
	c.fetchThrottle = d
	return d
}

// shareTopicsUnreadable returns whether a topic id of md names a topic
// c's principal may not READ, deciding each topic once; an id that names
// no topic is not refused (it is UNKNOWN_TOPIC_ID).
func shareTopicsUnreadable(c *conn, md *cluster.Metadata) func(id [16]byte) bool {
	readable := c.topicsAllowed(acl.OpRead)
	return func(id [16]byte) bool {
		name, ok := groupTopicName(md, id)
		return ok && !readable(name)
	}
}

// sharePartFor finds the share partition of group on a partition this
// broker leads, loading it on first use.
func (b *Broker) sharePartFor(ctx context.Context, group string, tp shareTP) (*sharePart, protocol.ErrorCode) {
	p, code := b.lookupPartition("", tp.topicID, true, tp.partition)
	if code != protocol.None {
		return nil, code
	}
	name := b.parts.Load().names[tp.topicID]
	return b.shares.part(ctx, group, name, p)
}

// setShareLeaderHint fills a partition's current leader for a
// NOT_LEADER_OR_FOLLOWER answer, so the client goes to the new leader.
func (b *Broker) setShareLeaderHint(id, epoch *int32, tp shareTP, code protocol.ErrorCode) {
	*id, *epoch = -1, -1
	if code != protocol.NotLeaderOrFollower {
		return
	}
	md := b.cluster.Snapshot()
	for _, t := range md.Topics {
		if [16]byte(t.ID) == tp.topicID && int(tp.partition) < len(t.Partitions) {
			*id, *epoch = t.Partitions[tp.partition].Leader, t.Partitions[tp.partition].LeaderEpoch
			return
		}
	}
}

// shareFetchOut builds a ShareFetch response, a topic and partition entry
// on first mention.
type shareFetchOut struct {
	resp  *kmsg.ShareFetchResponse
	parts map[shareTP]*kmsg.ShareFetchResponseTopicPartition
	order []shareTP
	// acked are the partitions that carry an acknowledgement result.
	acked map[shareTP]bool
}

func newShareFetchOut(resp *kmsg.ShareFetchResponse) *shareFetchOut {
	return &shareFetchOut{resp: resp, parts: map[shareTP]*kmsg.ShareFetchResponseTopicPartition{}, acked: map[shareTP]bool{}}
}

func (o *shareFetchOut) partition(tp shareTP) *kmsg.ShareFetchResponseTopicPartition {
	if rp := o.parts[tp]; rp != nil {
		return rp
	}
	rp := kmsg.NewShareFetchResponseTopicPartition()
	rp.Partition = tp.partition
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
	rp.Records = []byte{}
	o.parts[tp] = &rp
	o.order = append(o.order, tp)
	return &rp
}

func (o *shareFetchOut) done() *kmsg.ShareFetchResponse {
	index := map[[16]byte]int{}
	for _, tp := range o.order {
		i, ok := index[tp.topicID]
		if !ok {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = tp.topicID
			o.resp.Topics = append(o.resp.Topics, t)
			i = len(o.resp.Topics) - 1
			index[tp.topicID] = i
		}
		o.resp.Topics[i].Partitions = append(o.resp.Topics[i].Partitions, *o.parts[tp])
	}
	return o.resp
}

// checkAckTypes refuses acknowledgement types the version does not know:
// renew (4) came with v2.
func checkAckTypes(version int16, acks map[shareTP][]share.Ack) protocol.ErrorCode {
	for _, as := range acks {
		for _, a := range as {
			for _, t := range a.Types {
				if t < share.AckGap || t > share.AckRenew || (t == share.AckRenew && version < 2) {
					return protocol.InvalidRequest
				}
			}
		}
	}
	return protocol.None
}

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
