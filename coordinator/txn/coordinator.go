package txn

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Coordinator is the transaction coordinator of one __transaction_state
// partition: every transactional id that hashes to that partition
// (PartitionFor).
//
// It is a state machine: it starts no goroutine, reads no clock and does no
// I/O. Every call takes the current time; every result is an Output for the
// driver to act on. It is not safe for concurrent use: one driver goroutine
// owns it. See the package documentation for the driver's rules.
type Coordinator struct {
	cfg   Config
	epoch int32 // the coordinator epoch: the partition's leader epoch
	phase phase
	txns  map[string]*txn

	appendSeq uint64
	appends   map[uint64]*pendingAppend // by Output.Append, until durable
	cur       *pendingAppend            // what the call in progress appends

	nextAbort, nextExpire time.Time

	now time.Time // the time given to the call in progress
	out Output    // what the call in progress produced so far
}

type phase uint8

const (
	phaseLoading phase = iota // Replay allowed; requests get COORDINATOR_LOAD_IN_PROGRESS
	phaseActive               // after Loaded
	phaseFenced               // after Unload or AppendFailed; requests get NOT_COORDINATOR
)

// pendingAppend is one Output's records on their way to durability: the
// transitions they carry and the requests answered once they are durable.
type pendingAppend struct {
	txns    []*txn
	waiters []waiter
}

// waiter is a request answered when its append is durable (done) or has
// failed (fail, with the code the client gets).
type waiter struct {
	token any
	done  func() kmsg.Response
	fail  func(code int16) kmsg.Response
}

// Input is one request for the coordinator.
type Input struct {
	// Token is the driver's handle for the request; the Response to it
	// carries the same Token. The coordinator never looks inside.
	Token any

	// Version is the request's API version. Step sets it on Request too,
	// and answers with a response of the same version.
	Version int16

	// Request is the decoded body: a *kmsg.InitProducerIDRequest,
	// AddPartitionsToTxnRequest, AddOffsetsToTxnRequest, EndTxnRequest,
	// DescribeTransactionsRequest or ListTransactionsRequest. Requests
	// that name several transactional ids (AddPartitionsToTxn v4+,
	// DescribeTransactions) must hold only ids of this coordinator's
	// partition; the driver splits them and merges the responses.
	Request kmsg.Request

	// TopicAuthorized says whether the client may write to a topic, for
	// AddPartitionsToTxn v0-v3 (TOPIC_AUTHORIZATION_FAILED). Nil means no
	// authorizer: every topic.
	TopicAuthorized func(topic string) bool
}

// Response is the answer to the Input that had the same Token. Body's
// version is the request's.
type Response struct {
	Token any
	Body  kmsg.Response
}

// Marker is one transaction marker to write: a control record ending the
// transaction of ProducerID at ProducerEpoch on one partition
// (WriteTxnMarkers, API 27, to the partition's leader).
type Marker struct {
	TransactionalID  string
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
}

// Output is what one call produced.
type Output struct {
	// Records must be appended to the partition, in order, as one batch.
	Records []Record
	// Append names Records when there are any (zero otherwise): once they
	// are durable, pass it to Appended.
	Append uint64
	// Responses can be sent now: they depend on nothing that is not
	// durable. Answers that wait for Records come out of Appended.
	Responses []Response
	// Markers must be written; report each with MarkerWritten.
	Markers []Marker
	// NextTick is when Tick must be called next. The zero time means no
	// timer is armed (the coordinator is not loaded).
	NextTick time.Time
}

// New returns a coordinator that is loading: feed it the partition's
// records with Replay, then call Loaded. Until then every request is
// answered with COORDINATOR_LOAD_IN_PROGRESS. coordinatorEpoch is the
// partition's leader epoch: markers carry it so that partition leaders
// refuse markers of a coordinator that was replaced.
func New(cfg Config, coordinatorEpoch int32) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Coordinator{
		cfg:     cfg,
		epoch:   coordinatorEpoch,
		txns:    make(map[string]*txn),
		appends: make(map[uint64]*pendingAppend),
	}, nil
}

// Loaded ends loading. Transactions loaded in PrepareCommit or
// PrepareAbort have their markers written again (Kafka resends them on
// load; partition leaders ignore duplicates), and the timers start.
// Requests are served from now on. Calling it again does nothing.
func (c *Coordinator) Loaded(now time.Time) Output {
	c.begin(now)
	if c.phase != phaseLoading {
		return c.flush()
	}
	c.phase = phaseActive
	for _, id := range c.sortedIDs() {
		if t := c.txns[id]; t.state.preparing() {
			c.sendMarkers(t)
		}
	}
	c.nextAbort = now.Add(c.cfg.AbortTimedOutInterval)
	c.nextExpire = now.Add(c.cfg.RemoveExpiredInterval)
	return c.flush()
}

