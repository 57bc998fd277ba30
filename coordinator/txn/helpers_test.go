package txn

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// t0 is the start of every scenario's fake clock.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// counter hands out producer ids 1000, 1001, ... unless empty is set.
type counter struct {
	next  int64
	empty bool
}

func (c *counter) NextProducerID() (int64, bool) {
	if c.empty {
		return 0, false
	}
	c.next++
	return 999 + c.next, true
}

func testConfig(ids *counter) Config {
	cfg := DefaultConfig()
	cfg.ProducerIDs = ids
	return cfg
}

// harness drives a Coordinator as the broker's driver would: it appends
// every Output's records and reports them durable (unless hold is set),
// collects responses by token and markers, and calls Tick at each
// NextTick while time is advanced.
type harness struct {
	t       *testing.T
	ids     *counter
	c       *Coordinator
	now     time.Time
	next    time.Time
	records []Record
	resps   map[int]kmsg.Response
	token   int
	markers []Marker
	hold    bool
	held    []uint64
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, func(*Config) {})
}

func newHarnessWith(t *testing.T, change func(*Config)) *harness {
	t.Helper()
	ids := &counter{}
	cfg := testConfig(ids)
	change(&cfg)
	c, err := New(cfg, 7)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h := &harness{t: t, ids: ids, c: c, now: t0, resps: make(map[int]kmsg.Response)}
	h.take(c.Loaded(t0))
	return h
}

// take plays the driver for one Output.
func (h *harness) take(out Output) {
	h.t.Helper()
	if (out.Append != 0) != (len(out.Records) > 0) {
		h.t.Fatalf("output with %d records has append id %d", len(out.Records), out.Append)
	}
	h.records = append(h.records, out.Records...)
	h.answer(out.Responses)
	h.markers = append(h.markers, out.Markers...)
	if !out.NextTick.IsZero() {
		h.next = out.NextTick
	}
	if out.Append != 0 {
		if h.hold {
			h.held = append(h.held, out.Append)
		} else {
			h.take(h.c.Appended(h.now, out.Append))
		}
	}
}

func (h *harness) answer(rs []Response) {
	h.t.Helper()
	for _, r := range rs {
		// Every response must encode and decode at its version.
		back := r.Body.RequestKind().ResponseKind()
		back.SetVersion(r.Body.GetVersion())
		if err := back.ReadFrom(r.Body.AppendTo(nil)); err != nil {
			h.t.Fatalf("%T v%d does not round-trip: %v", r.Body, r.Body.GetVersion(), err)
		}
		tok := r.Token.(int)
		if _, dup := h.resps[tok]; dup {
			h.t.Fatalf("token %d answered twice", tok)
		}
		h.resps[tok] = r.Body
	}
}

// release reports the held appends durable, in order, and stops holding.
func (h *harness) release() {
	h.t.Helper()
	h.hold = false
	held := h.held
	h.held = nil
	for _, id := range held {
		h.take(h.c.Appended(h.now, id))
	}
}

// writeMarkers reports every outstanding marker written.
func (h *harness) writeMarkers() []Marker {
	h.t.Helper()
	ms := h.markers
	h.markers = nil
	for _, m := range ms {
		h.take(h.c.MarkerWritten(h.now, m))
	}
	return ms
}

// send steps one request and returns its token.
func (h *harness) send(req kmsg.Request) int {
	h.t.Helper()
	h.token++
	h.take(h.c.Step(h.now, Input{Token: h.token, Version: req.GetVersion(), Request: req}))
	return h.token
}

// advance moves the clock by d, ticking at every NextTick on the way.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	target := h.now.Add(d)
	for !h.next.IsZero() && !h.next.After(target) {
		h.now = h.next
		h.take(h.c.Tick(h.now))
	}
	h.now = target
}

func response[T kmsg.Response](h *harness, token int) T {
	h.t.Helper()
	r, ok := h.resps[token]
	if !ok {
		h.t.Fatalf("token %d: no response yet", token)
	}
	typed, ok := r.(T)
	if !ok {
		h.t.Fatalf("token %d: response is %T", token, r)
	}
	return typed
}

func (h *harness) answered(token int) bool {
	_, ok := h.resps[token]
	return ok
}

func wantCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error code %d, want %d", what, got, want)
	}
}

func deepEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// ---- requests ----

func initReq(v int16, id *string, timeoutMs int32, pid int64, epoch int16) *kmsg.InitProducerIDRequest {
	r := kmsg.NewPtrInitProducerIDRequest()
	r.Version, r.TransactionalID, r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch = v, id, timeoutMs, pid, epoch
	return r
}

