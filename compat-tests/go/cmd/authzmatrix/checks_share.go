package main

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareChecks: share groups (KIP-932), in the order a consumer goes: the
// heartbeat that makes shareMember a member with the partition assigned,
// describing the group, fetching and acknowledging as that member, then its
// offsets.
func shareChecks() []check {
	return []check{
		{api: "ShareGroupHeartbeat", cases: []aclCase{
			one("group-read", on(rtGroup, groupShare, opRead)),
			one("group-read+topic-describe", on(rtGroup, groupShare, opRead), on(rtTopic, topic, opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrShareGroupHeartbeatRequest()
				req.GroupID = groupShare
				req.MemberID = shareMember
				req.MemberEpoch = 0
				req.SubscribedTopicNames = []string{topic}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				hr := resp.(*kmsg.ShareGroupHeartbeatResponse)
				var r result
				r.code("error", hr.ErrorCode)
				if hr.ErrorCode == 0 {
					// Heartbeat on until the partition is assigned,
					// so that ShareFetch finds it; the member stays.
					r.add("assigned", yesNo(e.shareAssigned(ctx, hr)))
				}
				return r
			}},
		{api: "ShareGroupDescribe", cases: []aclCase{
			one("group-describe", on(rtGroup, groupShare, opDescribe)),
			one("group-describe+topic-describe", on(rtGroup, groupShare, opDescribe), on(rtTopic, topic, opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrShareGroupDescribeRequest()
				req.GroupIDs = []string{groupShare}
				req.IncludeAuthorizedOperations = true
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, g := range resp.(*kmsg.ShareGroupDescribeResponse).Groups {
					r.code("group", g.ErrorCode)
					r.ops("ops", g.AuthorizedOperations)
				}
				return r
			}},
		{api: "ShareFetch", cases: []aclCase{
			one("group-read", on(rtGroup, groupShare, opRead)),
			one("group-read+topic-read", on(rtGroup, groupShare, opRead), on(rtTopic, topic, opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				// As the member ShareGroupHeartbeat left in the group,
				// opening a share session (epoch 0).
				req := kmsg.NewPtrShareFetchRequest()
				req.GroupID = str(groupShare)
				req.MemberID = str(shareMember)
				req.ShareSessionEpoch = 0
				req.MaxWaitMillis = 100
				req.MaxBytes = 1 << 20
				req.MaxRecords = 10
				req.BatchSize = 10
				t := kmsg.NewShareFetchRequestTopic()
				t.TopicID = e.topicID
				p := kmsg.NewShareFetchRequestTopicPartition()
				p.PartitionMaxBytes = 1 << 20
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				// Kafka initializes a share partition's state
				// asynchronously after the assignment: a fetch
				// that finds it not yet initialized
				// (UNKNOWN_SERVER_ERROR), or a response without the
				// partition, is retried for up to 10 s, each in a
				// new session.
				deadline := time.Now().Add(10 * time.Second)
				for {
					resp, err := e.send(ctx, req)
					if err != nil {
						return errResult(err)
					}
					fr := resp.(*kmsg.ShareFetchResponse)
					var r result
					r.code("error", fr.ErrorCode)
					pending := fr.ErrorCode == 0
					for _, t := range fr.Topics {
						for _, p := range t.Partitions {
							r.code("p0", p.ErrorCode)
							pending = pending && p.ErrorCode == -1
						}
					}
					if fr.ErrorCode == 0 {
						closeReq := kmsg.NewPtrShareFetchRequest()
						closeReq.GroupID, closeReq.MemberID = req.GroupID, req.MemberID
						closeReq.ShareSessionEpoch = -1
						_, _ = e.send(ctx, closeReq)
					}
					if !pending || time.Now().After(deadline) {
						return r
					}
					time.Sleep(200 * time.Millisecond)
				}
			}},
		{api: "ShareAcknowledge", cases: []aclCase{
			one("group-read", on(rtGroup, groupShare, opRead)),
			one("group-read+topic-read", on(rtGroup, groupShare, opRead), on(rtTopic, topic, opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				// Acknowledges in a session that is not open
				// (epoch 1 with none started): once allowed, the
				// broker refuses the session.
				req := kmsg.NewPtrShareAcknowledgeRequest()
				req.GroupID = str(groupShare)
				req.MemberID = str(shareMember)
				req.ShareSessionEpoch = 1
				t := kmsg.NewShareAcknowledgeRequestTopic()
				t.TopicID = e.topicID
				p := kmsg.NewShareAcknowledgeRequestTopicPartition()
				b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
				b.FirstOffset, b.LastOffset = 0, 0
				b.AcknowledgeTypes = []int8{1}
				p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				ar := resp.(*kmsg.ShareAcknowledgeResponse)
				var r result
				r.code("error", ar.ErrorCode)
				for _, t := range ar.Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "DescribeShareGroupOffsets", cases: []aclCase{
			one("group-describe", on(rtGroup, groupShare, opDescribe)),
			one("group-describe+topic-describe", on(rtGroup, groupShare, opDescribe), on(rtTopic, topic, opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
				g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
				g.GroupID = groupShare
				gt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
				gt.Topic = topic
				gt.Partitions = []int32{0}
				g.Topics = append(g.Topics, gt)
				req.Groups = append(req.Groups, g)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, g := range resp.(*kmsg.DescribeShareGroupOffsetsResponse).Groups {
					r.code("group", g.ErrorCode)
					for _, t := range g.Topics {
						for _, p := range t.Partitions {
							r.code("p0", p.ErrorCode)
						}
					}
				}
				return r
			}},
		{api: "AlterShareGroupOffsets", cases: []aclCase{
			one("group-read", on(rtGroup, groupShare, opRead)),
			one("group-read+topic-read", on(rtGroup, groupShare, opRead), on(rtTopic, topic, opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				// The group has a member: once allowed, the broker
				// refuses to move a live group's offsets.
				req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
				req.GroupID = groupShare
				t := kmsg.NewAlterShareGroupOffsetsRequestTopic()
				t.Topic = topic
				p := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
				p.StartOffset = 0
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				ar := resp.(*kmsg.AlterShareGroupOffsetsResponse)
				var r result
				r.code("error", ar.ErrorCode)
				for _, t := range ar.Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "DeleteShareGroupOffsets", cases: []aclCase{
			one("group-delete", on(rtGroup, groupShare, opDelete)),
			one("group-delete+topic-read", on(rtGroup, groupShare, opDelete), on(rtTopic, topic, opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
				req.GroupID = groupShare
				t := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
				t.Topic = topic
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.DeleteShareGroupOffsetsResponse)
				var r result
				r.code("error", dr.ErrorCode)
				for _, t := range dr.Topics {
					r.code("topic", t.ErrorCode)
				}
				return r
			}},
	}
}