// Step handles one request. Timers that are due at now fire first.
//
// Step panics on a request type the coordinator does not handle (see
// Input.Request); that is a bug in the driver.
func (c *Coordinator) Step(now time.Time, in Input) Output {
	c.begin(now)
	in.Request.SetVersion(in.Version)
	switch c.phase {
	case phaseLoading:
		c.respond(in.Token, errorResponse(in.Request, errCoordinatorLoadInProgress))
		return c.flush()
	case phaseFenced:
		c.respond(in.Token, errorResponse(in.Request, errNotCoordinator))
		return c.flush()
	}
	c.fireDue()
	switch req := in.Request.(type) {
	case *kmsg.InitProducerIDRequest:
		c.initProducerID(in, req)
	case *kmsg.AddPartitionsToTxnRequest:
		c.addPartitions(in, req)
	case *kmsg.AddOffsetsToTxnRequest:
		c.addOffsets(in, req)
	case *kmsg.EndTxnRequest:
		c.endTxn(in, req)
	case *kmsg.DescribeTransactionsRequest:
		c.describe(in, req)
	case *kmsg.ListTransactionsRequest:
		c.list(in, req)
	default:
		panic(fmt.Sprintf("txn: Step given unsupported request %T", in.Request))
	}
	return c.flush()
}

// Handles reports whether Step takes requests of this API key. The
// coordinator keeps strings of those requests, so the broker decodes them
// into memory of their own.
func Handles(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.EndTxn,
		kmsg.DescribeTransactions, kmsg.ListTransactions:
		return true
	}
	return false
}

// Tick fires the timers due at now: transactions past their timeout are
// aborted with a bumped epoch, and transactional ids idle for
// TransactionalIDExpiration are removed.
func (c *Coordinator) Tick(now time.Time) Output {
	c.begin(now)
	if c.phase == phaseActive {
		c.fireDue()
	}
	return c.flush()
}

// Appended tells the coordinator that the Records of the Output with this
// Append are durable. The transitions they carry take effect: requests
// waiting on them are answered, and a transaction that became
// PrepareCommit or PrepareAbort has its markers in the returned Output (or,
// with no partition to mark, its completion record). An unknown id (of an
// append failed or unloaded meanwhile) does nothing.
func (c *Coordinator) Appended(now time.Time, id uint64) Output {
	c.begin(now)
	pa := c.appends[id]
	if pa == nil || c.phase != phaseActive {
		return c.flush()
	}
	delete(c.appends, id)
	for _, t := range pa.txns {
		c.complete(t)
	}
	for _, w := range pa.waiters {
		c.respond(w.token, w.done())
	}
	return c.flush()
}

// AppendFailed is called when the Records of an Output could not be
// appended; code is the append's error code. The requests waiting on that
// append, and on every other append not yet durable, are answered with the
// code a client gets for it (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
// ...), and the coordinator fences itself as Unload does: an append whose
// outcome is unknown (a timeout) may still become durable, so only a
// coordinator loaded again from the log is sure to hold what the log holds.
// The driver drops this one and, if the broker still leads the partition,
// loads a new one.
func (c *Coordinator) AppendFailed(code int16) []Response {
	return c.failAll(appendErrorCode(code))
}

// Unload is called when the broker stops leading the partition. Requests
// waiting on appends are answered NOT_COORDINATOR, and later requests get
// NOT_COORDINATOR too. Markers being written are the driver's to cancel.
func (c *Coordinator) Unload() []Response {
	return c.failAll(errNotCoordinator)
}

func (c *Coordinator) failAll(code int16) []Response {
	var out []Response
	ids := make([]uint64, 0, len(c.appends))
	for id := range c.appends {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		for _, w := range c.appends[id].waiters {
			out = append(out, Response{Token: w.token, Body: w.fail(code)})
		}
	}
	c.phase = phaseFenced
	c.txns = make(map[string]*txn)
	c.appends = make(map[uint64]*pendingAppend)
	c.cur = nil
	c.out = Output{}
	return out
}

// MarkerWritten reports that the marker m (from an Output) is written, or
// that its partition no longer exists (a deleted topic: Kafka drops it from
// the transaction). Once every partition of the transaction is marked, the
// returned Output holds the CompleteCommit or CompleteAbort record.
// Retriable marker errors (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS,
// REQUEST_TIMED_OUT, ...) are not reported: the driver retries the marker.
// A marker that no longer matches the transaction (it was written already,
// or the coordinator was reloaded meanwhile) is ignored.
func (c *Coordinator) MarkerWritten(now time.Time, m Marker) Output {
	c.begin(now)
	t := c.txns[m.TransactionalID]
	if c.phase != phaseActive || t == nil || t.pending != nil || !t.state.preparing() ||
		m.CoordinatorEpoch != c.epoch || t.producerID != m.ProducerID || t.epoch != m.ProducerEpoch ||
		m.Commit != (t.state == StatePrepareCommit) {
		return c.flush()
	}
	if t.removePartition(topicPartition{Topic: m.Topic, Partition: m.Partition}) && len(t.partitions) == 0 {
		c.writeComplete(t)
	}
	return c.flush()
}

// fireDue runs the periodic checks due at c.now.
func (c *Coordinator) fireDue() {
	if !c.now.Before(c.nextAbort) {
		c.abortTimedOut()
		c.nextAbort = c.now.Add(c.cfg.AbortTimedOutInterval)
	}
	if !c.now.Before(c.nextExpire) {
		c.expireIDs()
		c.nextExpire = c.now.Add(c.cfg.RemoveExpiredInterval)
	}
}

