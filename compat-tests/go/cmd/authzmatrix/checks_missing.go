package main

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// missingResourceChecks: requests naming a topic, group or transactional id
// that does not exist, with no ACL and with the ACLs the request needs on
// that name.
func missingResourceChecks() []check {
	return []check{
		{api: "Metadata-missing-topic", cases: []aclCase{one("topic-describe", on(rtTopic, topicMissing, opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrMetadataRequest()
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = str(topicMissing)
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
		{api: "Produce-missing-topic", cases: []aclCase{one("topic-write", on(rtTopic, topicMissing, opWrite))},
			run: func(ctx context.Context, e *env) result {
				return produce(ctx, e, produceReq{topic: topicMissing, old: true, acks: 1, pid: -1, epoch: -1})
			}},
		{api: "Fetch-missing-topic", cases: []aclCase{one("topic-read", on(rtTopic, topicMissing, opRead))},
			run: func(ctx context.Context, e *env) result {
				return fetch(ctx, e, topicMissing, [16]byte{}, true)
			}},
		{api: "ListOffsets-missing-topic", cases: []aclCase{one("topic-describe", on(rtTopic, topicMissing, opDescribe))},
			run: func(ctx context.Context, e *env) result {
				return listOffsets(ctx, e, topicMissing)
			}},
		{api: "OffsetCommit-missing-topic", cases: []aclCase{
			one("group-read", on(rtGroup, group, opRead)),
			one("group-read+topic-read", on(rtGroup, group, opRead), on(rtTopic, topicMissing, opRead)),
		},
			run: func(ctx context.Context, e *env) result {
				return offsetCommit(ctx, e, topicMissing, [16]byte{}, 1, true)
			}},
		{api: "DescribeConfigs-missing-topic", cases: []aclCase{one("topic-describeconfigs", on(rtTopic, topicMissing, opDescConfigs))},
			run: func(ctx context.Context, e *env) result {
				return describeConfigs(ctx, e, kmsg.ConfigResourceTypeTopic, topicMissing)
			}},
		{api: "DeleteTopics-missing-topic", cases: []aclCase{
			one("topic-delete", on(rtTopic, topicMissing, opDelete)),
			one("topic-describe", on(rtTopic, topicMissing, opDescribe)),
		},
			run: func(ctx context.Context, e *env) result {
				return deleteTopic(ctx, e, topicMissing)
			}},
		{api: "DescribeGroups-missing-group", cases: []aclCase{one("group-describe", on(rtGroup, groupMissing, opDescribe))},
			run: func(ctx context.Context, e *env) result {
				return describeGroup(ctx, e, groupMissing)
			}},
		{api: "DescribeTransactions-missing-txn", cases: []aclCase{one("txn-describe", on(rtTxn, txnIDMissing, opDescribe))},
			run: func(ctx context.Context, e *env) result {
				return describeTransaction(ctx, e, txnIDMissing, false)
			}},
	}
}
