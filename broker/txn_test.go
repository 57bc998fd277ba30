package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/txn"
	"github.com/gregor-io/gregor/protocol"
)

// smallTxnTopic makes __transaction_state (and __consumer_offsets) small,
// so tests create them quickly.
func smallTxnTopic(c *Config) {
	c.TransactionStateLogNumPartitions = 3
	c.OffsetsTopicNumPartitions = 3
}

// findTxnCoordinator asks FindCoordinator v3 for a transactional id.
func (w *wireConn) findTxnCoordinator(id string) *kmsg.FindCoordinatorResponse {
	w.t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(3)
	req.CoordinatorType = coordinatorTransaction
	req.CoordinatorKey = id
	return w.mustRoundTrip(req).(*kmsg.FindCoordinatorResponse)
}

// initTxn sends InitProducerId for a transactional id, retrying while the
// coordinator loads or is not known yet, and fails the test on any other
// error.
func (w *wireConn) initTxn(id string, version int16) (int64, int16) {
	w.t.Helper()
	resp := w.initTxnResp(id, version, 60000, -1, -1)
	if resp.ErrorCode != 0 {
		w.t.Fatalf("init producer id for %q: %s", id, protocol.ErrorCode(resp.ErrorCode))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func (w *wireConn) initTxnResp(id string, version int16, timeoutMs int32, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	w.t.Helper()
	var resp *kmsg.InitProducerIDResponse
	waitFor(w.t, 20*time.Second, "InitProducerId answered by a loaded coordinator", func() error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(version)
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = timeoutMs
		req.ProducerID, req.ProducerEpoch = pid, epoch
		resp = w.mustRoundTrip(req).(*kmsg.InitProducerIDResponse)
		switch protocol.ErrorCode(resp.ErrorCode) {
		case protocol.CoordinatorLoadInProgress, protocol.NotCoordinator, protocol.CoordinatorNotAvailable, protocol.ConcurrentTransactions:
			return fmt.Errorf("%s", protocol.ErrorCode(resp.ErrorCode))
		}
		return nil
	})
	return resp
}

// addPartition sends AddPartitionsToTxn (v0-v3) for one partition and
// returns its error code.
func (w *wireConn) addPartition(version int16, id string, pid int64, epoch int16, topic string, partition int32) protocol.ErrorCode {
	w.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(version)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	resp := w.mustRoundTrip(req).(*kmsg.AddPartitionsToTxnResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		w.t.Fatalf("add partitions response: %+v", resp)
	}
	return protocol.ErrorCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// describeTxn describes one transactional id.
func (w *wireConn) describeTxn(id string) kmsg.DescribeTransactionsResponseTransactionState {
	w.t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := w.mustRoundTrip(req).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 || resp.TransactionStates[0].TransactionalID != id {
		w.t.Fatalf("describe transactions for %q: %+v", id, resp)
	}
	return resp.TransactionStates[0]
}

// TestTxnFindCoordinator: FindCoordinator for transactional ids creates
// __transaction_state as configured and names this broker, in the single
// key form and the batched one (v4+).
func TestTxnFindCoordinator(t *testing.T) {
	t.Parallel()
	b := startBroker(t, smallTxnTopic)
	w := dialWire(t, b)
	resp := w.findTxnCoordinator("tx-a")
	if resp.ErrorCode != 0 || resp.NodeID != b.cfg.NodeID {
		t.Fatalf("FindCoordinator v3: error %s, node %d; want this broker (%d)", protocol.ErrorCode(resp.ErrorCode), resp.NodeID, b.cfg.NodeID)
	}
	tp := b.cluster.Snapshot().Topics[txnTopic]
	if tp == nil || len(tp.Partitions) != 3 {
		t.Fatalf("__transaction_state: %+v, want 3 partitions", tp)
	}
	for k, want := range map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "2", "segment.bytes": fmt.Sprint(100 << 20)} {
		if got := tp.Configs[k]; got != want {
			t.Errorf("__transaction_state %s = %q, want %q", k, got, want)
		}
	}

	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(4)
	req.CoordinatorType = coordinatorTransaction
	req.CoordinatorKeys = []string{"tx-a", "tx-b", "tx-c"}
	r4 := w.mustRoundTrip(req).(*kmsg.FindCoordinatorResponse)
	if len(r4.Coordinators) != 3 {
		t.Fatalf("FindCoordinator v4: %d coordinators, want 3", len(r4.Coordinators))
	}
	for i, c := range r4.Coordinators {
		if c.Key != req.CoordinatorKeys[i] || c.ErrorCode != 0 || c.NodeID != b.cfg.NodeID {
			t.Errorf("FindCoordinator v4 coordinator %d: key %q error %s node %d", i, c.Key, protocol.ErrorCode(c.ErrorCode), c.NodeID)
		}
	}

	req.CoordinatorType = 2 // share groups: not served
	r4 = w.mustRoundTrip(req).(*kmsg.FindCoordinatorResponse)
	if len(r4.Coordinators) != 3 || r4.Coordinators[0].ErrorCode != int16(protocol.InvalidRequest) {
		t.Errorf("FindCoordinator for key type 2: %+v, want INVALID_REQUEST", r4.Coordinators)
	}
}

// TestTxnInitProducerIDFencing: a second InitProducerId for a
// transactional id bumps the epoch, and the first producer's
// AddPartitionsToTxn is refused: PRODUCER_FENCED from v2, which knows it,
// INVALID_PRODUCER_EPOCH for older versions. Timeouts out of range are
// refused before the coordinator is asked.
func TestTxnInitProducerIDFencing(t *testing.T) {
	t.Parallel()
	b := startBroker(t, smallTxnTopic)
	w := dialWire(t, b)
	w.createTopic("fence", 2, nil)
	w.findTxnCoordinator("fence-id")

	pid, epoch := w.initTxn("fence-id", 4)
	pid2, epoch2 := w.initTxn("fence-id", 4)
	if pid2 != pid || epoch2 != epoch+1 {
		t.Fatalf("second InitProducerId: producer %d epoch %d, want %d epoch %d", pid2, epoch2, pid, epoch+1)
	}
	if code := w.addPartition(3, "fence-id", pid2, epoch2, "fence", 0); code != protocol.None {
		t.Fatalf("AddPartitionsToTxn at the current epoch: %s", code)
	}
	for _, tc := range []struct {
		version int16
		want    protocol.ErrorCode
	}{{0, protocol.InvalidProducerEpoch}, {1, protocol.InvalidProducerEpoch}, {2, protocol.ProducerFenced}, {3, protocol.ProducerFenced}} {
		if code := w.addPartition(tc.version, "fence-id", pid, epoch, "fence", 1); code != tc.want {
			t.Errorf("AddPartitionsToTxn v%d at the old epoch: %s, want %s", tc.version, code, tc.want)
		}
	}
	st := w.describeTxn("fence-id")
	if st.ErrorCode != 0 || st.State != "Ongoing" || st.ProducerEpoch != epoch2 || len(st.Topics) != 1 || len(st.Topics[0].Partitions) != 1 {
		t.Errorf("describe: %+v, want Ongoing at epoch %d with fence-0 only", st, epoch2)
	}

	for _, ms := range []int32{0, -1, int32(b.cfg.Transactions.MaxTimeout.Milliseconds()) + 1} {
		resp := w.initTxnResp("fence-id", 4, ms, -1, -1)
		if resp.ErrorCode != int16(protocol.InvalidTransactionTimeout) {
			t.Errorf("InitProducerId with timeout %d ms: %s, want INVALID_TRANSACTION_TIMEOUT", ms, protocol.ErrorCode(resp.ErrorCode))
		}
	}
	resp := w.initTxnResp("", 4, 60000, -1, -1)
	if resp.ErrorCode != int16(protocol.InvalidRequest) {
		t.Errorf("InitProducerId with an empty transactional id: %s, want INVALID_REQUEST", protocol.ErrorCode(resp.ErrorCode))
	}
}

// TestTxnNotCoordinator: before __transaction_state exists, requests for
// a transactional id get NOT_COORDINATOR; ListTransactions lists nothing.
func TestTxnNotCoordinator(t *testing.T) {
	t.Parallel()
	b := startBroker(t, smallTxnTopic)
	w := dialWire(t, b)
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	id := "nobody"
	req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = &id, 1000, -1, -1
	if resp := w.mustRoundTrip(req).(*kmsg.InitProducerIDResponse); resp.ErrorCode != int16(protocol.NotCoordinator) {
		t.Errorf("InitProducerId before the topic exists: %s, want NOT_COORDINATOR", protocol.ErrorCode(resp.ErrorCode))
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(3)
	end.TransactionalID = id
	if resp := w.mustRoundTrip(end).(*kmsg.EndTxnResponse); resp.ErrorCode != int16(protocol.NotCoordinator) {
		t.Errorf("EndTxn before the topic exists: %s, want NOT_COORDINATOR", protocol.ErrorCode(resp.ErrorCode))
	}
	list := kmsg.NewPtrListTransactionsRequest()
	list.SetVersion(1)
	list.StateFilters = []string{"Ongoing", "Bogus"}
	lr := w.mustRoundTrip(list).(*kmsg.ListTransactionsResponse)
	if lr.ErrorCode != 0 || len(lr.TransactionStates) != 0 || len(lr.UnknownStateFilters) != 1 || lr.UnknownStateFilters[0] != "Bogus" {
		t.Errorf("ListTransactions: %+v, want nothing listed and Bogus unknown", lr)
	}
}

// TestTxnStateSurvivesRestart: a transaction's state is loaded again from
// __transaction_state when the broker restarts: the open transaction is
// still there with its partitions, and the next InitProducerId bumps the
// epoch past it (aborting it).
func TestTxnStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	rb := startGrpRestartable(t, false)
	rb.cfg.TransactionStateLogNumPartitions = 3
	rb.restart(t)
	w := dialWire(t, rb.b)
	w.createTopic("durable", 1, nil)
	w.findTxnCoordinator("keep")
	pid, epoch := w.initTxn("keep", 4)
	if code := w.addPartition(3, "keep", pid, epoch, "durable", 0); code != protocol.None {
		t.Fatalf("AddPartitionsToTxn: %s", code)
	}
	rb.restart(t)
	w = dialWire(t, rb.b)
	var st kmsg.DescribeTransactionsResponseTransactionState
	waitFor(t, 20*time.Second, "the coordinator loaded after the restart", func() error {
		st = w.describeTxn("keep")
		if st.ErrorCode != 0 {
			return fmt.Errorf("describe: %s", protocol.ErrorCode(st.ErrorCode))
		}
		return nil
	})
	if st.State != "Ongoing" || st.ProducerID != pid || st.ProducerEpoch != epoch || len(st.Topics) != 1 || st.Topics[0].Topic != "durable" {
		t.Fatalf("after the restart: %+v, want Ongoing, producer %d epoch %d, durable-0", st, pid, epoch)
	}
	pid2, epoch2 := w.initTxn("keep", 4)
	// The open transaction is aborted with a bumped epoch, then the
	// producer gets the next one.
	if pid2 != pid || epoch2 <= epoch {
		t.Fatalf("InitProducerId after the restart: producer %d epoch %d, want %d above epoch %d", pid2, epoch2, pid, epoch)
	}
	waitFor(t, 20*time.Second, "the aborted transaction completed (its marker written)", func() error {
		if st := w.describeTxn("keep"); st.State != "CompleteAbort" && st.State != "Empty" {
			return fmt.Errorf("state %s", st.State)
		}
		return nil
	})
}

// TestTxnCoordinatorFailover: on three brokers, when the leader of the
// transactional id's __transaction_state partition stops, another broker
// becomes its coordinator with the state the first one replicated; it then
// commits a transaction over partitions of both remaining brokers, its
// markers sent to itself and to the other broker.
func TestTxnCoordinatorFailover(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 3, func(c *Config) {
		c.TransactionStateLogNumPartitions = 3
		c.OffsetsTopicNumPartitions = 1
		c.ReplicaLagTimeMax = 10 * time.Second
	})
	w := dialWire(t, bs[0])
	// The first broker runs the cluster's embedded etcd, so it stays up:
	// take an id another broker coordinates.
	id := ""
	var resp *kmsg.FindCoordinatorResponse
	for i := 0; resp == nil || resp.NodeID == bs[0].cfg.NodeID; i++ {
		if i == 100 {
			t.Fatalf("every id is coordinated by node %d", bs[0].cfg.NodeID)
		}
		id = fmt.Sprint("moving-", i)
		if resp = w.findTxnCoordinator(id); resp.ErrorCode != 0 {
			t.Fatalf("FindCoordinator: %s", protocol.ErrorCode(resp.ErrorCode))
		}
	}
	var first *Broker
	for _, b := range bs {
		if b.cfg.NodeID == resp.NodeID {
			first = b
		}
	}
	waitFor(t, 30*time.Second, "__transaction_state fully in sync", func() error {
		tp := first.cluster.Snapshot().Topics[txnTopic]
		if tp == nil {
			return fmt.Errorf("node %d does not see the topic yet", first.cfg.NodeID)
		}
		if st := tp.Partitions[first.txnPartition(id)]; len(st.ISR) != 3 {
			return fmt.Errorf("ISR %v", st.ISR)
		}
		return nil
	})
	wc := dialWire(t, first)
	pid, epoch := wc.initTxn(id, 4)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	var other *Broker
	for _, b := range bs {
		if b != first {
			other = b
			break
		}
	}
	wo := dialWire(t, other)
	var next *Broker
	waitFor(t, 30*time.Second, "a new coordinator", func() error {
		r := wo.findTxnCoordinator(id)
		if r.ErrorCode != 0 {
			return fmt.Errorf("FindCoordinator: %s", protocol.ErrorCode(r.ErrorCode))
		}
		if r.NodeID == first.cfg.NodeID {
			return fmt.Errorf("still node %d", r.NodeID)
		}
		for _, b := range bs {
			if b.cfg.NodeID == r.NodeID {
				next = b
			}
		}
		return nil
	})
	wn := dialWire(t, next)
	pid2, epoch2 := wn.initTxn(id, 4)
	if pid2 != pid || epoch2 != epoch+1 {
		t.Fatalf("InitProducerId at the new coordinator: producer %d epoch %d, want %d epoch %d", pid2, epoch2, pid, epoch+1)
	}

	// A transaction over partitions led by both remaining brokers: the
	// new coordinator writes one marker to itself and one to the other
	// broker, each through the network.
	var live []*Broker
	for _, b := range bs {
		if b != first {
			live = append(live, b)
		}
	}
	if r := wn.createTopicResultAssigned("spread", [][]int32{{live[0].cfg.NodeID}, {live[1].cfg.NodeID}}, nil); r.ErrorCode != 0 {
		t.Fatalf("create spread: %s", protocol.ErrorCode(r.ErrorCode))
	}
	for p := int32(0); p < 2; p++ {
		var code protocol.ErrorCode
		waitFor(t, 10*time.Second, "AddPartitionsToTxn", func() error {
			if code = wn.addPartition(3, id, pid2, epoch2, "spread", p); code == protocol.ConcurrentTransactions {
				return fmt.Errorf("%s", code)
			}
			return nil
		})
		if code != protocol.None {
			t.Fatalf("AddPartitionsToTxn spread-%d: %s", p, code)
		}
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(3)
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid2, epoch2, true
	if er := wn.mustRoundTrip(end).(*kmsg.EndTxnResponse); er.ErrorCode != 0 {
		t.Fatalf("EndTxn: %s", protocol.ErrorCode(er.ErrorCode))
	}
	waitFor(t, 20*time.Second, "both markers written and the commit complete", func() error {
		if st := wn.describeTxn(id); st.State != "CompleteCommit" {
			return fmt.Errorf("state %s", st.State)
		}
		return nil
	})
	for p, b := range live {
		part, code := b.lookupPartition("spread", [16]byte{}, false, int32(p))
		if code != protocol.None {
			t.Fatalf("spread-%d at node %d: %s", p, b.cfg.NodeID, code)
		}
		if lso, leo := part.log().LastStableOffset(), part.log().LogEndOffset(); leo != 1 || lso != 1 {
			t.Errorf("spread-%d at node %d: last stable offset %d, log end %d; want its commit marker at 0", p, b.cfg.NodeID, lso, leo)
		}
	}
}

// TestMarkerRequest: markers are grouped into one request entry per
// producer, epoch, outcome and coordinator epoch, their partitions by
// topic.
func TestMarkerRequest(t *testing.T) {
	t.Parallel()
	ms := markerRequest([]txn.Marker{
		mk(1, 0, true, 5, "a", 0), mk(1, 0, true, 5, "a", 1), mk(1, 0, true, 5, "b", 0),
		mk(2, 3, false, 5, "a", 0), mk(1, 0, true, 6, "a", 2),
	})
	if ms.GetVersion() != 1 || len(ms.Markers) != 3 {
		t.Fatalf("request v%d with %d markers, want v1 with 3", ms.GetVersion(), len(ms.Markers))
	}
	m := ms.Markers[0]
	if m.ProducerID != 1 || !m.Committed || m.CoordinatorEpoch != 5 || len(m.Topics) != 2 ||
		m.Topics[0].Topic != "a" || fmt.Sprint(m.Topics[0].Partitions) != "[0 1]" || m.Topics[1].Topic != "b" {
		t.Errorf("first marker: %+v", m)
	}
	if m := ms.Markers[1]; m.ProducerID != 2 || m.ProducerEpoch != 3 || m.Committed {
		t.Errorf("second marker: %+v", m)
	}
	if m := ms.Markers[2]; m.ProducerID != 1 || m.CoordinatorEpoch != 6 || fmt.Sprint(m.Topics[0].Partitions) != "[2]" {
		t.Errorf("third marker: %+v", m)
	}
}

// TestMarkerOutcome: what the sender does with each answer, as the
// coordinator's driver contract says.
func TestMarkerOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code   protocol.ErrorCode
		exists bool
		want   markerOutcome
	}{
		{protocol.None, true, markerWritten},
		{protocol.NotLeaderOrFollower, true, markerRetry},
		{protocol.NotEnoughReplicas, true, markerRetry},
		{protocol.NotEnoughReplicasAfterAppend, true, markerRetry},
		{protocol.RequestTimedOut, true, markerRetry},
		{protocol.KafkaStorageError, true, markerRetry},
		{protocol.UnknownTopicOrPartition, true, markerRetry},
		{protocol.UnknownTopicOrPartition, false, markerWritten},
		{protocol.InvalidProducerEpoch, true, markerDrop},
		{protocol.TransactionCoordinatorFenced, true, markerDrop},
		{protocol.UnsupportedForMessageFormat, true, markerWritten},
		{protocol.UnsupportedVersion, true, markerWritten},
	} {
		if got := outcomeFor(tc.code, tc.exists); got != tc.want {
			t.Errorf("outcome of %s (topic exists %v): %d, want %d", tc.code, tc.exists, got, tc.want)
		}
	}
}

