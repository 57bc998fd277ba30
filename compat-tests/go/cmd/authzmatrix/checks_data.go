package main

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// dataChecks: Produce (plain, idempotent, transactional), Fetch, ListOffsets,
// OffsetForLeaderEpoch and Metadata of the matrix's topic.
func dataChecks() []check {
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
				return produce(ctx, e, produceReq{topic: topic, topicID: e.topicID, acks: 1, pid: -1, epoch: -1})
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
				return produce(ctx, e, produceReq{topic: topic, topicID: e.topicID, acks: -1, pid: e.idemPID, epoch: e.idemEpoch})
			}},
		{api: "Produce-transactional", cases: []aclCase{
			one("topic-write", on(rtTopic, topic, opWrite)),
			one("txn-write", on(rtTxn, txnID, opWrite)),
			one("txn-write+topic-write", on(rtTxn, txnID, opWrite), on(rtTopic, topic, opWrite)),
		},
			run: func(ctx context.Context, e *env) result {
				// The partition is not in a transaction: once
				// authorized, the broker refuses the batch.
				return produce(ctx, e, produceReq{topic: topic, topicID: e.topicID, txnID: str(txnID), acks: -1,
					pid: e.pid, epoch: e.epoch, transactional: true})
			}},
		{api: "Fetch", cases: []aclCase{one("topic-read", on(rtTopic, topic, opRead))},
			run: func(ctx context.Context, e *env) result {
				return fetch(ctx, e, topic, e.topicID, false)
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
				return listOffsets(ctx, e, topic)
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
	}
}

// autoCreateChecks: Metadata that may create its topic, then
// DescribeTopicPartitions.
func autoCreateChecks() []check {
	return []check{
		{api: "Metadata-autocreate", cases: []aclCase{
			one("topic-describe", on(rtTopic, topicAuto, opDescribe)),
			one("cluster-create", cluster(opCreate)),
			one("topic-describe+cluster-create", on(rtTopic, topicAuto, opDescribe), cluster(opCreate)),
		},
			run: func(ctx context.Context, e *env) result {
				// auto.create.topics.enable is left at its default
				// (true) on both brokers; the topic is created only
				// when the principal may create it.
				req := kmsg.NewPtrMetadataRequest()
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = str(topicAuto)
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
				r.add("created", yesNo(e.topicExists(ctx, topicAuto, wait)))
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
	}
}

// produceReq is what varies between the matrix's Produce requests, each one
// batch of one record ("bob") to partition 0 of one topic.
type produceReq struct {
	topic         string
	topicID       [16]byte // zero for a topic that has none (a missing one)
	old           bool     // on the v12 connection, which names the topic: from v13 on, one without an id cannot be sent
	txnID         *string
	acks          int16
	pid           int64 // -1: no producer id
	epoch         int16
	transactional bool
}

// produce sends p and records the partition's error code as p0=.
func produce(ctx context.Context, e *env, p produceReq) result {
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = p.txnID
	req.Acks = p.acks
	req.TimeoutMillis = 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic, t.TopicID = p.topic, p.topicID
	tp := kmsg.NewProduceRequestTopicPartition()
	tp.Records = batch("bob", p.pid, p.epoch, p.transactional)
	t.Partitions = append(t.Partitions, tp)
	req.Topics = append(req.Topics, t)
	send := e.send
	if p.old {
		send = e.sendOld
	}
	resp, err := send(ctx, req)
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
}

// fetch fetches partition 0 of the topic and records the response's and the
// partition's error codes; old sends on the v12 connection, which names the
// topic (for one that has no id).
func fetch(ctx context.Context, e *env, name string, id [16]byte, old bool) result {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 100
	req.MaxBytes = 1 << 20
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = name, id
	p := kmsg.NewFetchRequestTopicPartition()
	p.PartitionMaxBytes = 1 << 20
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
	fr := resp.(*kmsg.FetchResponse)
	var r result
	r.code("error", fr.ErrorCode)
	for _, t := range fr.Topics {
		for _, p := range t.Partitions {
			r.code("p0", p.ErrorCode)
		}
	}
	return r
}

// listOffsets asks for the latest offset of partition 0 of the topic.
func listOffsets(ctx context.Context, e *env, name string) result {
	req := kmsg.NewPtrListOffsetsRequest()
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = name
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
}
