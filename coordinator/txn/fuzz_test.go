package txn

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzBaseRecords are what the partition holds before the fuzzed record:
// an id in each state a coordinator writes.
func fuzzBaseRecords() []Record {
	base := meta{producerID: 10, prevProducerID: -1, nextProducerID: -1, epoch: 2, timeoutMs: 60000, startMs: -1, lastUpdateMs: 1000}
	ongoing := base
	ongoing.state, ongoing.startMs, ongoing.partitions = StateOngoing, 900, []topicPartition{{"t", 0}, {"t", 1}}
	prep := ongoing
	prep.state, prep.producerID, prep.nextProducerID, prep.epoch, prep.clientTV = StatePrepareCommit, 11, 12, math.MaxInt16, tv2
	done := base
	done.state, done.producerID, done.startMs = StateCompleteAbort, 13, 900
	return []Record{txnRecord("empty", base), txnRecord("ongoing", ongoing), txnRecord("prep", prep), txnRecord("done", done)}
}

// FuzzReplay feeds one arbitrary __transaction_state record, after real
// ones, through Replay as the coordinator does while loading its
// partition. The record must be refused with ErrCorruptRecord or applied,
// and what it leaves must load, answer requests for every id, write its
// markers and time out.
func FuzzReplay(f *testing.F) {
	for _, r := range fuzzBaseRecords() {
		f.Add(r.Key, r.Value, false)
		f.Add(r.Key, r.Value, true)
	}
	v0 := kmsg.NewTxnMetadataValue()
	v0.ProducerID, v0.TimeoutMillis, v0.State = 1, 10, kmsg.TransactionStatePrepareAbort
	v0.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "x", Partitions: []int32{3, 3}}}
	f.Add(txnKey("ongoing"), v0.AppendTo(nil), false)
	f.Add([]byte{0, 1, 0, 0}, []byte{}, false)
	f.Add([]byte{0}, []byte{0, 0}, false)
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		c, err := New(testConfig(&counter{}), 3)
		if err != nil {
			t.Fatal(err)
		}
		records := append(fuzzBaseRecords(), Record{Key: key, Value: value})
		for i, r := range records {
			if err := c.Replay(r.Key, r.Value); err != nil && !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("record %d: error %v does not wrap ErrCorruptRecord", i, err)
			}
		}
		h := &harness{t: t, c: c, now: t0, resps: map[int]kmsg.Response{}}
		h.take(c.Loaded(t0))
		checkInvariants(t, c)
		ids := c.sortedIDs()
		h.send(describeReq(ids...))
		h.send(kmsg.NewPtrListTransactionsRequest())
		for _, id := range ids {
			st := c.txns[id]
			if st == nil {
				continue
			}
			h.send(addReq(3, id, st.producerID, st.epoch, "t", 5))
			h.send(endReq(5, id, st.producerID, st.epoch, true))
			h.send(initReq(4, &id, 1000, st.producerID, st.epoch))
		}
		h.writeMarkers()
		h.advance(time.Hour)
		h.writeMarkers()
		checkInvariants(t, c)
	})
}

// checkInvariants checks what must hold of every id between calls.
func checkInvariants(t *testing.T, c *Coordinator) {
	t.Helper()
	for id, tx := range c.txns {
		m := tx.meta
		switch {
		case (m.state.complete() || m.state == StateDead) && len(m.partitions) != 0:
			t.Fatalf("%s: %v with partitions %v", id, m.state, m.partitions)
		case !m.state.preparing() && m.nextProducerID != -1:
			t.Fatalf("%s: %v with next producer id %d", id, m.state, m.nextProducerID)
		case m.state > StateCompleteAbort || m.state < 0:
			t.Fatalf("%s: state %v held", id, m.state)
		case m.epoch < 0 && !tx.fresh:
			t.Fatalf("%s: epoch %d", id, m.epoch)
		case tx.fresh && tx.pending == nil:
			t.Fatalf("%s: new id without its first record on the way", id)
		}
	}
}