func mk(pid int64, epoch int16, commit bool, coordinatorEpoch int32, topic string, partition int32) txn.Marker {
	return txn.Marker{TransactionalID: "t", Topic: topic, Partition: partition, ProducerID: pid, ProducerEpoch: epoch,
		Commit: commit, CoordinatorEpoch: coordinatorEpoch}
}

// TestTxnKgoCommitAbort: franz-go's transactional producer commits,
// aborts and commits again through this broker's coordinator; a
// read_committed consumer reads the committed records only, and the
// transaction metrics count the two commits and the abort.
func TestTxnKgoCommitAbort(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := startBroker(t, smallTxnTopic, func(c *Config) { c.Registerer = reg })
	ctx := testContext(t, time.Minute)
	w := dialWire(t, b)
	w.createTopic("txn-e2e", 2, nil)
	prod := newClient(t, b, kgo.TransactionalID("e2e"), kgo.DefaultProduceTopic("txn-e2e"),
		kgo.TransactionTimeout(30*time.Second))
	for round, commit := range []bool{true, false, true} {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatalf("begin transaction %d: %v", round, err)
		}
		for i := range 10 {
			r := &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("round-%d-%d", round, i))}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce in transaction %d: %v", round, err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction %d (commit %v): %v", round, commit, err)
		}
	}
	cons := newClient(t, b, kgo.ConsumeTopics("txn-e2e"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := map[string]bool{}
	for len(got) < 20 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll after %d records: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if got[string(r.Value)] {
				t.Errorf("record %s read twice", r.Value)
			}
			got[string(r.Value)] = true
		})
	}
	for v := range got {
		if len(v) < 7 || v[:7] == "round-1" {
			t.Errorf("read %q, a record of the aborted transaction", v)
		}
	}
	// Everything up to the end of the log is read: no aborted record
	// comes after the committed ones.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	cons.PollFetches(short).EachRecord(func(r *kgo.Record) {
		t.Errorf("read %q beyond the committed records", r.Value)
	})
	// The admin client finds the transaction through ListTransactions
	// and DescribeTransactions.
	adm := kadm.NewClient(newClient(t, b))
	waitFor(t, 10*time.Second, "kadm lists and describes the committed transaction", func() error {
		listed, err := adm.ListTransactions(ctx, nil, []string{"CompleteCommit"})
		if err != nil || len(listed) != 1 || listed["e2e"].State != "CompleteCommit" {
			return fmt.Errorf("ListTransactions of CompleteCommit ones: %v (%w), want e2e", listed, err)
		}
		described, err := adm.DescribeTransactions(ctx, "e2e")
		if d, ok := described["e2e"]; err != nil || !ok || d.Err != nil || d.State != "CompleteCommit" || d.Coordinator != b.cfg.NodeID {
			return fmt.Errorf("DescribeTransactions: %+v (%w), want e2e CompleteCommit at node %d", described, err, b.cfg.NodeID)
		}
		return nil
	})
	waitFor(t, 10*time.Second, "the transaction metrics", func() error {
		c, a, o := gathered(t, reg, "gregor_txn_commits_total"), gathered(t, reg, "gregor_txn_aborts_total"), gathered(t, reg, "gregor_txn_ongoing")
		if c != 2 || a != 1 || o != 0 {
			return fmt.Errorf("commits %v aborts %v ongoing %v, want 2, 1, 0", c, a, o)
		}
		return nil
	})
}

