package main

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Shorthands for the ACL table below.
const (
	rtTopic   = kmsg.ACLResourceTypeTopic
	rtGroup   = kmsg.ACLResourceTypeGroup
	rtCluster = kmsg.ACLResourceTypeCluster
	rtTxn     = kmsg.ACLResourceTypeTransactionalId

	opRead          = kmsg.ACLOperationRead
	opWrite         = kmsg.ACLOperationWrite
	opCreate        = kmsg.ACLOperationCreate
	opDelete        = kmsg.ACLOperationDelete
	opAlter         = kmsg.ACLOperationAlter
	opDescribe      = kmsg.ACLOperationDescribe
	opClusterAction = kmsg.ACLOperationClusterAction
	opDescConfigs   = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs  = kmsg.ACLOperationAlterConfigs
	opIdemWrite     = kmsg.ACLOperationIdempotentWrite
)

const clusterName = "kafka-cluster"

func one(name string, acls ...acl) aclCase { return aclCase{name: name, acls: acls} }

func on(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) acl {
	return acl{rt: rt, name: name, op: op}
}

func cluster(op kmsg.ACLOperation) acl { return acl{rt: rtCluster, name: clusterName, op: op} }

// Variations of one binding.
func prefixed(a acl) acl               { a.prefixed = true; return a }
func deny(a acl) acl                   { a.deny = true; return a }
func forPrincipal(p string, a acl) acl { a.principal = p; return a }
func fromHost(h string, a acl) acl     { a.host = h; return a }

