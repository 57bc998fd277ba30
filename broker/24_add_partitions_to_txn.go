package broker

// AddPartitionsToTxn (key 24), versions 0-5.
//
// v0-v3 come from transactional producers: the partitions they are about
// to write join their transaction at its coordinator (txn_drivers.go);
// NOT_COORDINATOR on a broker that does not lead the transactional id's
// __transaction_state partition. v4+ is Kafka's broker-to-broker form
// (KIP-890): a batch of transactions, each possibly verify-only (is the
// partition already in the ongoing transaction?). The batch is split by
// coordinator partition, each part answered by its coordinator, and the
// answers merged in the request's order.
//
// Authorization, as in Kafka and before the coordinator is looked for: a
// producer (v0-v3) needs WRITE on its transactional id, else every
// partition gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and WRITE on each
// topic. When a topic is denied, nothing is added: its partitions (and
// those of the internal topics, which clients never write) get
// TOPIC_AUTHORIZATION_FAILED, partitions that do not exist
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, and
// the coordinator is not asked. The broker-to-broker form (v4+), verify-
// only or not, needs CLUSTER_ACTION on the cluster; without it the whole
// response is CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/coordinator/txn"
	"github.com/gregor-io/gregor/protocol"
)

var addPartitionsToTxnAPI = handler{key: 24, min: 0, max: 5, handle: (*Broker).handleAddPartitionsToTxn}

func (b *Broker) handleAddPartitionsToTxn(ctx context.Context, c *conn, hdr protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AddPartitionsToTxnRequest)
	v := hdr.APIVersion
	if v < 4 {
		if !c.authorized(acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
			return txn.ErrorResponse(req, int16(protocol.TransactionalIDAuthorizationFailed)), nil
		}
		if resp := c.deniedTxnTopics(b.cluster.Snapshot(), req); resp != nil {
			return resp, nil
		}
		return b.txns.ask(ctx, b.txnPartition(req.TransactionalID), c, v, req), nil
	}
	if !c.authorizedCluster(acl.OpClusterAction) {
		resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		resp.ErrorCode = int16(protocol.ClusterAuthorizationFailed)
		return resp, nil
	}
	// Group the transactions by coordinator, keeping the first
	// appearance's order.
	var partitions []int32
	var parts [][]kmsg.AddPartitionsToTxnRequestTransaction
	index := map[int32]int{}
	for _, tr := range req.Transactions {
		p := b.txnPartition(tr.TransactionalID)
		i, ok := index[p]
		if !ok {
			i = len(partitions)
			index[p] = i
			partitions = append(partitions, p)
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], tr)
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if len(partitions) == 0 {
		return resp, nil
	}
	answers := b.txns.askAll(ctx, c, v, partitions, func(i int) kmsg.Request {
		sub := kmsg.NewPtrAddPartitionsToTxnRequest()
		sub.Transactions = parts[i]
		return sub
	})
	byID := map[string]kmsg.AddPartitionsToTxnResponseTransaction{}
	for _, a := range answers {
		ar := a.(*kmsg.AddPartitionsToTxnResponse)
		if ar.ErrorCode != 0 && resp.ErrorCode == 0 {
			resp.ErrorCode = ar.ErrorCode
		}
		for _, tr := range ar.Transactions {
			byID[tr.TransactionalID] = tr
		}
	}
	for _, tr := range req.Transactions {
		if a, ok := byID[tr.TransactionalID]; ok {
			resp.Transactions = append(resp.Transactions, a)
			delete(byID, tr.TransactionalID) // an id given twice is answered once
		}
	}
	return resp, nil
}

// deniedTxnTopics checks WRITE on each topic of a producer's
// AddPartitionsToTxn (v0-v3). With every topic allowed it returns nil and
// the coordinator takes the request (and refuses the internal topics, as
// ever); otherwise it returns the answer Kafka gives, in which nothing is
// added and the internal topics, never asked about, count as denied.
func (c *conn) deniedTxnTopics(md *cluster.Metadata, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	internal := func(topic string) bool {
		return topic == offsetsTopic || topic == txnTopic || topic == shareStateTopic
	}
	allowed := make(map[string]bool, len(req.Topics))
	denied := false
	for _, t := range req.Topics {
		if _, seen := allowed[t.Topic]; seen || internal(t.Topic) {
			continue
		}
		ok := c.authorized(acl.OpWrite, acl.ResourceTopic, t.Topic)
		allowed[t.Topic] = ok
		denied = denied || !ok
	}
	if !denied {
		return nil
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		mt := md.Topics[t.Topic]
		for _, p := range t.Partitions {
			code := protocol.OperationNotAttempted
			switch {
			case !allowed[t.Topic]:
				code = protocol.TopicAuthorizationFailed
			case mt == nil || p < 0 || int(p) >= len(mt.Partitions):
				code = protocol.UnknownTopicOrPartition
			}
			rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: int16(code)})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