// gathered is the sum of a metric's samples in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// TestTxnTimeoutAndAdminAPIs: a transaction left open past its timeout is
// aborted by the coordinator (and counted); ListTransactions and
// DescribeTransactions show the states; AddPartitionsToTxn v4 (the
// brokers' batched form) verifies partitions of transactions on different
// coordinators in one request.
func TestTxnTimeoutAndAdminAPIs(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := startBroker(t, smallTxnTopic, func(c *Config) {
		c.Registerer = reg
		c.Transactions.AbortTimedOutInterval = 20 * time.Millisecond
	})
	w := dialWire(t, b)
	w.createTopic("adm", 1, nil)
	w.findTxnCoordinator("x")
	// Ids on different partitions of __transaction_state.
	ids := []string{}
	seen := map[int32]bool{}
	for i := 0; len(ids) < 2; i++ {
		id := fmt.Sprint("adm-", i)
		if p := b.txnPartition(id); !seen[p] {
			seen[p] = true
			ids = append(ids, id)
		}
	}
	type producer struct {
		pid   int64
		epoch int16
	}
	ps := map[string]producer{}
	for _, id := range ids {
		pid, epoch := w.initTxn(id, 4)
		ps[id] = producer{pid, epoch}
		if code := w.addPartition(3, id, pid, epoch, "adm", 0); code != protocol.None {
			t.Fatalf("AddPartitionsToTxn for %s: %s", id, code)
		}
	}

	verify := kmsg.NewPtrAddPartitionsToTxnRequest()
	verify.SetVersion(4)
	for _, id := range append([]string{"adm-unknown"}, ids...) {
		tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = id, ps[id].pid, ps[id].epoch, true
		rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		rt.Topic, rt.Partitions = "adm", []int32{0}
		tr.Topics = append(tr.Topics, rt)
		verify.Transactions = append(verify.Transactions, tr)
	}
	vr := w.mustRoundTrip(verify).(*kmsg.AddPartitionsToTxnResponse)
	if vr.ErrorCode != 0 || len(vr.Transactions) != 3 {
		t.Fatalf("verify-only AddPartitionsToTxn v4: error %s, %d transactions, want 3", protocol.ErrorCode(vr.ErrorCode), len(vr.Transactions))
	}
	for i, tr := range vr.Transactions {
		want := protocol.None
		if i == 0 {
			// No transaction of that id has the partition: Kafka answers
			// INVALID_PRODUCER_ID_MAPPING.
			want = protocol.InvalidProducerIDMapping
		}
		if tr.TransactionalID != verify.Transactions[i].TransactionalID || len(tr.Topics) != 1 || len(tr.Topics[0].Partitions) != 1 ||
			protocol.ErrorCode(tr.Topics[0].Partitions[0].ErrorCode) != want {
			t.Errorf("verify-only answer %d: %+v, want %s for %s", i, tr, want, verify.Transactions[i].TransactionalID)
		}
	}

	list := kmsg.NewPtrListTransactionsRequest()
	list.SetVersion(2)
	list.StateFilters = []string{"Ongoing"}
	lr := w.mustRoundTrip(list).(*kmsg.ListTransactionsResponse)
	if lr.ErrorCode != 0 || len(lr.TransactionStates) != 2 {
		t.Fatalf("ListTransactions of Ongoing ones: error %s, %+v, want both ids", protocol.ErrorCode(lr.ErrorCode), lr.TransactionStates)
	}
	pattern := "["
	list.TransactionalIDPattern = &pattern
	if lr := w.mustRoundTrip(list).(*kmsg.ListTransactionsResponse); lr.ErrorCode != int16(protocol.InvalidRegularExpression) {
		t.Errorf("ListTransactions with pattern %q: %s, want INVALID_REGULAR_EXPRESSION", pattern, protocol.ErrorCode(lr.ErrorCode))
	}

	// The one with the short timeout is aborted by the coordinator.
	short := "adm-short"
	resp := w.initTxnResp(short, 4, 50, -1, -1)
	if resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %s", protocol.ErrorCode(resp.ErrorCode))
	}
	if code := w.addPartition(3, short, resp.ProducerID, resp.ProducerEpoch, "adm", 0); code != protocol.None {
		t.Fatalf("AddPartitionsToTxn: %s", code)
	}
	waitFor(t, 10*time.Second, "the timed-out transaction aborted", func() error {
		st := w.describeTxn(short)
		if st.State != "CompleteAbort" || st.ProducerEpoch != resp.ProducerEpoch+1 {
			return fmt.Errorf("state %s epoch %d", st.State, st.ProducerEpoch)
		}
		if n := gathered(t, reg, "gregor_txn_timeout_aborts_total"); n != 1 {
			return fmt.Errorf("%v timeout aborts counted", n)
		}
		return nil
	})
}