// checks is the matrix, in output order. Where an API changes state when
// allowed (a commit, a deletion, a transaction step), the allowed case comes
// last and later APIs do not depend on what it did, or depend on it the same
// way on both brokers. The needed ACLs are those of the "Operations and
// Resources on Protocols" table of Kafka's security documentation.
func checks() []check {
	str := func(s string) *string { return &s }
	return []check{
		{api: "Produce", cases: []aclCase{
			one("topic-write", on(rtTopic, topic, opWrite)),
			one("topic-all", on(rtTopic, topic, kmsg.ACLOperationAll)),
			one("topic-read", on(rtTopic, topic, opRead)),
			one("topic-write-prefixed", prefixed(on(rtTopic, "authz-", opWrite))),
			one("topic-write-prefixed-other", prefixed(on(rtTopic, "authz-other", opWrite))),
			one("topic-write-wildcard", on(rtTopic, "*", opWrite)),
			one("topic-write-any-user", forPrincipal("User:*", on(rtTopic, topic, opWrite))),
			one("topic-write-other-user", forPrincipal("User:alice", on(rtTopic, topic, opWrite))),
			one("topic-write-from-localhost", fromHost("127.0.0.1", on(rtTopic, topic, opWrite))),
			one("topic-write-from-other-host", fromHost("10.11.12.13", on(rtTopic, topic, opWrite))),
			one("topic-write+deny-write", on(rtTopic, topic, opWrite), deny(on(rtTopic, topic, opWrite))),
			one("topic-write+deny-all-prefixed", on(rtTopic, topic, opWrite), deny(prefixed(on(rtTopic, "authz-", kmsg.ACLOperationAll)))),
			one("topic-write+deny-read", on(rtTopic, topic, opWrite), deny(on(rtTopic, topic, opRead))),
			one("topic-write-wildcard+deny-write-any-user", on(rtTopic, "*", opWrite), deny(forPrincipal("User:*", on(rtTopic, topic, opWrite)))),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrProduceRequest()
				req.Acks = 1
				req.TimeoutMillis = 5000
				t := kmsg.NewProduceRequestTopic()
				t.Topic, t.TopicID = topic, e.topicID
				p := kmsg.NewProduceRequestTopicPartition()
				p.Records = batch("bob", -1, -1, false)
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.ProduceResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "Produce-idempotent", cases: []aclCase{
			one("topic-write", on(rtTopic, topic, opWrite)),
			one("cluster-idempotentwrite", cluster(opIdemWrite)),
		},
			run: func(ctx context.Context, e *env) result {
				// A batch with a producer id (the admin's, not
				// transactional) and sequence 0: Kafka asks for Write
				// on the topic only (IDEMPOTENT_WRITE is no longer
				// checked on Produce since KIP-679).
				req := kmsg.NewPtrProduceRequest()
				req.Acks = -1
				req.TimeoutMillis = 5000
				t := kmsg.NewProduceRequestTopic()
				t.Topic, t.TopicID = topic, e.topicID
				p := kmsg.NewProduceRequestTopicPartition()
				p.Records = batch("bob", e.idemPID, e.idemEpoch, false)
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.ProduceResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "Produce-transactional", cases: []aclCase{
			one("topic-write", on(rtTopic, topic, opWrite)),
			one("txn-write", on(rtTxn, txnID, opWrite)),
			one("txn-write+topic-write", on(rtTxn, txnID, opWrite), on(rtTopic, topic, opWrite)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrProduceRequest()
				req.TransactionID = str(txnID)
				req.Acks = -1
				req.TimeoutMillis = 5000
				t := kmsg.NewProduceRequestTopic()
				t.Topic, t.TopicID = topic, e.topicID
				p := kmsg.NewProduceRequestTopicPartition()
				// The partition is not in a transaction: once
				// authorized, the broker refuses the batch.
				p.Records = batch("bob", e.pid, e.epoch, true)
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.ProduceResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "Fetch", cases: []aclCase{one("topic-read", on(rtTopic, topic, opRead))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrFetchRequest()
				req.MaxWaitMillis = 100
				req.MaxBytes = 1 << 20
				t := kmsg.NewFetchRequestTopic()
				t.Topic, t.TopicID = topic, e.topicID
				p := kmsg.NewFetchRequestTopicPartition()
				p.PartitionMaxBytes = 1 << 20
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				fr := resp.(*kmsg.FetchResponse)
				var r result
				r.code("error", fr.ErrorCode)
				for _, t := range fr.Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "ListOffsets", cases: []aclCase{
			one("topic-describe", on(rtTopic, topic, opDescribe)),
			one("topic-read", on(rtTopic, topic, opRead)),
			one("topic-write", on(rtTopic, topic, opWrite)),
			one("topic-delete", on(rtTopic, topic, opDelete)),
			one("topic-alter", on(rtTopic, topic, opAlter)),
			one("topic-create", on(rtTopic, topic, opCreate)),
			one("topic-describeconfigs", on(rtTopic, topic, opDescConfigs)),
			one("topic-read+deny-describe", on(rtTopic, topic, opRead), deny(on(rtTopic, topic, opDescribe))),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrListOffsetsRequest()
				t := kmsg.NewListOffsetsRequestTopic()
				t.Topic = topic
				p := kmsg.NewListOffsetsRequestTopicPartition()
				p.Timestamp = -1
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "OffsetForLeaderEpoch", cases: []aclCase{one("topic-describe", on(rtTopic, topic, opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrOffsetForLeaderEpochRequest()
				req.ReplicaID = -1
				t := kmsg.NewOffsetForLeaderEpochRequestTopic()
				t.Topic = topic
				p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				p.CurrentLeaderEpoch = -1
				p.LeaderEpoch = 0
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "Metadata-topic", cases: []aclCase{
			one("topic-describe", on(rtTopic, topic, opDescribe)),
			one("topic-all", on(rtTopic, topic, kmsg.ACLOperationAll)),
			one("topic-read+alterconfigs", on(rtTopic, topic, opRead), on(rtTopic, topic, opAlterConfigs)),
			one("topic-all+deny-alter", on(rtTopic, topic, kmsg.ACLOperationAll), deny(on(rtTopic, topic, opAlter))),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrMetadataRequest()
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = str(topic)
				req.Topics = append(req.Topics, t)
				req.AllowAutoTopicCreation = false
				req.IncludeTopicAuthorizedOperations = true
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.MetadataResponse).Topics {
					r.code("topic", t.ErrorCode)
					r.ops("ops", t.AuthorizedOperations)
					r.add("partitions", itoa(len(t.Partitions)))
				}
				return r
			}},
		{api: "Metadata-all", cases: []aclCase{one("topic-describe", on(rtTopic, topic, opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrMetadataRequest()
				req.Topics = nil
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.MetadataResponse).Topics {
					if t.Topic != nil && isOurs(*t.Topic) {
						r.code(*t.Topic, t.ErrorCode)
					}
				}
				return r
			}},
		{api: "Metadata-missing-topic", cases: []aclCase{one("topic-describe", on(rtTopic, "authz-topic-missing", opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrMetadataRequest()
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = str("authz-topic-missing")
				req.Topics = append(req.Topics, t)
				req.AllowAutoTopicCreation = false
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.MetadataResponse).Topics {
					r.code("topic", t.ErrorCode)
				}
				return r
			}},
		{api: "Produce-missing-topic", cases: []aclCase{one("topic-write", on(rtTopic, "authz-topic-missing", opWrite))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrProduceRequest()
				req.Acks = 1
				req.TimeoutMillis = 5000
				t := kmsg.NewProduceRequestTopic()
				t.Topic = "authz-topic-missing"
				p := kmsg.NewProduceRequestTopicPartition()
				p.Records = batch("bob", -1, -1, false)
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				// v12, which names the topic: from v13 on a
				// missing topic has no id to send.
				resp, err := e.sendOld(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.ProduceResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "Fetch-missing-topic", cases: []aclCase{one("topic-read", on(rtTopic, "authz-topic-missing", opRead))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrFetchRequest()
				req.MaxWaitMillis = 100
				req.MaxBytes = 1 << 20
				t := kmsg.NewFetchRequestTopic()
				t.Topic = "authz-topic-missing"
				p := kmsg.NewFetchRequestTopicPartition()
				p.PartitionMaxBytes = 1 << 20
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.sendOld(ctx, req) // v12: names the topic
				if err != nil {
					return errResult(err)
				}
				fr := resp.(*kmsg.FetchResponse)
				var r result
				r.code("error", fr.ErrorCode)
				for _, t := range fr.Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "ListOffsets-missing-topic", cases: []aclCase{one("topic-describe", on(rtTopic, "authz-topic-missing", opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrListOffsetsRequest()
				t := kmsg.NewListOffsetsRequestTopic()
				t.Topic = "authz-topic-missing"
				p := kmsg.NewListOffsetsRequestTopicPartition()
				p.Timestamp = -1
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "OffsetCommit-missing-topic", cases: []aclCase{
			one("group-read", on(rtGroup, group, opRead)),
			one("group-read+topic-read", on(rtGroup, group, opRead), on(rtTopic, "authz-topic-missing", opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrOffsetCommitRequest()
				req.Group = group
				req.Generation = -1
				t := kmsg.NewOffsetCommitRequestTopic()
				t.Topic = "authz-topic-missing"
				p := kmsg.NewOffsetCommitRequestTopicPartition()
				p.Offset = 1
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.sendOld(ctx, req) // v9: names the topic
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
			}},
		{api: "DescribeConfigs-missing-topic", cases: []aclCase{one("topic-describeconfigs", on(rtTopic, "authz-topic-missing", opDescConfigs))},
			run: func(ctx context.Context, e *env) result {
				return describeConfigs(ctx, e, kmsg.ConfigResourceTypeTopic, "authz-topic-missing")
			}},
		{api: "DeleteTopics-missing-topic", cases: []aclCase{
			one("topic-delete", on(rtTopic, "authz-topic-missing", opDelete)),
			one("topic-describe", on(rtTopic, "authz-topic-missing", opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDeleteTopicsRequest()
				req.TimeoutMillis = 10000
				t := kmsg.NewDeleteTopicsRequestTopic()
				t.Topic = str("authz-topic-missing")
				req.Topics = append(req.Topics, t)
				req.TopicNames = []string{"authz-topic-missing"}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.DeleteTopicsResponse).Topics {
					r.code("topic", t.ErrorCode)
				}
				return r
			}},
		{api: "DescribeGroups-missing-group", cases: []aclCase{one("group-describe", on(rtGroup, "authz-group-missing", opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeGroupsRequest()
				req.Groups = []string{"authz-group-missing"}
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
			}},
		{api: "DescribeTransactions-missing-txn", cases: []aclCase{one("txn-describe", on(rtTxn, "authz-txn-missing", opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeTransactionsRequest()
				req.TransactionalIDs = []string{"authz-txn-missing"}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, s := range resp.(*kmsg.DescribeTransactionsResponse).TransactionStates {
					r.code("txn", s.ErrorCode)
				}
				return r
			}},
		{api: "Metadata-autocreate", cases: []aclCase{
			one("topic-describe", on(rtTopic, "authz-topic-auto", opDescribe)),
			one("cluster-create", cluster(opCreate)),
			one("topic-describe+cluster-create", on(rtTopic, "authz-topic-auto", opDescribe), cluster(opCreate)),
		},
			run: func(ctx context.Context, e *env) result {
				// auto.create.topics.enable is left at its default
				// (true) on both brokers; the topic is created only
				// when the principal may create it.
				req := kmsg.NewPtrMetadataRequest()
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = str("authz-topic-auto")
				req.Topics = append(req.Topics, t)
				req.AllowAutoTopicCreation = true
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				denied := false
				for _, t := range resp.(*kmsg.MetadataResponse).Topics {
					r.code("topic", t.ErrorCode)
					denied = t.ErrorCode == 29
				}
				// Kafka creates the topic asynchronously (the first
				// answer may say UNKNOWN_TOPIC_OR_PARTITION); what is
				// compared beside the first answer is whether it was
				// created.
				wait := 10 * time.Second
				if denied {
					wait = 0
				}
				r.add("created", yesNo(e.topicExists(ctx, "authz-topic-auto", wait)))
				return r
			}},
		{api: "DescribeTopicPartitions", cases: []aclCase{one("topic-describe", on(rtTopic, topic, opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeTopicPartitionsRequest()
				t := kmsg.NewDescribeTopicPartitionsRequestTopic()
				t.Topic = topic
				req.Topics = append(req.Topics, t)
				req.ResponsePartitionLimit = 100
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.DescribeTopicPartitionsResponse).Topics {
					r.code("topic", t.ErrorCode)
					r.ops("ops", t.AuthorizedOperations)
				}
				return r
			}},
		{api: "OffsetCommit", cases: []aclCase{
			one("group-read", on(rtGroup, group, opRead)),
			one("group-read+topic-read", on(rtGroup, group, opRead), on(rtTopic, topic, opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrOffsetCommitRequest()
				req.Group = group
				req.Generation = -1
				t := kmsg.NewOffsetCommitRequestTopic()
				t.Topic, t.TopicID = topic, e.topicID
				p := kmsg.NewOffsetCommitRequestTopicPartition()
				p.Offset = 2
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
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
		{api: "JoinGroup", cases: []aclCase{one("group-read", on(rtGroup, groupClassic, opRead))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrJoinGroupRequest()
				req.Group = groupClassic
				req.SessionTimeoutMillis = 10000
				req.RebalanceTimeoutMillis = 10000
				req.ProtocolType = "consumer"
				req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.JoinGroupResponse).ErrorCode)
				return r
			}},
		{api: "SyncGroup", cases: []aclCase{one("group-read", on(rtGroup, groupClassic, opRead))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrSyncGroupRequest()
				req.Group = groupClassic
				req.Generation = 1
				req.MemberID = "authzmatrix-no-such-member"
				req.ProtocolType = str("consumer")
				req.Protocol = str("range")
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.SyncGroupResponse).ErrorCode)
				return r
			}},
		{api: "Heartbeat", cases: []aclCase{one("group-read", on(rtGroup, groupClassic, opRead))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrHeartbeatRequest()
				req.Group = groupClassic
				req.Generation = 1
				req.MemberID = "authzmatrix-no-such-member"
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.HeartbeatResponse).ErrorCode)
				return r
			}},
		{api: "LeaveGroup", cases: []aclCase{one("group-read", on(rtGroup, groupClassic, opRead))},
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
				req := kmsg.NewPtrDescribeGroupsRequest()
				req.Groups = []string{group}
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
			one("group-delete", on(rtGroup, "authz-group-missing", opDelete)),
		},
			run: func(ctx context.Context, e *env) result {
				// One request for a group the ACLs name (which does
				// not exist) and one they do not (which does).
				req := kmsg.NewPtrDeleteGroupsRequest()
				req.Groups = []string{"authz-group-missing", group}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, g := range resp.(*kmsg.DeleteGroupsResponse).Groups {
					r.code(g.Group, g.ErrorCode)
				}
				return r
			}},
		{api: "DeleteGroups", cases: []aclCase{one("group-delete", on(rtGroup, groupDelete, opDelete))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDeleteGroupsRequest()
				req.Groups = []string{groupDelete}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, g := range resp.(*kmsg.DeleteGroupsResponse).Groups {
					r.code("group", g.ErrorCode)
				}
				return r
			}},
		{api: "CreateTopics", cases: []aclCase{
			one("topic-create", on(rtTopic, topicNew, opCreate)),
			one("topic-create+topic-describeconfigs", on(rtTopic, topicNew+"-2", opCreate), on(rtTopic, topicNew+"-2", opDescConfigs)),
			one("cluster-create", cluster(opCreate)),
		},
			run: func(ctx context.Context, e *env) result {
				// Each case creates a topic of its own; the
				// validate-only requests change nothing. The names are
				// asked for in turn: the first the cases have not
				// created yet.
				var r result
				for _, name := range []string{topicNew, topicNew + "-2", topicNew + "-3"} {
					req := kmsg.NewPtrCreateTopicsRequest()
					req.TimeoutMillis = 10000
					t := kmsg.NewCreateTopicsRequestTopic()
					t.Topic = name
					t.NumPartitions = 1
					t.ReplicationFactor = 1
					req.Topics = append(req.Topics, t)
					resp, err := e.send(ctx, req)
					if err != nil {
						return errResult(err)
					}
					for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
						r.code(name, t.ErrorCode)
						r.code(name+"/configs", t.ConfigErrorCode)
					}
				}
				return r
			}},
		{api: "DeleteTopics", cases: []aclCase{one("topic-delete", on(rtTopic, topicDelete, opDelete))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDeleteTopicsRequest()
				req.TimeoutMillis = 10000
				t := kmsg.NewDeleteTopicsRequestTopic()
				t.Topic = str(topicDelete)
				req.Topics = append(req.Topics, t)
				req.TopicNames = []string{topicDelete}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.DeleteTopicsResponse).Topics {
					r.code("topic", t.ErrorCode)
				}
				return r
			}},
		{api: "CreatePartitions", cases: []aclCase{one("topic-alter", on(rtTopic, topic, opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.TimeoutMillis = 10000
				req.ValidateOnly = true
				t := kmsg.NewCreatePartitionsRequestTopic()
				t.Topic = topic
				t.Count = 2
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.CreatePartitionsResponse).Topics {
					r.code("topic", t.ErrorCode)
				}
				return r
			}},
		{api: "DeleteRecords", cases: []aclCase{one("topic-delete", on(rtTopic, topicRecords, opDelete))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDeleteRecordsRequest()
				req.TimeoutMillis = 10000
				t := kmsg.NewDeleteRecordsRequestTopic()
				t.Topic = topicRecords
				p := kmsg.NewDeleteRecordsRequestTopicPartition()
				p.Offset = 1
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.DeleteRecordsResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "DescribeConfigs-topic", cases: []aclCase{
			one("topic-describeconfigs", on(rtTopic, topic, opDescConfigs)),
			one("topic-alterconfigs", on(rtTopic, topic, opAlterConfigs)),
			one("topic-describe", on(rtTopic, topic, opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				return describeConfigs(ctx, e, kmsg.ConfigResourceTypeTopic, topic)
			}},
		{api: "DescribeConfigs-broker", cases: []aclCase{one("cluster-describeconfigs", cluster(opDescConfigs))},
			run: func(ctx context.Context, e *env) result {
				return describeConfigs(ctx, e, kmsg.ConfigResourceTypeBroker, "1")
			}},
		{api: "DescribeConfigs-broker-logger", cases: []aclCase{one("cluster-describeconfigs", cluster(opDescConfigs))},
			run: func(ctx context.Context, e *env) result {
				return describeConfigs(ctx, e, kmsg.ConfigResourceTypeBrokerLogger, "1")
			}},
		{api: "DescribeConfigs-group", cases: []aclCase{one("group-describeconfigs", on(rtGroup, group, opDescConfigs))},
			run: func(ctx context.Context, e *env) result {
				return describeConfigs(ctx, e, kmsg.ConfigResourceTypeGroupConfig, group)
			}},
		{api: "IncrementalAlterConfigs-broker-logger", cases: []aclCase{one("cluster-alterconfigs", cluster(opAlterConfigs))},
			run: func(ctx context.Context, e *env) result {
				// The root logger to INFO, validate only.
				return incrementalAlterConfigs(ctx, e, kmsg.ConfigResourceTypeBrokerLogger, "1", "root", "INFO")
			}},
		{api: "AlterConfigs-topic", cases: []aclCase{one("topic-alterconfigs", on(rtTopic, topic, opAlterConfigs))},
			run: func(ctx context.Context, e *env) result {
				return alterConfigs(ctx, e, kmsg.ConfigResourceTypeTopic, topic, "retention.ms", "3600000")
			}},
		{api: "AlterConfigs-broker", cases: []aclCase{one("cluster-alterconfigs", cluster(opAlterConfigs))},
			run: func(ctx context.Context, e *env) result {
				return alterConfigs(ctx, e, kmsg.ConfigResourceTypeBroker, "1", "log.retention.ms", "604800000")
			}},
		{api: "AlterConfigs-broker-readonly", cases: []aclCase{one("cluster-alterconfigs", cluster(opAlterConfigs))},
			run: func(ctx context.Context, e *env) result {
				// A static key: which comes first, the check of the
				// key or of the ACL.
				return alterConfigs(ctx, e, kmsg.ConfigResourceTypeBroker, "1", "log.dirs", "/tmp/authzmatrix")
			}},
		{api: "IncrementalAlterConfigs-broker-readonly", cases: []aclCase{one("cluster-alterconfigs", cluster(opAlterConfigs))},
			run: func(ctx context.Context, e *env) result {
				return incrementalAlterConfigs(ctx, e, kmsg.ConfigResourceTypeBroker, "1", "log.dirs", "/tmp/authzmatrix")
			}},
		{api: "IncrementalAlterConfigs-topic", cases: []aclCase{one("topic-alterconfigs", on(rtTopic, topic, opAlterConfigs))},
			run: func(ctx context.Context, e *env) result {
				return incrementalAlterConfigs(ctx, e, kmsg.ConfigResourceTypeTopic, topic, "retention.ms", "3600000")
			}},
		{api: "IncrementalAlterConfigs-broker", cases: []aclCase{one("cluster-alterconfigs", cluster(opAlterConfigs))},
			run: func(ctx context.Context, e *env) result {
				return incrementalAlterConfigs(ctx, e, kmsg.ConfigResourceTypeBroker, "1", "log.retention.ms", "604800000")
			}},
		{api: "IncrementalAlterConfigs-group", cases: []aclCase{one("group-alterconfigs", on(rtGroup, group, opAlterConfigs))},
			run: func(ctx context.Context, e *env) result {
				return incrementalAlterConfigs(ctx, e, kmsg.ConfigResourceTypeGroupConfig, group, "consumer.session.timeout.ms", "45000")
			}},
		{api: "InitProducerId-idempotent", cases: []aclCase{
			one("cluster-idempotentwrite", cluster(opIdemWrite)),
			one("topic-write", on(rtTopic, topic, opWrite)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.TransactionTimeoutMillis = 60000
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.InitProducerIDResponse).ErrorCode)
				return r
			}},
		{api: "InitProducerId-transactional", cases: []aclCase{one("txn-write", on(rtTxn, txnIDBob, opWrite))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.TransactionalID = str(txnIDBob)
				req.TransactionTimeoutMillis = 60000
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.InitProducerIDResponse).ErrorCode)
				return r
			}},
		{api: "AddPartitionsToTxn", cases: []aclCase{
			one("txn-write", on(rtTxn, txnID, opWrite)),
			one("txn-write+topic-write", on(rtTxn, txnID, opWrite), on(rtTopic, topic, opWrite)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrAddPartitionsToTxnRequest()
				req.TransactionalID = txnID
				req.ProducerID, req.ProducerEpoch = e.pid, e.epoch
				t := kmsg.NewAddPartitionsToTxnRequestTopic()
				t.Topic = topic
				t.Partitions = []int32{0}
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				ar := resp.(*kmsg.AddPartitionsToTxnResponse)
				var r result
				r.add("version", itoa(int(ar.Version)))
				for _, t := range ar.Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "AddPartitionsToTxn-v4-broker", cases: []aclCase{
			one("txn-write+topic-write", on(rtTxn, txnID, opWrite), on(rtTopic, topic, opWrite)),
			one("cluster-clusteraction", cluster(opClusterAction)),
		},
			run: func(ctx context.Context, e *env) result {
				// The brokers' batched form (v4+, verify only):
				// Cluster ClusterAction.
				req := kmsg.NewPtrAddPartitionsToTxnRequest()
				tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
				tx.TransactionalID = txnID
				tx.ProducerID, tx.ProducerEpoch = e.pid, e.epoch
				tx.VerifyOnly = true
				tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				tt.Topic = topic
				tt.Partitions = []int32{0}
				tx.Topics = append(tx.Topics, tt)
				req.Transactions = append(req.Transactions, tx)
				resp, err := e.bob.SeedBrokers()[0].Request(ctx, req)
				if err != nil {
					return errResult(err)
				}
				ar := resp.(*kmsg.AddPartitionsToTxnResponse)
				var r result
				r.code("error", ar.ErrorCode)
				for _, tx := range ar.Transactions {
					for _, t := range tx.Topics {
						for _, p := range t.Partitions {
							r.code("p0", p.ErrorCode)
						}
					}
				}
				return r
			}},
		{api: "AddOffsetsToTxn", cases: []aclCase{
			one("txn-write", on(rtTxn, txnID, opWrite)),
			one("txn-write+group-read", on(rtTxn, txnID, opWrite), on(rtGroup, groupTxn, opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrAddOffsetsToTxnRequest()
				req.TransactionalID = txnID
				req.ProducerID, req.ProducerEpoch = e.pid, e.epoch
				req.Group = groupTxn
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode)
				return r
			}},
		{api: "TxnOffsetCommit", cases: []aclCase{
			one("txn-write+group-read", on(rtTxn, txnID, opWrite), on(rtGroup, groupTxn, opRead)),
			one("txn-write+group-read+topic-read", on(rtTxn, txnID, opWrite), on(rtGroup, groupTxn, opRead), on(rtTopic, topic, opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrTxnOffsetCommitRequest()
				req.TransactionalID = txnID
				req.Group = groupTxn
				req.ProducerID, req.ProducerEpoch = e.pid, e.epoch
				req.Generation = -1
				t := kmsg.NewTxnOffsetCommitRequestTopic()
				t.Topic, t.TopicID = topic, e.topicID
				p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				p.Offset = 1
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.TxnOffsetCommitResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "EndTxn", cases: []aclCase{one("txn-write", on(rtTxn, txnID, opWrite))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrEndTxnRequest()
				req.TransactionalID = txnID
				req.ProducerID, req.ProducerEpoch = e.pid, e.epoch
				req.Commit = true
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.EndTxnResponse).ErrorCode)
				return r
			}},
		{api: "WriteTxnMarkers", cases: []aclCase{one("cluster-clusteraction", cluster(opClusterAction))},
			run: func(ctx context.Context, e *env) result {
				// A marker for a producer with no transaction on the
				// partition: once authorized, the outcome is the
				// broker's business; only the authorization is
				// compared in substance.
				req := kmsg.NewPtrWriteTxnMarkersRequest()
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID, m.ProducerEpoch = 999999, 0
				m.Committed = false
				m.CoordinatorEpoch = 0
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic = topicRecords
				mt.Partitions = []int32{0}
				m.Topics = append(m.Topics, mt)
				req.Markers = append(req.Markers, m)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, m := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
					for _, t := range m.Topics {
						for _, p := range t.Partitions {
							r.code("p0", p.ErrorCode)
						}
					}
				}
				return r
			}},
		{api: "DescribeProducers", cases: []aclCase{one("topic-read", on(rtTopic, topic, opRead))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeProducersRequest()
				t := kmsg.NewDescribeProducersRequestTopic()
				t.Topic = topic
				t.Partitions = []int32{0}
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.DescribeProducersResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "DescribeTransactions", cases: []aclCase{
			one("txn-describe", on(rtTxn, txnID, opDescribe)),
			one("txn-describe+topic-describe", on(rtTxn, txnID, opDescribe), on(rtTopic, topic, opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeTransactionsRequest()
				req.TransactionalIDs = []string{txnID}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, s := range resp.(*kmsg.DescribeTransactionsResponse).TransactionStates {
					r.code("txn", s.ErrorCode)
					r.add("state", orDash(s.State))
				}
				return r
			}},
		{api: "ListTransactions", cases: []aclCase{
			one("txn-describe", on(rtTxn, txnID, opDescribe)),
			one("cluster-describe", cluster(opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrListTransactionsRequest()
				req.DurationFilterMillis = -1
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				lr := resp.(*kmsg.ListTransactionsResponse)
				var r result
				r.code("error", lr.ErrorCode)
				var names []string
				for _, s := range lr.TransactionStates {
					if isOurs(s.TransactionalID) {
						names = append(names, s.TransactionalID)
					}
				}
				sort.Strings(names)
				r.add("txns", list(names))
				return r
			}},
		{api: "DescribeAcls", cases: []aclCase{one("cluster-describe", cluster(opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeACLsRequest()
				req.ResourceType = kmsg.ACLResourceTypeAny
				req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
				req.Operation = kmsg.ACLOperationAny
				req.PermissionType = kmsg.ACLPermissionTypeAny
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.DescribeACLsResponse)
				var r result
				r.code("error", dr.ErrorCode)
				r.add("resources", itoa(len(dr.Resources)))
				return r
			}},
		{api: "CreateAcls", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrCreateACLsRequest()
				c := kmsg.NewCreateACLsRequestCreation()
				c.ResourceType = rtTopic
				c.ResourceName = "authz-acl-topic"
				c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
				c.Principal = "User:carol"
				c.Host = "*"
				c.Operation = opRead
				c.PermissionType = kmsg.ACLPermissionTypeAllow
				req.Creations = append(req.Creations, c)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, c := range resp.(*kmsg.CreateACLsResponse).Results {
					r.code("creation", c.ErrorCode)
				}
				return r
			}},
		{api: "DeleteAcls", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDeleteACLsRequest()
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType = rtTopic
				f.ResourceName = str("authz-acl-topic")
				f.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
				f.Operation = kmsg.ACLOperationAny
				f.PermissionType = kmsg.ACLPermissionTypeAny
				req.Filters = append(req.Filters, f)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, f := range resp.(*kmsg.DeleteACLsResponse).Results {
					r.code("filter", f.ErrorCode)
					r.add("matches", itoa(len(f.MatchingACLs)))
				}
				return r
			}},
		{api: "DescribeCluster", cases: []aclCase{
			one("cluster-describe", cluster(opDescribe)),
			one("cluster-alter", cluster(opAlter)),
			one("cluster-all", cluster(kmsg.ACLOperationAll)),
			one("cluster-alterconfigs", cluster(opAlterConfigs)),
			one("cluster-all+deny-idempotentwrite", cluster(kmsg.ACLOperationAll), deny(cluster(opIdemWrite))),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeClusterRequest()
				req.IncludeClusterAuthorizedOperations = true
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.DescribeClusterResponse)
				var r result
				r.code("error", dr.ErrorCode)
				r.ops("ops", dr.ClusterAuthorizedOperations)
				return r
			}},
		{api: "DescribeLogDirs", cases: []aclCase{one("cluster-describe", cluster(opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeLogDirsRequest()
				t := kmsg.NewDescribeLogDirsRequestTopic()
				t.Topic = topic
				t.Partitions = []int32{0}
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.DescribeLogDirsResponse)
				var r result
				r.code("error", dr.ErrorCode)
				n := 0
				for _, d := range dr.Dirs {
					r.code("dir", d.ErrorCode)
					for _, t := range d.Topics {
						n += len(t.Partitions)
					}
				}
				r.add("partitions", itoa(n))
				return r
			}},
		{api: "AlterReplicaLogDirs", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				// A log dir the broker does not have: once
				// authorized, LOG_DIR_NOT_FOUND.
				req := kmsg.NewPtrAlterReplicaLogDirsRequest()
				d := kmsg.NewAlterReplicaLogDirsRequestDir()
				d.Dir = "/authzmatrix/no-such-dir"
				dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
				dt.Topic = topic
				dt.Partitions = []int32{0}
				d.Topics = append(d.Topics, dt)
				req.Dirs = append(req.Dirs, d)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.AlterReplicaLogDirsResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "ElectLeaders", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrElectLeadersRequest()
				req.TimeoutMillis = 10000
				t := kmsg.NewElectLeadersRequestTopic()
				t.Topic = topic
				t.Partitions = []int32{0}
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				er := resp.(*kmsg.ElectLeadersResponse)
				var r result
				r.code("error", er.ErrorCode)
				for _, t := range er.Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "AlterPartitionReassignments", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				// Cancel a reassignment that is not in progress:
				// once authorized, NO_REASSIGNMENT_IN_PROGRESS.
				req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
				req.TimeoutMillis = 10000
				t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
				t.Topic = topic
				p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
				p.Replicas = nil
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				ar := resp.(*kmsg.AlterPartitionAssignmentsResponse)
				var r result
				r.code("error", ar.ErrorCode)
				for _, t := range ar.Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "ListPartitionReassignments", cases: []aclCase{one("cluster-describe", cluster(opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrListPartitionReassignmentsRequest()
				req.TimeoutMillis = 10000
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode)
				return r
			}},
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
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				// A member that joins stays (its session lasts 45 s),
				// so that ConsumerGroupDescribe, next, sees it.
				var r result
				r.code("error", resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
				return r
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
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
				return r
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
		{api: "DescribeQuorum", cases: []aclCase{one("cluster-describe", cluster(opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeQuorumRequest()
				t := kmsg.NewDescribeQuorumRequestTopic()
				t.Topic = "__cluster_metadata"
				t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.DescribeQuorumResponse).ErrorCode)
				return r
			}},
		{api: "CreateDelegationToken", cases: []aclCase{
			one("cluster-all", cluster(kmsg.ACLOperationAll)),
		},
			run: func(ctx context.Context, e *env) result {
				// For itself: no ACL is needed; neither broker has
				// delegation.token.secret.key, so tokens are off.
				req := kmsg.NewPtrCreateDelegationTokenRequest()
				req.MaxLifetimeMillis = -1
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.CreateDelegationTokenResponse).ErrorCode)
				return r
			}},
		{api: "CreateDelegationToken-other-owner", cases: []aclCase{
			one("user-createtokens", on(kmsg.ACLResourceTypeUser, "User:alice", kmsg.ACLOperationCreateTokens)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrCreateDelegationTokenRequest()
				req.OwnerPrincipalType = str("User")
				req.OwnerPrincipalName = str("alice")
				req.MaxLifetimeMillis = -1
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.CreateDelegationTokenResponse).ErrorCode)
				return r
			}},
		{api: "DescribeDelegationToken", cases: []aclCase{
			one("user-describetokens", on(kmsg.ACLResourceTypeUser, "User:alice", kmsg.ACLOperationDescribeTokens)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeDelegationTokenRequest()
				req.Owners = []kmsg.DescribeDelegationTokenRequestOwner{{PrincipalType: "User", PrincipalName: "alice"}}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.DescribeDelegationTokenResponse)
				var r result
				r.code("error", dr.ErrorCode)
				r.add("tokens", itoa(len(dr.TokenDetails)))
				return r
			}},
		{api: "DescribeUserScramCredentials", cases: []aclCase{one("cluster-describe", cluster(opDescribe))},
			run: func(ctx context.Context, e *env) result {
				// A named user, not users=null (all): Kafka 4.4
				// answers a denied users=null with no response (a
				// NullPointerException building the error response).
				req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
				req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "authz-carol"}}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
				var r result
				r.code("error", dr.ErrorCode)
				for _, u := range dr.Results {
					r.code("user", u.ErrorCode)
				}
				return r
			}},
		{api: "AlterUserScramCredentials", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
				d.Name = "authz-carol"
				d.Mechanism = 1
				req.Deletions = append(req.Deletions, d)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, u := range resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
					r.code("user", u.ErrorCode)
				}
				return r
			}},
		{api: "DescribeClientQuotas", cases: []aclCase{one("cluster-describeconfigs", cluster(opDescConfigs))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeClientQuotasRequest()
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.DescribeClientQuotasResponse).ErrorCode)
				return r
			}},
		{api: "AlterClientQuotas", cases: []aclCase{one("cluster-alterconfigs", cluster(opAlterConfigs))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrAlterClientQuotasRequest()
				req.ValidateOnly = true
				en := kmsg.NewAlterClientQuotasRequestEntry()
				en.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: str("authz-carol")}}
				op := kmsg.NewAlterClientQuotasRequestEntryOp()
				op.Key = "producer_byte_rate"
				op.Value = 1048576
				en.Ops = append(en.Ops, op)
				req.Entries = append(req.Entries, en)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, en := range resp.(*kmsg.AlterClientQuotasResponse).Entries {
					r.code("entity", en.ErrorCode)
				}
				return r
			}},
		{api: "UpdateFeatures", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrUpdateFeaturesRequest()
				req.TimeoutMillis = 10000
				req.ValidateOnly = true
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.UpdateFeaturesResponse).ErrorCode)
				return r
			}},
		{api: "ListConfigResources", cases: []aclCase{one("cluster-describeconfigs", cluster(opDescConfigs))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrListConfigResourcesRequest()
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				r.code("error", resp.(*kmsg.ListConfigResourcesResponse).ErrorCode)
				return r
			}},
	}
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

func describeConfigs(ctx context.Context, e *env, rt kmsg.ConfigResourceType, name string) result {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = rt
	res.ResourceName = name
	req.Resources = append(req.Resources, res)
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, res := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		r.code("resource", res.ErrorCode)
	}
	return r
}

func alterConfigs(ctx context.Context, e *env, rt kmsg.ConfigResourceType, name, key, val string) result {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = true
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType = rt
	res.ResourceName = name
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name = key
	c.Value = &val
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, res := range resp.(*kmsg.AlterConfigsResponse).Resources {
		r.code("resource", res.ErrorCode)
	}
	return r
}

func incrementalAlterConfigs(ctx context.Context, e *env, rt kmsg.ConfigResourceType, name, key, val string) result {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = true
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = rt
	res.ResourceName = name
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name = key
	c.Value = &val
	c.Op = kmsg.IncrementalAlterConfigOpSet
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, res := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		r.code("resource", res.ErrorCode)
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
