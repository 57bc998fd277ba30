package txn

import (
	"fmt"
	"regexp"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describe handles DescribeTransactions: the state of each id.
func (c *Coordinator) describe(in Input, req *kmsg.DescribeTransactionsRequest) {
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	resp.Version = in.Version
	for _, id := range req.TransactionalIDs {
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.TransactionalID = id
		t := c.txns[id]
		switch {
		case id == "":
			s.ErrorCode = errInvalidRequest
		case t == nil || t.expiring():
			s.ErrorCode = errTransactionalIDNotFound
		default:
			s.State = t.state.String()
			s.TimeoutMillis = t.timeoutMs
			s.StartTimestamp = t.startMs
			s.ProducerID = t.producerID
			s.ProducerEpoch = t.epoch
			for _, tp := range t.partitions {
				if n := len(s.Topics); n > 0 && s.Topics[n-1].Topic == tp.Topic {
					s.Topics[n-1].Partitions = append(s.Topics[n-1].Partitions, tp.Partition)
					continue
				}
				dt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				dt.Topic, dt.Partitions = tp.Topic, []int32{tp.Partition}
				s.Topics = append(s.Topics, dt)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	c.respond(in.Token, resp)
}

// list handles ListTransactions: the ids matching every filter given, by
// id. Unknown state names are echoed back, as Kafka does; the duration
// filter (v1+) keeps transactions that began more than that long ago, and
// the id pattern (v2+) is a regular expression that must match somewhere
// in the id (Go's RE2 syntax, close to Java's for the patterns in use).
func (c *Coordinator) list(in Input, req *kmsg.ListTransactionsRequest) {
	resp := kmsg.NewPtrListTransactionsResponse()
	resp.Version = in.Version
	states := map[State]bool{}
	for _, name := range req.StateFilters {
		if s, ok := stateByName(name); ok {
			states[s] = true
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	pids := map[int64]bool{}
	for _, p := range req.ProducerIDFilters {
		pids[p] = true
	}
	var re *regexp.Regexp
	if in.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if re, err = regexp.Compile(*req.TransactionalIDPattern); err != nil {
			resp.ErrorCode = errInvalidRegularExpression
			c.respond(in.Token, resp)
			return
		}
	}
	duration := int64(-1)
	if in.Version >= 1 {
		duration = req.DurationFilterMillis
	}
	nowMs := c.now.UnixMilli()
	for _, id := range c.sortedIDs() {
		t := c.txns[id]
		switch {
		case t.expiring():
		case len(pids) > 0 && !pids[t.producerID]:
		case len(req.StateFilters) > 0 && !states[t.state]:
		case duration >= 0 && nowMs-t.startMs <= duration:
		case re != nil && !re.MatchString(id):
		default:
			s := kmsg.NewListTransactionsResponseTransactionState()
			s.TransactionalID, s.ProducerID, s.TransactionState = id, t.producerID, t.state.String()
			resp.TransactionStates = append(resp.TransactionStates, s)
		}
	}
	c.respond(in.Token, resp)
}

// errorResponse answers req with code everywhere it has room for one.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	v := req.GetVersion()
	switch req := req.(type) {
	case *kmsg.InitProducerIDRequest:
		r := kmsg.NewPtrInitProducerIDResponse()
		r.ErrorCode = code
		r.ProducerID, r.ProducerEpoch = noProducerID, noProducerEpoch
		r.Version = v
		return r
	case *kmsg.AddPartitionsToTxnRequest:
		r := kmsg.NewPtrAddPartitionsToTxnResponse()
		r.Version = v
		each := func(topics []string, parts [][]int32) []kmsg.AddPartitionsToTxnResponseTopic {
			var tps []topicPartition
			for i, t := range topics {
				for _, p := range parts[i] {
					tps = append(tps, topicPartition{Topic: t, Partition: p})
				}
			}
			codes := make([]int16, len(tps))
			for i := range codes {
				codes[i] = code
			}
			return addPartitionsTopics(tps, codes)
		}
		if v < 4 {
			var topics []string
			var parts [][]int32
			for _, t := range req.Topics {
				topics, parts = append(topics, t.Topic), append(parts, t.Partitions)
			}
			r.Topics = each(topics, parts)
			return r
		}
		for _, tr := range req.Transactions {
			var topics []string
			var parts [][]int32
			for _, t := range tr.Topics {
				topics, parts = append(topics, t.Topic), append(parts, t.Partitions)
			}
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = tr.TransactionalID
			for _, t := range each(topics, parts) {
				tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				tt.Topic = t.Topic
				for _, p := range t.Partitions {
					tt.Partitions = append(tt.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: p.Partition, ErrorCode: p.ErrorCode})
				}
				rt.Topics = append(rt.Topics, tt)
			}
			r.Transactions = append(r.Transactions, rt)
		}
		return r
	case *kmsg.AddOffsetsToTxnRequest:
		r := kmsg.NewPtrAddOffsetsToTxnResponse()
		r.Version = v
		r.ErrorCode = code
		return r
	case *kmsg.EndTxnRequest:
		r := kmsg.NewPtrEndTxnResponse()
		r.Version = v
		r.ErrorCode = code
		r.ProducerID, r.ProducerEpoch = noProducerID, noProducerEpoch
		return r
	case *kmsg.DescribeTransactionsRequest:
		r := kmsg.NewPtrDescribeTransactionsResponse()
		r.Version = v
		for _, id := range req.TransactionalIDs {
			s := kmsg.NewDescribeTransactionsResponseTransactionState()
			s.TransactionalID, s.ErrorCode = id, code
			r.TransactionStates = append(r.TransactionStates, s)
		}
		return r
	case *kmsg.ListTransactionsRequest:
		r := kmsg.NewPtrListTransactionsResponse()
		r.Version = v
		r.ErrorCode = code
		return r
	}
	panic(fmt.Sprintf("txn: Step given unsupported request %T", req))
}
