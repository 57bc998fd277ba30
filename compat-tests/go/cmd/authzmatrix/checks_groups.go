package main

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupChecks: committed offsets, FindCoordinator, the classic group
// protocol, and describing, listing and deleting groups.
func groupChecks() []check {
	// The classic protocol's requests, as a member groupClassic does not
	// know: each needs Read on the group.
	classicRead := []aclCase{one("group-read", on(rtGroup, groupClassic, opRead))}
	return []check{
		{api: "OffsetCommit", cases: []aclCase{
			one("group-read", on(rtGroup, group, opRead)),
			one("group-read+topic-read", on(rtGroup, group, opRead), on(rtTopic, topic, opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				return offsetCommit(ctx, e, topic, e.topicID, 2, false)
			}},
		{api: "OffsetFetch", cases: []aclCase{
			one("group-describe", on(rtGroup, group, opDescribe)),
			one("group-describe+topic-describe", on(rtGroup, group, opDescribe), on(rtTopic, topic, opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrOffsetFetchRequest()
				req.Group = group
				req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
				g := kmsg.NewOffsetFetchRequestGroup()
				g.Group = group
				g.MemberEpoch = -1
				gt := kmsg.NewOffsetFetchRequestGroupTopic()
				gt.Topic, gt.TopicID = topic, e.topicID
				gt.Partitions = []int32{0}
				g.Topics = append(g.Topics, gt)
				req.Groups = append(req.Groups, g)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				fr := resp.(*kmsg.OffsetFetchResponse)
				var r result
				if fr.Version < 8 {
					r.code("group", fr.ErrorCode)
					for _, t := range fr.Topics {
						for _, p := range t.Partitions {
							r.code("p0", p.ErrorCode)
							r.add("offset", i64toa(p.Offset))
						}
					}
					return r
				}
				for _, g := range fr.Groups {
					r.code("group", g.ErrorCode)
					for _, t := range g.Topics {
						for _, p := range t.Partitions {
							r.code("p0", p.ErrorCode)
							r.add("offset", i64toa(p.Offset))
						}
					}
				}
				return r
			}},
		{api: "OffsetFetch-two-groups", cases: []aclCase{
			one("group-describe+topic-describe", on(rtGroup, group, opDescribe), on(rtTopic, topic, opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				// One request for two groups, of which the ACLs name
				// one: each group answered on its own.
				req := kmsg.NewPtrOffsetFetchRequest()
				for _, name := range []string{group, groupOffDel} {
					g := kmsg.NewOffsetFetchRequestGroup()
					g.Group = name
					g.MemberEpoch = -1
					gt := kmsg.NewOffsetFetchRequestGroupTopic()
					gt.Topic, gt.TopicID = topic, e.topicID
					gt.Partitions = []int32{0}
					g.Topics = append(g.Topics, gt)
					req.Groups = append(req.Groups, g)
				}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, g := range resp.(*kmsg.OffsetFetchResponse).Groups {
					r.code(g.Group, g.ErrorCode)
					for _, t := range g.Topics {
						for _, p := range t.Partitions {
							r.code(g.Group+"/p0", p.ErrorCode)
						}
					}
				}
				return r
			}},
		{api: "OffsetFetch-all", cases: []aclCase{
			one("group-describe", on(rtGroup, group, opDescribe)),
			one("group-describe+topic-describe", on(rtGroup, group, opDescribe), on(rtTopic, topic, opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				// Every committed partition (Topics null): those of
				// topics the principal may not describe are left out.
				req := kmsg.NewPtrOffsetFetchRequest()
				req.Group = group
				req.Topics = nil
				g := kmsg.NewOffsetFetchRequestGroup()
				g.Group = group
				g.MemberEpoch = -1
				g.Topics = nil
				req.Groups = append(req.Groups, g)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				fr := resp.(*kmsg.OffsetFetchResponse)
				var r result
				for _, g := range fr.Groups {
					r.code("group", g.ErrorCode)
					n := 0
					for _, t := range g.Topics {
						n += len(t.Partitions)
					}
					r.add("partitions", itoa(n))
				}
				return r
			}},
		{api: "OffsetDelete", cases: []aclCase{
			one("group-delete", on(rtGroup, groupOffDel, opDelete)),
			one("group-delete+topic-read", on(rtGroup, groupOffDel, opDelete), on(rtTopic, topic, opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrOffsetDeleteRequest()
				req.Group = groupOffDel
				t := kmsg.NewOffsetDeleteRequestTopic()
				t.Topic = topic
				p := kmsg.NewOffsetDeleteRequestTopicPartition()
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.OffsetDeleteResponse)
				var r result
				r.code("group", dr.ErrorCode)
				for _, t := range dr.Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "FindCoordinator-group", cases: []aclCase{one("group-describe", on(rtGroup, group, opDescribe))},
			run: func(ctx context.Context, e *env) result {
				return findCoordinator(ctx, e, 0, group)
			}},
		{api: "FindCoordinator-txn", cases: []aclCase{
			one("txn-describe", on(rtTxn, txnID, opDescribe)),
			one("txn-write", on(rtTxn, txnID, opWrite)),
			one("txn-describe-prefixed", prefixed(on(rtTxn, "authz-", opDescribe))),
		},
			run: func(ctx context.Context, e *env) result {
				return findCoordinator(ctx, e, 1, txnID)
			}},
		{api: "JoinGroup", cases: classicRead,
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrJoinGroupRequest()
				req.Group = groupClassic
				req.SessionTimeoutMillis = 10000
				req.RebalanceTimeoutMillis = 10000
				req.ProtocolType = "consumer"
				req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
				return errorOnly(ctx, e, req, func(r *kmsg.JoinGroupResponse) int16 { return r.ErrorCode })
			}},
		{api: "SyncGroup", cases: classicRead,
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrSyncGroupRequest()
				req.Group = groupClassic
				req.Generation = 1
				req.MemberID = "authzmatrix-no-such-member"
				req.ProtocolType = str("consumer")
				req.Protocol = str("range")
				return errorOnly(ctx, e, req, func(r *kmsg.SyncGroupResponse) int16 { return r.ErrorCode })
			}},
		{api: "Heartbeat", cases: classicRead,
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrHeartbeatRequest()
				req.Group = groupClassic
				req.Generation = 1
				req.MemberID = "authzmatrix-no-such-member"
				return errorOnly(ctx, e, req, func(r *kmsg.HeartbeatResponse) int16 { return r.ErrorCode })
			}},
		{api: "LeaveGroup", cases: classicRead,
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrLeaveGroupRequest()
				req.Group = groupClassic
				req.MemberID = "authzmatrix-no-such-member"
				m := kmsg.NewLeaveGroupRequestMember()
				m.MemberID = "authzmatrix-no-such-member"
				req.Members = append(req.Members, m)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				lr := resp.(*kmsg.LeaveGroupResponse)
				var r result
				r.code("error", lr.ErrorCode)
				for _, m := range lr.Members {
					r.code("member", m.ErrorCode)
				}
				return r
			}},
		{api: "DescribeGroups", cases: []aclCase{
			one("group-describe", on(rtGroup, group, opDescribe)),
			one("group-read", on(rtGroup, group, opRead)),
			one("group-delete", on(rtGroup, group, opDelete)),
			one("group-all", on(rtGroup, group, kmsg.ACLOperationAll)),
			one("group-describe-prefixed", prefixed(on(rtGroup, "authz-group", opDescribe))),
		},
			run: func(ctx context.Context, e *env) result {
				return describeGroup(ctx, e, group)
			}},
		{api: "ListGroups", cases: []aclCase{
			one("group-describe", on(rtGroup, group, opDescribe)),
			one("cluster-describe", cluster(opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrListGroupsRequest()
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				lr := resp.(*kmsg.ListGroupsResponse)
				var r result
				r.code("error", lr.ErrorCode)
				var names []string
				for _, g := range lr.Groups {
					if isOurs(g.Group) {
						names = append(names, g.Group)
					}
				}
				sort.Strings(names)
				r.add("groups", list(names))
				return r
			}},
		{api: "DeleteGroups-two-groups", cases: []aclCase{
			one("group-delete", on(rtGroup, groupMissing, opDelete)),
		},
			run: func(ctx context.Context, e *env) result {
				// One request for a group the ACLs name (which does
				// not exist) and one they do not (which does).
				return deleteGroups(ctx, e, groupMissing, group)
			}},
		{api: "DeleteGroups", cases: []aclCase{one("group-delete", on(rtGroup, groupDelete, opDelete))},
			run: func(ctx context.Context, e *env) result {
				return deleteGroups(ctx, e, groupDelete)
			}},
	}
}

// consumerGroupChecks: the consumer group protocol of KIP-848.
func consumerGroupChecks() []check {
	return []check{
		{api: "ConsumerGroupHeartbeat", cases: []aclCase{
			one("group-read", on(rtGroup, groupCG, opRead)),
			one("group-read+topic-describe", on(rtGroup, groupCG, opRead), on(rtTopic, topic, opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.Group = groupCG
				req.MemberID = e.memberCG
				req.MemberEpoch = 0
				req.RebalanceTimeoutMillis = 30000
				req.SubscribedTopicNames = []string{topic}
				req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				// A member that joins stays (its session lasts 45 s),
				// so that ConsumerGroupDescribe, next, sees it.
				return errorOnly(ctx, e, req, func(r *kmsg.ConsumerGroupHeartbeatResponse) int16 { return r.ErrorCode })
			}},
		{api: "ConsumerGroupHeartbeat-regex", cases: []aclCase{
			one("group-read", on(rtGroup, groupCG+"-regex", opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				// A regex subscription: the topics it matches are
				// resolved by the broker, and those the member may
				// not describe are left out (not an error).
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.Group = groupCG + "-regex"
				req.MemberID = "authzmatrix-cg-regex-member-0000"
				req.MemberEpoch = 0
				req.RebalanceTimeoutMillis = 30000
				req.SubscribedTopicRegex = str("authz-topic.*")
				req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				return errorOnly(ctx, e, req, func(r *kmsg.ConsumerGroupHeartbeatResponse) int16 { return r.ErrorCode })
			}},
		{api: "ConsumerGroupDescribe", cases: []aclCase{
			one("group-describe", on(rtGroup, groupCG, opDescribe)),
			one("group-describe+topic-describe", on(rtGroup, groupCG, opDescribe), on(rtTopic, topic, opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				return consumerGroupDescribe(ctx, e, groupCG)
			}},
		{api: "ConsumerGroupDescribe-classic", cases: []aclCase{one("group-describe", on(rtGroup, group, opDescribe))},
			run: func(ctx context.Context, e *env) result {
				// A classic group: GROUP_ID_NOT_FOUND once allowed.
				return consumerGroupDescribe(ctx, e, group)
			}},
	}
}

// streamsGroupChecks: the streams group protocol of KIP-1071.
func streamsGroupChecks() []check {
	return []check{
		{api: "StreamsGroupDescribe", cases: []aclCase{one("group-describe", on(rtGroup, group, opDescribe))},
			run: func(ctx context.Context, e *env) result {
				// A classic group: GROUP_ID_NOT_FOUND once allowed.
				req := kmsg.NewPtrStreamsGroupDescribeRequest()
				req.Groups = []string{group}
				req.IncludeAuthorizedOperations = true
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, g := range resp.(*kmsg.StreamsGroupDescribeResponse).Groups {
					r.code("group", g.ErrorCode)
					r.ops("ops", g.AuthorizedOperations)
				}
				return r
			}},
	}
}

// offsetCommit commits offset for partition 0 of the topic in group, with
// no generation (a simple, memberless commit); old sends on the v9
// connection, which names the topic (for one that has no id).
func offsetCommit(ctx context.Context, e *env, name string, id [16]byte, offset int64, old bool) result {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = -1
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic, t.TopicID = name, id
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Offset = offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	send := e.send
	if old {
		send = e.sendOld
	}
	resp, err := send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, t := range resp.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			r.code("p0", p.ErrorCode)
		}
	}
	return r
}

// describeGroup describes one group, recording its error code, state and
// authorized operations.
func describeGroup(ctx context.Context, e *env, name string) result {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{name}
	req.IncludeAuthorizedOperations = true
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, g := range resp.(*kmsg.DescribeGroupsResponse).Groups {
		r.code("group", g.ErrorCode)
		r.add("state", orDash(g.State))
		r.ops("ops", g.AuthorizedOperations)
	}
	return r
}

// deleteGroups deletes the groups in one request; with one group its error
// code is recorded as group=, with several each under its name.
func deleteGroups(ctx context.Context, e *env, names ...string) result {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = names
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, g := range resp.(*kmsg.DeleteGroupsResponse).Groups {
		key := g.Group
		if len(names) == 1 {
			key = "group"
		}
		r.code(key, g.ErrorCode)
	}
	return r
}

func findCoordinator(ctx context.Context, e *env, keyType int8, key string) result {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = key
	req.CoordinatorKeys = []string{key}
	req.CoordinatorType = keyType
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	fr := resp.(*kmsg.FindCoordinatorResponse)
	var r result
	if fr.Version < 4 {
		r.code("error", fr.ErrorCode)
		return r
	}
	for _, c := range fr.Coordinators {
		r.code("key", c.ErrorCode)
	}
	return r
}

func consumerGroupDescribe(ctx context.Context, e *env, g string) result {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{g}
	req.IncludeAuthorizedOperations = true
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, g := range resp.(*kmsg.ConsumerGroupDescribeResponse).Groups {
		r.code("group", g.ErrorCode)
		r.add("state", orDash(g.State))
		r.add("members", itoa(len(g.Members)))
		r.ops("ops", g.AuthorizedOperations)
	}
	return r
}