// abortTimedOut aborts, as a fenced producer's, every transaction open for
// longer than its timeout (Kafka's abortTimedOutTransactions).
func (c *Coordinator) abortTimedOut() {
	nowMs := c.now.UnixMilli()
	for _, id := range c.sortedIDs() {
		t := c.txns[id]
		if t.pending == nil && t.state == StateOngoing && t.startMs+int64(t.timeoutMs) < nowMs {
			c.fenceAbort(t, nil) // without a producer id at hand, the next check retries
		}
	}
}

// expireIDs removes, with a tombstone, the ids with no open transaction
// whose last update is TransactionalIDExpiration old.
func (c *Coordinator) expireIDs() {
	limit := c.now.Add(-c.cfg.TransactionalIDExpiration).UnixMilli()
	for _, id := range c.sortedIDs() {
		t := c.txns[id]
		if t.pending == nil && t.state.complete() && t.lastUpdateMs <= limit {
			c.transition(t, transitExpire, t.clone(), txnTombstone(t.id))
		}
	}
}

// transition makes to the pending state of t and writes rec for it; the
// change takes effect when the record is durable (complete).
func (c *Coordinator) transition(t *txn, kind transitKind, to meta, rec Record) {
	if t.pending != nil {
		panic(fmt.Sprintf("txn: transition of %q while one is pending", t.id))
	}
	to.lastUpdateMs = c.now.UnixMilli()
	t.pending = &transit{kind: kind, to: to}
	if rec.Key == nil {
		rec = txnRecord(t.id, to)
	}
	c.out.Records = append(c.out.Records, rec)
	c.appendFor().txns = append(c.appendFor().txns, t)
}

// wait answers a request once the records of the call in progress are
// durable.
func (c *Coordinator) wait(w waiter) {
	pa := c.appendFor()
	pa.waiters = append(pa.waiters, w)
}

func (c *Coordinator) appendFor() *pendingAppend {
	if c.cur == nil {
		c.cur = &pendingAppend{}
	}
	return c.cur
}

// complete applies t's pending transition, whose record is durable.
func (c *Coordinator) complete(t *txn) {
	p := t.pending
	t.pending = nil
	t.fresh = false
	switch p.kind {
	case transitExpire:
		if c.txns[t.id] == t {
			delete(c.txns, t.id)
		}
		return
	}
	t.meta = p.to
	if p.kind == transitEnd || p.kind == transitFenceAbort {
		c.sendMarkers(t)
	}
}

// sendMarkers asks for the markers of a PrepareCommit or PrepareAbort
// transaction, or completes it when no partition is left.
func (c *Coordinator) sendMarkers(t *txn) {
	if len(t.partitions) == 0 {
		c.writeComplete(t)
		return
	}
	for _, tp := range t.partitions {
		c.out.Markers = append(c.out.Markers, Marker{
			TransactionalID:  t.id,
			Topic:            tp.Topic,
			Partition:        tp.Partition,
			ProducerID:       t.producerID,
			ProducerEpoch:    t.epoch,
			Commit:           t.state == StatePrepareCommit,
			CoordinatorEpoch: c.epoch,
		})
	}
}

// writeComplete moves a transaction whose markers are all written to
// CompleteCommit or CompleteAbort. A transaction version 2 end whose epoch
// overflowed takes its next producer id now, at epoch 0.
func (c *Coordinator) writeComplete(t *txn) {
	to := t.clone()
	to.state = StateCompleteAbort
	if t.state == StatePrepareCommit {
		to.state = StateCompleteCommit
	}
	to.partitions = nil
	if t.nextProducerID != noProducerID {
		to.prevProducerID = t.producerID
		to.producerID = t.nextProducerID
		to.lastEpoch = t.epoch
		to.epoch = 0
	}
	to.nextProducerID = noProducerID
	c.transition(t, transitComplete, to, Record{})
}

// bump returns the epoch after e, saturating at MaxInt16: a record could
// hold MaxInt16 in a state from which only a new producer id leads on.
func bump(e int16) int16 {
	if e == math.MaxInt16 {
		return e
	}
	return e + 1
}

func (c *Coordinator) begin(now time.Time) { c.now = now }

func (c *Coordinator) respond(token any, body kmsg.Response) {
	c.out.Responses = append(c.out.Responses, Response{Token: token, Body: body})
}

// flush returns what the call produced and starts a new Output.
func (c *Coordinator) flush() Output {
	out := c.out
	c.out = Output{}
	if c.cur != nil {
		if len(out.Records) == 0 {
			panic("txn: a transition without a record")
		}
		c.appendSeq++
		out.Append = c.appendSeq
		c.appends[c.appendSeq] = c.cur
		c.cur = nil
	}
	if c.phase == phaseActive {
		out.NextTick = c.nextAbort
		if c.nextExpire.Before(out.NextTick) {
			out.NextTick = c.nextExpire
		}
	}
	return out
}

func (c *Coordinator) sortedIDs() []string {
	ids := make([]string, 0, len(c.txns))
	for id := range c.txns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