func addReq(v int16, id string, pid int64, epoch int16, topic string, parts ...int32) *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch = v, id, pid, epoch
	r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: parts}}
	return r
}

func endReq(v int16, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnRequest {
	r := kmsg.NewPtrEndTxnRequest()
	r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = v, id, pid, epoch, commit
	return r
}

func describeReq(ids ...string) *kmsg.DescribeTransactionsRequest {
	r := kmsg.NewPtrDescribeTransactionsRequest()
	r.TransactionalIDs = ids
	return r
}

// addCodes flattens a v0-v3 AddPartitionsToTxn response.
func addCodes(r *kmsg.AddPartitionsToTxnResponse) []int16 {
	var out []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// ---- a simulated transactional producer ----

// producer is a transactional producer as a client library drives it, at
// fixed versions of InitProducerId, AddPartitionsToTxn and EndTxn.
type producer struct {
	h                 *harness
	id                string
	pid               int64
	epoch             int16
	initV, addV, endV int16
}

// producerV2 speaks the versions of a Kafka 4.x client with transaction
// version 2; producerV0 those of a 2.x client.
func (h *harness) producerV2(id string) *producer {
	return &producer{h: h, id: id, pid: -1, epoch: -1, initV: 5, addV: 5, endV: 5}
}

func (h *harness) producerV0(id string) *producer {
	return &producer{h: h, id: id, pid: -1, epoch: -1, initV: 1, addV: 1, endV: 1}
}

// init sends InitProducerId (with the current id and epoch, KIP-360, once
// it has them and speaks v3+) and keeps the answer.
func (p *producer) init() int16 {
	p.h.t.Helper()
	pid, epoch := int64(-1), int16(-1)
	if p.initV >= 3 {
		pid, epoch = p.pid, p.epoch
	}
	tok := p.h.send(initReq(p.initV, &p.id, 60000, pid, epoch))
	if !p.h.answered(tok) {
		return -100 // waiting
	}
	r := response[*kmsg.InitProducerIDResponse](p.h, tok)
	if r.ErrorCode == errNone {
		p.pid, p.epoch = r.ProducerID, r.ProducerEpoch
	}
	return r.ErrorCode
}

func (p *producer) mustInit() {
	p.h.t.Helper()
	wantCode(p.h.t, p.id+" init", p.init(), errNone)
}

func (p *producer) add(topic string, parts ...int32) int16 {
	p.h.t.Helper()
	var codes []int16
	if p.addV < 4 {
		tok := p.h.send(addReq(p.addV, p.id, p.pid, p.epoch, topic, parts...))
		codes = addCodes(response[*kmsg.AddPartitionsToTxnResponse](p.h, tok))
	} else {
		// Transaction version 2: the partition leader adds the
		// partition for the producer, with the batched form.
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = p.addV
		req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: p.id, ProducerID: p.pid, ProducerEpoch: p.epoch,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: parts}}}}
		r := response[*kmsg.AddPartitionsToTxnResponse](p.h, p.h.send(req))
		for _, t := range r.Transactions[0].Topics {
			for _, pp := range t.Partitions {
				codes = append(codes, pp.ErrorCode)
			}
		}
	}
	for _, c := range codes[1:] {
		if c != codes[0] {
			p.h.t.Fatalf("add: codes %v differ", codes)
		}
	}
	return codes[0]
}

// end sends EndTxn and returns its token; with v5+ the new id and epoch
// are kept once answered.
func (p *producer) end(commit bool) int {
	p.h.t.Helper()
	tok := p.h.send(endReq(p.endV, p.id, p.pid, p.epoch, commit))
	p.took(tok)
	return tok
}

func (p *producer) took(tok int) {
	if !p.h.answered(tok) {
		return
	}
	r := response[*kmsg.EndTxnResponse](p.h, tok)
	if r.ErrorCode == errNone && p.endV >= 5 {
		p.pid, p.epoch = r.ProducerID, r.ProducerEpoch
	}
}

func (p *producer) endCode(commit bool) int16 {
	p.h.t.Helper()
	tok := p.end(commit)
	return response[*kmsg.EndTxnResponse](p.h, tok).ErrorCode
}

// state returns the coordinator's view of an id.
func (h *harness) state(id string) meta {
	h.t.Helper()
	t := h.c.txns[id]
	if t == nil {
		h.t.Fatalf("no transactional id %q", id)
	}
	return t.clone()
}

func strp(s string) *string { return &s }

func sortedMarkers(ms []Marker) []Marker {
	ms = slices.Clone(ms)
	slices.SortFunc(ms, func(a, b Marker) int {
		return comparePartitions(topicPartition{a.Topic, a.Partition}, topicPartition{b.Topic, b.Partition})
	})
	return ms
}
