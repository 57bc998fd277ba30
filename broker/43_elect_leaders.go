package broker

// ElectLeaders (key 43), versions 0-2.
//
// Elects leaders on demand, as Kafka's controller does for
// kafka-leader-election: a preferred election (v0's only kind) makes a
// partition's first replica its leader when that replica is live and in
// the ISR; an unclean election (v1+ ElectionType 1) gives a partition
// with no live leader an eligible ISR member, or failing that its first
// live replica alone in the ISR. Any broker serves it, writing to the
// registry (cluster.ElectLeaders), as any Kafka 4 broker forwards it to
// the controller. Per partition, Kafka's errors: ELECTION_NOT_NEEDED (the
// preferred replica leads; the partition has a live leader),
// PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
// UNKNOWN_TOPIC_OR_PARTITION. A null topic list means every partition,
// and then those that needed no election are left out of the answer, as
// Kafka leaves them out. A failure of the whole request (its timeout
// passing: REQUEST_TIMED_OUT) is the top-level error (v1+) and every
// partition's. So is CLUSTER_AUTHORIZATION_FAILED, checked first: the
// request needs ALTER on the cluster, as Kafka's controller asks.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var electLeadersAPI = handler{key: 43, min: 0, max: 2, handle: (*Broker).handleElectLeaders}

// Election types of ElectLeaders v1+.
const (
	electionPreferred = 0
	electionUnclean   = 1
)

func (b *Broker) handleElectLeaders(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	kind := req.ElectionType
	if hdr.APIVersion == 0 {
		kind = electionPreferred
	}
	var targets []cluster.ElectionTarget
	if req.Topics != nil {
		targets = []cluster.ElectionTarget{}
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				targets = append(targets, cluster.ElectionTarget{Topic: rt.Topic, Partition: p})
			}
		}
	}
	if !c.authorizedCluster(acl.OpAlter) {
		code, msg := notAuthorized(acl.OpAlter)
		return electLeadersFailed(resp, hdr.APIVersion, targets, protocol.ErrorCode(code), *msg), nil
	}
	if kind != electionPreferred && kind != electionUnclean {
		msg := "Unknown election type"
		return electLeadersFailed(resp, hdr.APIVersion, targets, protocol.InvalidRequest, msg), nil
	}
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	results, err := b.cluster.ElectLeaders(ctx, targets, kind == electionUnclean)
	if err != nil {
		code := electErrorCode(err)
		if code == protocol.UnknownServerError {
			b.logger.Warn("electing leaders failed", "err", err)
		}
		return electLeadersFailed(resp, hdr.APIVersion, targets, code, err.Error()), nil
	}
	byTopic := map[string]int{}
	for _, res := range results {
		i, ok := byTopic[res.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[res.Topic] = i
			t := kmsg.NewElectLeadersResponseTopic()
			t.Topic = res.Topic
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewElectLeadersResponseTopicPartition()
		p.Partition = res.Partition
		if res.Err != nil {
			msg := res.Err.Error()
			p.ErrorCode, p.ErrorMessage = int16(electErrorCode(res.Err)), &msg
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	return resp, nil
}

// electLeadersFailed answers a request that failed as a whole: the code at
// the top (v1+) and on every partition asked.
func electLeadersFailed(resp *kmsg.ElectLeadersResponse, version int16, targets []cluster.ElectionTarget, code protocol.ErrorCode, msg string) *kmsg.ElectLeadersResponse {
	if version >= 1 {
		resp.ErrorCode = int16(code)
	}
	byTopic := map[string]int{}
	for _, t := range targets {
		i, ok := byTopic[t.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[t.Topic] = i
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		p := kmsg.NewElectLeadersResponseTopicPartition()
		p.Partition, p.ErrorCode = t.Partition, int16(code)
		m := msg
		p.ErrorMessage = &m
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	return resp
}

// electErrorCode is the Kafka code of an ElectLeaders error.
func electErrorCode(err error) protocol.ErrorCode {
	switch {
	case errors.Is(err, cluster.ErrUnknownTopic):
		return protocol.UnknownTopicOrPartition
	case errors.Is(err, cluster.ErrElectionNotNeeded):
		return protocol.ElectionNotNeeded
	case errors.Is(err, cluster.ErrPreferredNotAvailable):
		return protocol.PreferredLeaderNotAvailable
	case errors.Is(err, cluster.ErrEligibleNotAvailable):
		return protocol.EligibleLeadersNotAvailable
	case errors.Is(err, cluster.ErrNotVisible), errors.Is(err, context.DeadlineExceeded):
		return protocol.RequestTimedOut
	}
	return protocol.UnknownServerError
}