// TestTxnOffsetsAndEndTxnV5: AddOffsetsToTxn puts the group's
// __consumer_offsets partition in the transaction, and EndTxn commits it:
// the markers, the group's partition's among them, are written and the
// transaction completes. EndTxn v5 (KIP-890 part 2) answers with the
// bumped epoch, and the old epoch is refused afterwards.
func TestTxnOffsetsAndEndTxnV5(t *testing.T) {
	t.Parallel()
	b := startBroker(t, smallTxnTopic)
	ctx := testContext(t, 30*time.Second)
	if err := b.ensureOffsetsTopic(ctx); err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, b)
	w.createTopic("offs", 1, nil)
	w.findTxnCoordinator("offs-id")
	pid, epoch := w.initTxn("offs-id", 4)
	if code := w.addPartition(3, "offs-id", pid, epoch, "offs", 0); code != protocol.None {
		t.Fatalf("AddPartitionsToTxn: %s", code)
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.SetVersion(3)
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "offs-id", pid, epoch, "offs-group"
	if r := w.mustRoundTrip(ao).(*kmsg.AddOffsetsToTxnResponse); r.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %s", protocol.ErrorCode(r.ErrorCode))
	}
	st := w.describeTxn("offs-id")
	if len(st.Topics) != 2 {
		t.Fatalf("transaction partitions: %+v, want offs and the group's %s partition", st.Topics, offsetsTopic)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(5)
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "offs-id", pid, epoch, true
	er := w.mustRoundTrip(end).(*kmsg.EndTxnResponse)
	if er.ErrorCode != 0 || er.ProducerID != pid || er.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5: error %s producer %d epoch %d, want producer %d epoch %d",
			protocol.ErrorCode(er.ErrorCode), er.ProducerID, er.ProducerEpoch, pid, epoch+1)
	}
	waitFor(t, 10*time.Second, "the commit completed", func() error {
		if st := w.describeTxn("offs-id"); st.State != "CompleteCommit" {
			return fmt.Errorf("state %s", st.State)
		}
		return nil
	})
	gp, code := b.lookupPartition(offsetsTopic, [16]byte{}, false, b.groupPartition("offs-group"))
	if code != protocol.None {
		t.Fatalf("the group's partition: %s", code)
	}
	if lso, leo := gp.log().LastStableOffset(), gp.log().LogEndOffset(); leo == 0 || lso != leo {
		t.Errorf("the group's %s partition: last stable offset %d, log end %d; want its commit marker written", offsetsTopic, lso, leo)
	}
	if code := w.addPartition(3, "offs-id", pid, epoch, "offs", 0); code != protocol.ProducerFenced {
		t.Errorf("AddPartitionsToTxn at the epoch before the end: %s, want PRODUCER_FENCED", code)
	}
}

