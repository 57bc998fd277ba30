package main

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnChecks: producer ids, the steps of a transaction, the markers, and
// describing and listing producers and transactions. The steps use the
// producer id of txnID, which the admin initialized.
func txnChecks() []check {
	return []check{
		{api: "InitProducerId-idempotent", cases: []aclCase{
			one("cluster-idempotentwrite", cluster(opIdemWrite)),
			one("topic-write", on(rtTopic, topic, opWrite)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.TransactionTimeoutMillis = 60000
				return errorOnly(ctx, e, req, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
			}},
		{api: "InitProducerId-transactional", cases: []aclCase{one("txn-write", on(rtTxn, txnIDBob, opWrite))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.TransactionalID = str(txnIDBob)
				req.TransactionTimeoutMillis = 60000
				return errorOnly(ctx, e, req, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
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
				return errorOnly(ctx, e, req, func(r *kmsg.AddOffsetsToTxnResponse) int16 { return r.ErrorCode })
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
				return errorOnly(ctx, e, req, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })
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
				return describeTransaction(ctx, e, txnID, true)
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
	}
}

// describeTransaction describes one transactional id, recording its error
// code and, with withState, its state.
func describeTransaction(ctx context.Context, e *env, id string, withState bool) result {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, s := range resp.(*kmsg.DescribeTransactionsResponse).TransactionStates {
		r.code("txn", s.ErrorCode)
		if withState {
			r.add("state", orDash(s.State))
		}
	}
	return r
}