// FuzzRequests drives random request sequences of three producers through
// a coordinator, with appends held and released, markers written late and
// time passing, and checks after every step that an id's epoch never goes
// down for its producer id, that completed transactions hold no
// partitions, and at the end that replaying the records written gives the
// same state.
func FuzzRequests(f *testing.F) {
	f.Add([]byte{0, 10, 20, 30, 40, 50})
	f.Add([]byte{1, 11, 21, 60, 33, 70, 80, 3, 13})
	f.Add([]byte{0, 10, 2, 100, 110, 120, 130, 140, 20, 50, 90})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 300 {
			ops = ops[:300]
		}
		h := newHarnessWith(t, func(cfg *Config) {
			cfg.AbortTimedOutInterval = time.Minute
			cfg.RemoveExpiredInterval = time.Hour
			cfg.TransactionalIDExpiration = 2 * time.Hour
		})
		ids := []string{"a", "b", "c"}
		type seen struct {
			pid   int64
			epoch int16
		}
		last := map[string]seen{}
		// The producer id and epoch each producer believes it has.
		ps := map[string]*producer{}
		for _, id := range ids {
			ps[id] = &producer{h: h, id: id, pid: -1, epoch: -1}
		}
		for i, op := range ops {
			id := ids[int(op)%3]
			p := ps[id]
			arg := op / 3
			v2 := arg&1 == 1
			switch arg % 15 / 2 { // 0-7
			case 0: // InitProducerId, with or without KIP-360 recovery
				pid, epoch := int64(-1), int16(-1)
				if v2 && p.pid >= 0 {
					pid, epoch = p.pid, p.epoch
				}
				tok := h.send(initReq(4, &id, 60000, pid, epoch))
				if h.answered(tok) {
					if r := response[*kmsg.InitProducerIDResponse](h, tok); r.ErrorCode == 0 {
						p.pid, p.epoch = r.ProducerID, r.ProducerEpoch
					}
				}
			case 1: // AddPartitionsToTxn, client or leader form
				if v2 {
					p.addV = 5
				} else {
					p.addV = 3
				}
				req := addReq(3, id, p.pid, p.epoch, "t", int32(i%3))
				if v2 {
					req = kmsg.NewPtrAddPartitionsToTxnRequest()
					req.Version = 5
					req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: id, ProducerID: p.pid, ProducerEpoch: p.epoch,
						VerifyOnly: i%4 == 0, Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "u", Partitions: []int32{int32(i % 2)}}}}}
				}
				h.send(req)
			case 2: // AddOffsetsToTxn
				req := kmsg.NewPtrAddOffsetsToTxnRequest()
				req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = 3, id, p.pid, p.epoch, "g"
				h.send(req)
			case 3: // EndTxn v1 or v5
				v := int16(1)
				if v2 {
					v = 5
				}
				tok := h.send(endReq(v, id, p.pid, p.epoch, i%3 != 0))
				if h.answered(tok) {
					if r := response[*kmsg.EndTxnResponse](h, tok); r.ErrorCode == 0 && v == 5 {
						p.pid, p.epoch = r.ProducerID, r.ProducerEpoch
					}
				}
			case 4: // write the oldest outstanding marker
				if len(h.markers) > 0 {
					m := h.markers[0]
					h.markers = h.markers[1:]
					h.take(h.c.MarkerWritten(h.now, m))
				}
			case 5: // hold or release appends
				if h.hold {
					h.release()
				} else {
					h.hold = true
				}
			case 6: // time passes
				h.advance(time.Duration(arg%5) * 40 * time.Second)
				if arg%7 == 0 {
					h.advance(3 * time.Hour)
				}
			case 7: // near the end of the epochs (as a long-lived producer gets)
				if tx := h.c.txns[id]; tx != nil && tx.pending == nil && tx.state.complete() && tx.epoch < math.MaxInt16-3 {
					// As if loaded from a log that holds it.
					tx.epoch = math.MaxInt16 - 3
					h.records = append(h.records, txnRecord(id, tx.meta))
					last[id] = seen{tx.producerID, tx.epoch}
				}
				h.send(describeReq(id))
			}
			checkInvariants(t, h.c)
			for _, id := range ids {
				tx := h.c.txns[id]
				if tx == nil || tx.fresh {
					continue
				}
				if s, ok := last[id]; ok && s.pid == tx.producerID && tx.epoch < s.epoch {
					t.Fatalf("op %d: %s's epoch went from %d to %d", i, id, s.epoch, tx.epoch)
				} else if ok && s.pid != tx.producerID && tx.producerID < s.pid {
					t.Fatalf("op %d: %s went back to producer id %d from %d", i, id, tx.producerID, s.pid)
				}
				last[id] = seen{tx.producerID, tx.epoch}
			}
		}
		// Let everything finish, then load the records written.
		h.release()
		for len(h.markers) > 0 {
			h.writeMarkers()
		}
		loaded, out := load(t, h.records, h.now)
		if len(out.Markers) != 0 || len(out.Records) != 0 {
			t.Fatalf("nothing is left to finish after load: %+v", out)
		}
		deepEqual(t, "replayed state", durable(loaded), durable(h.c))
	})
}
