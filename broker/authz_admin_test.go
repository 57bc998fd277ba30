package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

// TestAuthzTxnAPIs walks one transaction through the transaction APIs with
// the authorizer on: at each step a principal without the ACL Kafka asks
// for is refused with Kafka's error at Kafka's level and gets no data,
// and the transaction's owner, once granted, goes on. The broker's own
// connections (transaction verification, markers) are granted
// CLUSTER_ACTION, as a Kafka cluster's inter-broker principal must be.
func TestAuthzTxnAPIs(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t, smallTxnTopic)
	admin := dialWireAs(t, b, "admin")
	admin.createACLs(allow(acl.ResourceCluster, acl.ClusterName,
		fmt.Sprintf("User:gregor-broker-%d-txn-markers", b.cfg.NodeID), acl.OpClusterAction))
	for _, name := range []string{"t-ok", "t-no", "t-mark"} {
		admin.createTopic(name, 1, nil)
	}
	if fc := admin.findTxnCoordinator("tx-a"); fc.ErrorCode != 0 {
		t.Fatalf("find coordinator: %s", protocol.ErrorCode(fc.ErrorCode))
	}
	findGroupCoordinator(t, admin, "g-a")
	alice, bob, carol := dialWireAs(t, b, "alice"), dialWireAs(t, b, "bob"), dialWireAs(t, b, "carol")
	erin, frank := dialWireAs(t, b, "erin"), dialWireAs(t, b, "frank")
	const id, groupID = "tx-a", "g-a"

	// InitProducerId with a transactional id: WRITE on it.
	init := kmsg.NewPtrInitProducerIDRequest()
	init.SetVersion(4)
	txnID := id
	init.TransactionalID, init.TransactionTimeoutMillis = &txnID, 60000
	init.ProducerID, init.ProducerEpoch = -1, -1
	got := alice.mustRoundTrip(init).(*kmsg.InitProducerIDResponse)
	checkCode(t, "InitProducerId tx-a without WRITE", got.ErrorCode, protocol.TransactionalIDAuthorizationFailed)
	if got.ProducerID != -1 || got.ProducerEpoch != -1 {
		t.Errorf("refused InitProducerId handed out producer %d epoch %d", got.ProducerID, got.ProducerEpoch)
	}
	admin.createACLs(allow(acl.ResourceTransactionalID, id, "User:alice", acl.OpWrite))
	pid, epoch := alice.initTxn(id, 4)

	// An idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on
	// some topic.
	idem := kmsg.NewPtrInitProducerIDRequest()
	idem.SetVersion(4)
	idem.TransactionTimeoutMillis, idem.ProducerID, idem.ProducerEpoch = 60000, -1, -1
	got = bob.mustRoundTrip(idem).(*kmsg.InitProducerIDResponse)
	checkCode(t, "idempotent InitProducerId without ACLs", got.ErrorCode, protocol.ClusterAuthorizationFailed)
	if got.ProducerID != -1 {
		t.Errorf("refused idempotent InitProducerId handed out producer %d", got.ProducerID)
	}
	admin.createACLs(allow(acl.ResourceTopic, "t-no", "User:bob", acl.OpWrite),
		allow(acl.ResourceCluster, acl.ClusterName, "User:carol", acl.OpIdempotentWrite))
	for _, w := range []*wireConn{bob, carol} {
		if got := w.mustRoundTrip(idem).(*kmsg.InitProducerIDResponse); got.ErrorCode != 0 || got.ProducerID < 0 {
			t.Errorf("idempotent InitProducerId with WRITE on a topic or IDEMPOTENT_WRITE: %s, producer %d",
				protocol.ErrorCode(got.ErrorCode), got.ProducerID)
		}
	}

	// AddPartitionsToTxn from a producer: WRITE on the id, then on each
	// topic; one denied topic and nothing is added.
	addReq := func(topics ...string) *kmsg.AddPartitionsToTxnRequest {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.SetVersion(3)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
		for _, topic := range topics {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{0}
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	codesOf := func(resp *kmsg.AddPartitionsToTxnResponse) map[string]protocol.ErrorCode {
		out := map[string]protocol.ErrorCode{}
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				out[rt.Topic] = protocol.ErrorCode(p.ErrorCode)
			}
		}
		return out
	}
	admin.createACLs(allow(acl.ResourceTopic, "t-ok", "User:alice", acl.OpWrite),
		allow(acl.ResourceTopic, "t-gone", "User:alice", acl.OpWrite))
	mixed := addReq("t-ok", "t-no", "t-gone", offsetsTopic)
	want := map[string]protocol.ErrorCode{"t-ok": protocol.OperationNotAttempted, "t-no": protocol.TopicAuthorizationFailed,
		"t-gone": protocol.UnknownTopicOrPartition, offsetsTopic: protocol.TopicAuthorizationFailed}
	if got := codesOf(alice.mustRoundTrip(mixed).(*kmsg.AddPartitionsToTxnResponse)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("AddPartitionsToTxn with a denied topic: %v, want %v", got, want)
	}
	for topic, code := range codesOf(bob.mustRoundTrip(addReq("t-ok", "t-no")).(*kmsg.AddPartitionsToTxnResponse)) {
		checkCode(t, "AddPartitionsToTxn by bob, "+topic, int16(code), protocol.TransactionalIDAuthorizationFailed)
	}
	if code := alice.addPartition(3, id, pid, epoch, "t-ok", 0); code != protocol.None {
		t.Fatalf("AddPartitionsToTxn t-ok: %s", code)
	}

	// The broker-to-broker form needs CLUSTER_ACTION, verify-only too.
	verify := kmsg.NewPtrAddPartitionsToTxnRequest()
	verify.SetVersion(5)
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = id, pid, epoch, true
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = "t-ok", []int32{0}
	tr.Topics = append(tr.Topics, tt)
	verify.Transactions = append(verify.Transactions, tr)
	vr := alice.mustRoundTrip(verify).(*kmsg.AddPartitionsToTxnResponse)
	checkCode(t, "AddPartitionsToTxn v5 by a producer", vr.ErrorCode, protocol.ClusterAuthorizationFailed)
	if len(vr.Transactions) != 0 {
		t.Errorf("refused verification answered %+v", vr.Transactions)
	}
	if vr := admin.mustRoundTrip(verify).(*kmsg.AddPartitionsToTxnResponse); vr.ErrorCode != 0 || len(vr.Transactions) != 1 ||
		vr.Transactions[0].Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("verification by an allowed principal: %+v", vr)
	}

	// AddOffsetsToTxn: WRITE on the id, then READ on the group.
	addOffsets := kmsg.NewPtrAddOffsetsToTxnRequest()
	addOffsets.SetVersion(3)
	addOffsets.TransactionalID, addOffsets.ProducerID, addOffsets.ProducerEpoch, addOffsets.Group = id, pid, epoch, groupID
	checkCode(t, "AddOffsetsToTxn by bob", bob.mustRoundTrip(addOffsets).(*kmsg.AddOffsetsToTxnResponse).ErrorCode,
		protocol.TransactionalIDAuthorizationFailed)
	checkCode(t, "AddOffsetsToTxn without READ on the group", alice.mustRoundTrip(addOffsets).(*kmsg.AddOffsetsToTxnResponse).ErrorCode,
		protocol.GroupAuthorizationFailed)
	admin.createACLs(allow(acl.ResourceGroup, groupID, "User:alice", acl.OpRead))
	checkCode(t, "AddOffsetsToTxn", alice.mustRoundTrip(addOffsets).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, protocol.None)

	// TxnOffsetCommit: WRITE on the id and READ on the group fail it all;
	// READ on each topic fails just that topic.
	commit := func(w *wireConn, group string) map[string]protocol.ErrorCode {
		t.Helper()
		out := map[string]protocol.ErrorCode{}
		waitFor(t, 30*time.Second, "TxnOffsetCommit past coordinator loading", func() error {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.SetVersion(3)
			req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = id, group, pid, epoch
			req.Generation = -1
			for _, topic := range []string{"t-no", "t-ok"} {
				rt := kmsg.NewTxnOffsetCommitRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset = 0, 1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
			}
			resp := w.mustRoundTrip(req).(*kmsg.TxnOffsetCommitResponse)
			clear(out)
			for _, rt := range resp.Topics {
				for _, p := range rt.Partitions {
					switch c := protocol.ErrorCode(p.ErrorCode); c {
					case protocol.CoordinatorLoadInProgress, protocol.NotCoordinator, protocol.CoordinatorNotAvailable:
						return fmt.Errorf("%s: %s", rt.Topic, c)
					}
					out[rt.Topic] = protocol.ErrorCode(p.ErrorCode)
				}
			}
			if len(resp.Topics) != 2 || resp.Topics[0].Topic != "t-no" || resp.Topics[1].Topic != "t-ok" {
				t.Errorf("TxnOffsetCommit answered topics out of the request's order: %+v", resp.Topics)
			}
			return nil
		})
		return out
	}
	for what, c := range map[string]struct {
		w     *wireConn
		group string
		want  protocol.ErrorCode
	}{
		"by bob":                       {bob, groupID, protocol.TransactionalIDAuthorizationFailed},
		"without READ on the group":    {alice, "g-other", protocol.GroupAuthorizationFailed},
		"without READ on either topic": {alice, groupID, protocol.TopicAuthorizationFailed},
	} {
		for topic, code := range commit(c.w, c.group) {
			checkCode(t, "TxnOffsetCommit "+what+", "+topic, int16(code), c.want)
		}
	}
	admin.createACLs(allow(acl.ResourceTopic, "t-ok", "User:alice", acl.OpRead))
	want = map[string]protocol.ErrorCode{"t-no": protocol.TopicAuthorizationFailed, "t-ok": protocol.None}
	if got := commit(alice, groupID); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("TxnOffsetCommit with READ on t-ok only: %v, want %v", got, want)
	}

	// DescribeTransactions: DESCRIBE on the id; the topics shown are
	// those the principal may DESCRIBE.
	st := erin.describeTxn(id)
	checkCode(t, "DescribeTransactions without DESCRIBE", st.ErrorCode, protocol.TransactionalIDAuthorizationFailed)
	if st.State != "" || st.ProducerID != 0 || len(st.Topics) != 0 {
		t.Errorf("refused DescribeTransactions told %+v", st)
	}
	admin.createACLs(allow(acl.ResourceTransactionalID, id, "User:erin", acl.OpDescribe))
	if st := erin.describeTxn(id); st.ErrorCode != 0 || st.ProducerID != pid || len(st.Topics) != 0 {
		t.Errorf("DescribeTransactions without DESCRIBE on any topic: %+v, want producer %d and no topics", st, pid)
	}
	admin.createACLs(allow(acl.ResourceTopic, "t-ok", "User:erin", acl.OpDescribe))
	if st := erin.describeTxn(id); st.ErrorCode != 0 || len(st.Topics) != 1 || st.Topics[0].Topic != "t-ok" {
		t.Errorf("DescribeTransactions with DESCRIBE on t-ok: %+v, want t-ok alone", st)
	}
	if st := admin.describeTxn(id); len(st.Topics) != 2 {
		t.Errorf("a super user sees topics %+v, want t-ok and %s", st.Topics, offsetsTopic)
	}

	// ListTransactions lists only the ids the principal may DESCRIBE.
	listed := func(w *wireConn) []string {
		req := kmsg.NewPtrListTransactionsRequest()
		resp := w.mustRoundTrip(req).(*kmsg.ListTransactionsResponse)
		checkCode(t, "ListTransactions", resp.ErrorCode, protocol.None)
		var ids []string
		for _, s := range resp.TransactionStates {
			ids = append(ids, s.TransactionalID)
		}
		return ids
	}
	if got := listed(frank); len(got) != 0 {
		t.Errorf("ListTransactions without DESCRIBE lists %v", got)
	}
	if got := listed(erin); len(got) != 1 || got[0] != id {
		t.Errorf("ListTransactions with DESCRIBE on %s lists %v", id, got)
	}

	// EndTxn: WRITE on the id.
	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(4)
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
	checkCode(t, "EndTxn by bob", bob.mustRoundTrip(end).(*kmsg.EndTxnResponse).ErrorCode, protocol.TransactionalIDAuthorizationFailed)
	checkCode(t, "EndTxn", alice.mustRoundTrip(end).(*kmsg.EndTxnResponse).ErrorCode, protocol.None)

	// WriteTxnMarkers: CLUSTER_ACTION, or ALTER, on the cluster; every
	// partition of a refused request is CLUSTER_AUTHORIZATION_FAILED.
	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	markers.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch = 4242, 0
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "t-mark", []int32{0, 1}
	m.Topics = append(m.Topics, mt)
	markers.Markers = append(markers.Markers, m)
	markerCodes := func(w *wireConn) []protocol.ErrorCode {
		var out []protocol.ErrorCode
		for _, p := range w.mustRoundTrip(markers).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions {
			out = append(out, protocol.ErrorCode(p.ErrorCode))
		}
		return out
	}
	wantCodes := func(what string, got []protocol.ErrorCode, want ...protocol.ErrorCode) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("WriteTxnMarkers %s: %v, want %v", what, got, want)
		}
	}
	wantCodes("by a producer", markerCodes(alice), protocol.ClusterAuthorizationFailed, protocol.ClusterAuthorizationFailed)
	admin.createACLs(allow(acl.ResourceCluster, acl.ClusterName, "User:carol", acl.OpAlter),
		allow(acl.ResourceCluster, acl.ClusterName, "User:frank", acl.OpClusterAction))
	wantCodes("with ALTER", markerCodes(carol), protocol.None, protocol.UnknownTopicOrPartition)
	wantCodes("with CLUSTER_ACTION", markerCodes(frank), protocol.None, protocol.UnknownTopicOrPartition)
}
