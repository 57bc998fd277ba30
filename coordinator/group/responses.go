package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinResponse returns a JoinGroup response for w with only an error code;
// the caller fills the rest.
func joinResponse(w *waiter, code int16) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version = w.version
	r.ErrorCode = code
	return r
}

// syncResponse returns a SyncGroup response for w with only an error code
// and a zero-length assignment.
func syncResponse(w *waiter, code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = w.version
	r.ErrorCode = code
	r.MemberAssignment = []byte{}
	return r
}

func strPtr(s string) *string { return &s }

// errorResponse answers req with code everywhere the response has room for
// an error: the whole request fails. It is used while loading and after the
// coordinator is fenced.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		r.Default()
		r.ErrorCode = code
		r.MemberID = req.(*kmsg.JoinGroupRequest).MemberID
	case *kmsg.SyncGroupResponse:
		r.ErrorCode = code
		r.MemberAssignment = []byte{}
	case *kmsg.HeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.LeaveGroupResponse:
		r.ErrorCode = code
	case *kmsg.OffsetCommitResponse:
		q := req.(*kmsg.OffsetCommitRequest)
		for _, t := range q.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.OffsetFetchResponse:
		q := req.(*kmsg.OffsetFetchRequest)
		switch {
		case q.Version >= 8:
			for _, g := range q.Groups {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.Group, code
				r.Groups = append(r.Groups, rg)
			}
		case q.Version >= 2:
			r.ErrorCode = code
		default:
			// v0 and v1 have no group-level error: every partition
			// carries it.
			for _, t := range q.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, code
					rp.Metadata = strPtr("")
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
	case *kmsg.OffsetDeleteResponse:
		r.ErrorCode = code
	case *kmsg.TxnOffsetCommitResponse:
		for _, t := range req.(*kmsg.TxnOffsetCommitRequest).Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.DescribeGroupsResponse:
		for _, g := range req.(*kmsg.DescribeGroupsRequest).Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			r.Groups = append(r.Groups, rg)
		}
	case *kmsg.ListGroupsResponse:
		r.ErrorCode = code
	case *kmsg.DeleteGroupsResponse:
		for _, g := range req.(*kmsg.DeleteGroupsRequest).Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			r.Groups = append(r.Groups, rg)
		}
	case *kmsg.ConsumerGroupHeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.ShareGroupHeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.ShareGroupDescribeResponse:
		for _, g := range req.(*kmsg.ShareGroupDescribeRequest).GroupIDs {
			rg := kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID, rg.ErrorCode = g, code
			r.Groups = append(r.Groups, rg)
		}
	case *kmsg.ConsumerGroupDescribeResponse:
		for _, g := range req.(*kmsg.ConsumerGroupDescribeRequest).Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			r.Groups = append(r.Groups, rg)
		}
	}
	return resp
}

// failResponse turns a response whose records failed to append into the
// error the client gets instead (Kafka's response for a failed write
// operation: the error alone, or the error on every partition or group).
func failResponse(resp kmsg.Response, code int16) kmsg.Response {
	v := resp.GetVersion()
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		return joinResponse(&waiter{version: v}, code)
	case *kmsg.SyncGroupResponse:
		return syncResponse(&waiter{version: v}, code)
	case *kmsg.HeartbeatResponse:
		f := kmsg.NewPtrHeartbeatResponse()
		f.Version, f.ErrorCode = v, code
		return f
	case *kmsg.LeaveGroupResponse:
		f := kmsg.NewPtrLeaveGroupResponse()
		f.Version, f.ErrorCode = v, code
		return f
	case *kmsg.OffsetCommitResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
		return r
	case *kmsg.OffsetDeleteResponse:
		f := kmsg.NewPtrOffsetDeleteResponse()
		f.Version, f.ErrorCode = v, code
		return f
	case *kmsg.TxnOffsetCommitResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
		return r
	case *kmsg.DeleteGroupsResponse:
		for i := range r.Groups {
			r.Groups[i].ErrorCode = code
		}
		return r
	case *kmsg.OffsetFetchResponse:
		if v >= 8 {
			for i := range r.Groups {
				r.Groups[i].ErrorCode, r.Groups[i].Topics = code, nil
			}
		} else if v >= 2 {
			r.ErrorCode, r.Topics = code, nil
		}
		return r
	case *kmsg.DescribeGroupsResponse:
		for i := range r.Groups {
			g := &r.Groups[i]
			*g = kmsg.DescribeGroupsResponseGroup{Group: g.Group, ErrorCode: code, AuthorizedOperations: g.AuthorizedOperations}
		}
		return r
	case *kmsg.ListGroupsResponse:
		r.ErrorCode, r.Groups = code, nil
		return r
	case *kmsg.ConsumerGroupHeartbeatResponse:
		f := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		f.Version, f.ErrorCode = v, code
		return f
	case *kmsg.ConsumerGroupDescribeResponse:
		for i := range r.Groups {
			g := &r.Groups[i]
			*g = kmsg.ConsumerGroupDescribeResponseGroup{Group: g.Group, ErrorCode: code, AuthorizedOperations: g.AuthorizedOperations}
		}
		return r
	}
	return resp
}

// ErrorResponse answers req, a request Step takes, with code wherever its
// response has room for an error: what a broker answers for a group whose
// coordinator it is not (NOT_COORDINATOR) or that it cannot reach.
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response { return errorResponse(req, code) }