// TestTxnMarkerForDeletedTopic: a transaction whose topic is deleted
// before its end still completes: the marker of a partition that no
// longer exists counts as written, as in Kafka.
func TestTxnMarkerForDeletedTopic(t *testing.T) {
	t.Parallel()
	b := startBroker(t, smallTxnTopic)
	ctx := testContext(t, 30*time.Second)
	w := dialWire(t, b)
	w.createTopic("doomed", 1, nil)
	w.createTopic("kept", 1, nil)
	w.findTxnCoordinator("del-id")
	pid, epoch := w.initTxn("del-id", 4)
	for _, topic := range []string{"doomed", "kept"} {
		if code := w.addPartition(3, "del-id", pid, epoch, topic, 0); code != protocol.None {
			t.Fatalf("AddPartitionsToTxn %s: %s", topic, code)
		}
	}
	if _, err := kadm.NewClient(newClient(t, b)).DeleteTopics(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the topic deleted", func() error {
		if b.cluster.Snapshot().Topics["doomed"] != nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(3)
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "del-id", pid, epoch, true
	if er := w.mustRoundTrip(end).(*kmsg.EndTxnResponse); er.ErrorCode != 0 {
		t.Fatalf("EndTxn: %s", protocol.ErrorCode(er.ErrorCode))
	}
	waitFor(t, 10*time.Second, "the commit completed", func() error {
		if st := w.describeTxn("del-id"); st.State != "CompleteCommit" {
			return fmt.Errorf("state %s", st.State)
		}
		return nil
	})
	if lso := w.latestOffset("kept", 1); lso != 1 {
		t.Errorf("kept's read_committed latest offset %d, want 1 (its commit marker)", lso)
	}
}

// TestTxnCorruptPartition: a __transaction_state partition that does not
// load (a record that does not decode) answers its ids with
// COORDINATOR_LOAD_IN_PROGRESS, never hangs them, and the other
// partitions serve as usual.
func TestTxnCorruptPartition(t *testing.T) {
	t.Parallel()
	rb := startGrpRestartable(t, false)
	rb.cfg.TransactionStateLogNumPartitions = 3
	rb.restart(t)
	w := dialWire(t, rb.b)
	w.findTxnCoordinator("bad")
	bad := rb.b.txnPartition("bad")
	good := "good-0"
	for i := 1; rb.b.txnPartition(good) == bad; i++ {
		good = fmt.Sprint("good-", i)
	}
	w.initTxn("bad", 4)
	p, code := rb.b.lookupPartition(txnTopic, [16]byte{}, false, bad)
	if code != protocol.None {
		t.Fatalf("partition %d: %s", bad, code)
	}
	key := kmsg.TxnMetadataKey{TransactionalID: "bad"}
	rec := coordinatorRecord{key: key.AppendTo(nil), value: []byte{0, 1, 2}}
	if code, err := rb.b.appendCoordinatorBatches(txnTopic, bad, p.log(), [][]coordinatorRecord{{rec}}); code != protocol.None {
		t.Fatalf("append a corrupt record: %s %v", code, err)
	}
	rb.restart(t)
	w = dialWire(t, rb.b)
	w.initTxn(good, 4)
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	id := "bad"
	req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = &id, 1000, -1, -1
	resp, err := w.roundTripWithin(req, 5*time.Second)
	if err != nil {
		t.Fatalf("InitProducerId for an id of the partition that does not load: %v", err)
	}
	if code := resp.(*kmsg.InitProducerIDResponse).ErrorCode; code != int16(protocol.CoordinatorLoadInProgress) {
		t.Errorf("InitProducerId for an id of the partition that does not load: %s, want COORDINATOR_LOAD_IN_PROGRESS", protocol.ErrorCode(code))
	}
}

// TestTxnConfigsDescribed: DescribeConfigs reports the transaction
// settings the broker runs with.
func TestTxnConfigsDescribed(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) {
		c.Transactions.MaxTimeout = time.Minute
		c.TransactionStateLogMinISR = 1
	})
	ctx := configsTestCtx(t)
	node := cfgDescribe(ctx, t, b, newClient(t, b), kmsg.ConfigResourceTypeBroker, fmt.Sprint(b.cfg.NodeID), nil, true, false)
	static, dflt := kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigSourceDefaultConfig
	cfgCheckEntry(t, cfgEntry(t, node, "transaction.max.timeout.ms"), "60000", static)
	cfgCheckEntry(t, cfgEntry(t, node, "transaction.state.log.min.isr"), "1", static)
	cfgCheckEntry(t, cfgEntry(t, node, "transaction.state.log.num.partitions"), "50", dflt)
}

// TestTxnConcurrentEnds: many transactions on several coordinators end at
// once, commits and aborts mixed; the markers to the one leader are sent
// by the combining sender, and every transaction completes as it ended.
func TestTxnConcurrentEnds(t *testing.T) {
	t.Parallel()
	b := startBroker(t, smallTxnTopic)
	w := dialWire(t, b)
	w.createTopic("many", 4, nil)
	w.findTxnCoordinator("x")
	const n = 24
	type producer struct {
		id    string
		pid   int64
		epoch int16
	}
	ps := make([]producer, n)
	for i := range ps {
		id := fmt.Sprint("many-", i)
		pid, epoch := w.initTxn(id, 4)
		ps[i] = producer{id, pid, epoch}
		for p := int32(0); p < 4; p++ {
			if code := w.addPartition(3, id, pid, epoch, "many", p); code != protocol.None {
				t.Fatalf("AddPartitionsToTxn %s: %s", id, code)
			}
		}
	}
	errs := make(chan error, n)
	for i, p := range ps {
		wc := dialWire(t, b)
		go func() {
			end := kmsg.NewPtrEndTxnRequest()
			end.SetVersion(3)
			end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = p.id, p.pid, p.epoch, i%2 == 0
			resp, err := wc.roundTripWithin(end, 20*time.Second)
			if err == nil && resp.(*kmsg.EndTxnResponse).ErrorCode != 0 {
				err = fmt.Errorf("EndTxn %s: %s", p.id, protocol.ErrorCode(resp.(*kmsg.EndTxnResponse).ErrorCode))
			}
			errs <- err
		}()
	}
	for range ps {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "every transaction complete", func() error {
		for i, p := range ps {
			want := "CompleteAbort"
			if i%2 == 0 {
				want = "CompleteCommit"
			}
			if st := w.describeTxn(p.id); st.State != want {
				return fmt.Errorf("%s: %s, want %s", p.id, st.State, want)
			}
		}
		return nil
	})
}
