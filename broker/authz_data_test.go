package broker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

// authzDataGrant is an ALLOW binding a case's principal gets before its
// second call.
type authzDataGrant struct {
	rt   acl.ResourceType
	name string
	op   acl.Operation
}

// authzDataCase is one API call made as User:<user>: first with no ACLs,
// when it must be answered denied and carry no data (nor have any effect),
// then once grants are given, when it must be answered allowed and, unless
// noDataAllowed, carry its data.
type authzDataCase struct {
	user          string
	grants        []authzDataGrant
	denied        protocol.ErrorCode
	allowed       protocol.ErrorCode
	noDataAllowed bool
	// call makes the call and returns its error and whether the answer
	// carried data or the call had its effect.
	call func(w *wireConn) (code int16, data bool)
}

// runAuthzDataCases runs cases in order on b, one subtest each.
func runAuthzDataCases(t *testing.T, b *Broker, cases []authzDataCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.user, func(t *testing.T) {
			w := dialWireAs(t, b, tc.user)
			code, data := tc.call(w)
			checkCode(t, "without ACLs", code, tc.denied)
			if data {
				t.Errorf("without ACLs: the answer carries data or the call had its effect")
			}
			var bindings []acl.Binding
			for _, g := range tc.grants {
				bindings = append(bindings, allow(g.rt, g.name, "User:"+tc.user, g.op))
			}
			dialWireAs(t, b, "admin").createACLs(bindings...)
			code, data = tc.call(w)
			checkCode(t, "with ACLs", code, tc.allowed)
			if !data && !tc.noDataAllowed {
				t.Errorf("with ACLs: the answer carries no data or the call had no effect")
			}
		})
	}
}

// authzDataFetch fetches one partition from offset 0 once, as replica
// (-1 for a consumer), by name before v13 and by id from v13.
func authzDataFetch(w *wireConn, v int16, replica int32, topic string, id [16]byte) kmsg.FetchResponseTopicPartition {
	w.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = replica, replica, -1
	if v >= 15 {
		req.ReplicaID = -1
	}
	req.MaxBytes, req.SessionEpoch = 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = 1<<20, -1, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := w.mustRoundTrip(req).(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		w.t.Fatalf("fetch response has %d topics, want 1 with 1 partition (error %d)", len(resp.Topics), resp.ErrorCode)
	}
	return resp.Topics[0].Partitions[0]
}

// TestAuthzDataRecords: Produce and DeleteRecords need WRITE and DELETE on
// the topic, Fetch and DescribeProducers READ, ListOffsets and
// OffsetForLeaderEpoch DESCRIBE (or, for the latter, CLUSTER_ACTION), a
// follower's fetch CLUSTER_ACTION, a transactional produce WRITE on its
// transactional id; a denied call gets Kafka's error and no data.
func TestAuthzDataRecords(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t, smallTxnTopic)
	admin := dialWireAs(t, b, "admin")
	// The broker verifies transactional produces with its transaction
	// coordinator over its own connection, which needs CLUSTER_ACTION.
	admin.createACLs(allow(acl.ResourceCluster, acl.ClusterName,
		fmt.Sprintf("User:gregor-broker-%d-txn-markers", b.cfg.NodeID), acl.OpClusterAction))
	const topic, txnID = "records", "authz-txn"
	id := admin.createTopic(topic, 1, nil)
	pid, epoch := admin.initProducerID()
	if p := admin.producePartition(-1, topic, 0, buildBatch(t, idempotentHeader(pid, epoch, 0), "r", 3)); p.ErrorCode != 0 {
		t.Fatalf("admin produces: %s", protocol.ErrorCode(p.ErrorCode))
	}
	admin.findTxnCoordinator(txnID)
	txnPID, txnEpoch := admin.initTxn(txnID, 4)
	if code := admin.addPartition(3, txnID, txnPID, txnEpoch, topic, 0); code != protocol.None {
		t.Fatalf("add partition to the transaction: %s", code)
	}

	write := []authzDataGrant{{acl.ResourceTopic, topic, acl.OpWrite}}
	read := []authzDataGrant{{acl.ResourceTopic, topic, acl.OpRead}}
	describe := []authzDataGrant{{acl.ResourceTopic, topic, acl.OpDescribe}}
	clusterAction := []authzDataGrant{{acl.ResourceCluster, acl.ClusterName, acl.OpClusterAction}}
	produced := func(p kmsg.ProduceResponseTopicPartition) (int16, bool) { return p.ErrorCode, p.BaseOffset >= 0 }
	fetched := func(p kmsg.FetchResponseTopicPartition) (int16, bool) {
		return p.ErrorCode, len(p.RecordBatches) > 0 || p.HighWatermark >= 0 || p.LogStartOffset >= 0
	}
	runAuthzDataCases(t, b, []authzDataCase{
		{user: "producer", grants: write, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				return produced(w.produceV(11, -1, topic, 0, buildBatch(w.t, plainHeader(), "p", 1)))
			}},
		{user: "producer-by-id", grants: write, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				req := produceReq(13, -1, "", 0, buildBatch(w.t, plainHeader(), "p", 1))
				req.Topics[0].TopicID = id
				return produced(w.mustRoundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0])
			}},
		// WRITE on the topic is not enough for transactional records.
		{user: "txn-producer", grants: []authzDataGrant{{acl.ResourceTransactionalID, txnID, acl.OpWrite}, write[0]},
			denied: protocol.TransactionalIDAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				req := produceReq(11, -1, topic, 0, buildBatch(w.t, txnHeader(txnPID, txnEpoch, 0), "x", 1))
				id := txnID
				req.TransactionID = &id
				return produced(w.mustRoundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0])
			}},
		{user: "consumer", grants: read, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) { return fetched(authzDataFetch(w, 12, -1, topic, [16]byte{})) }},
		{user: "consumer-by-id", grants: read, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) { return fetched(authzDataFetch(w, 13, -1, "", id)) }},
		// Broker 7 is no replica of the topic: allowed, it is told so.
		{user: "follower", grants: clusterAction, denied: protocol.TopicAuthorizationFailed,
			allowed: protocol.NotLeaderOrFollower, noDataAllowed: true,
			call: func(w *wireConn) (int16, bool) { return fetched(authzDataFetch(w, 15, 7, "", id)) }},
		{user: "follower-v14", grants: clusterAction, denied: protocol.TopicAuthorizationFailed,
			allowed: protocol.NotLeaderOrFollower, noDataAllowed: true,
			call: func(w *wireConn) (int16, bool) { return fetched(authzDataFetch(w, 14, 7, "", id)) }},
		{user: "follower-v12", grants: clusterAction, denied: protocol.TopicAuthorizationFailed,
			allowed: protocol.NotLeaderOrFollower, noDataAllowed: true,
			call: func(w *wireConn) (int16, bool) { return fetched(authzDataFetch(w, 12, 7, topic, [16]byte{})) }},
		{user: "offsets", grants: describe, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				p := w.listOffset(8, topic, 0, -1)
				return p.ErrorCode, p.Offset >= 0 || p.LeaderEpoch >= 0
			}},
		{user: "epochs", grants: describe, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) { return authzDataEpoch(w, topic) }},
		{user: "epochs-replica", grants: clusterAction, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) { return authzDataEpoch(w, topic) }},
		{user: "producers", grants: read, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				p := w.describeProducers(topic, 0)
				return p.ErrorCode, len(p.ActiveProducers) > 0
			}},
		{user: "deleter", grants: []authzDataGrant{{acl.ResourceTopic, topic, acl.OpDelete}}, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				req := kmsg.NewPtrDeleteRecordsRequest()
				req.SetVersion(2)
				req.TimeoutMillis = 10000
				rt := kmsg.NewDeleteRecordsRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewDeleteRecordsRequestTopicPartition()
				rp.Offset = 1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				p := w.mustRoundTrip(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
				part, _ := b.lookupPartition(topic, [16]byte{}, false, 0)
				return p.ErrorCode, p.LowWatermark >= 0 || part.log().LogStartOffset() > 0
			}},
	})

	// Transactional records with no transactional id are refused so too,
	// to a principal that may write the topic.
	w := dialWireAs(t, b, "producer")
	req := produceReq(11, -1, topic, 0, buildBatch(t, txnHeader(txnPID, txnEpoch, 0), "x", 1))
	p := w.mustRoundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	checkCode(t, "transactional records without a transactional id", p.ErrorCode, protocol.TransactionalIDAuthorizationFailed)

	// A denied acks=0 produce closes the connection, as any failed one.
	w = dialWireAs(t, b, "stranger")
	req = produceReq(11, 0, topic, 0, buildBatch(t, plainHeader(), "z", 1))
	if err := w.writeRaw(w.fmt.AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.expectClosed(10 * time.Second); err != nil {
		t.Errorf("denied acks=0 produce: %v", err)
	}

	// Without READ, a topic that does not exist is denied like one that
	// does; a topic id no topic has is unknown.
	w = dialWireAs(t, b, "stranger")
	checkCode(t, "fetch of a missing topic", authzDataFetch(w, 12, -1, "missing", [16]byte{}).ErrorCode, protocol.TopicAuthorizationFailed)
	checkCode(t, "fetch of an unknown id", authzDataFetch(w, 13, -1, "", [16]byte{1}).ErrorCode, protocol.UnknownTopicID)
	checkCode(t, "produce to a missing topic", w.produceV(11, -1, "missing", 0, buildBatch(t, plainHeader(), "m", 1)).ErrorCode,
		protocol.TopicAuthorizationFailed)

	// A franz-go client is refused, then served once granted WRITE and READ
	// (each implying DESCRIBE, which its Metadata requests need).
	ctx := testContext(t, 30*time.Second)
	cl := clientAs(t, b, "kgo-user", kgo.DisableIdempotentWrite(), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("franz-go produce without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	admin.createACLs(allow(acl.ResourceTopic, topic, "User:kgo-user", acl.OpWrite), allow(acl.ResourceTopic, topic, "User:kgo-user", acl.OpRead))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
		t.Errorf("franz-go produce with WRITE: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil || fs.NumRecords() == 0 {
		t.Errorf("franz-go consume with READ: %v, %d records", err, fs.NumRecords())
	}
}

// authzDataEpoch asks for the end offset of leader epoch 0 of partition 0.
func authzDataEpoch(w *wireConn, topic string) (int16, bool) {
	w.t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(4)
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := w.mustRoundTrip(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	return p.ErrorCode, p.EndOffset >= 0 || p.LeaderEpoch >= 0
}

// TestAuthzDataFetchSession: a fetch session keeps a denied partition and
// answers it denied in each incremental fetch until READ is granted, then
// serves its records.
func TestAuthzDataFetchSession(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t)
	admin := dialWireAs(t, b, "admin")
	const topic = "session"
	admin.createTopic(topic, 1, nil)
	if p := admin.producePartition(-1, topic, 0, buildBatch(t, plainHeader(), "s", 2)); p.ErrorCode != 0 {
		t.Fatalf("admin produces: %s", protocol.ErrorCode(p.ErrorCode))
	}
	w := dialWireAs(t, b, "reader")
	fetch := func(sessionID, epoch int32, withPartition bool) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.ReplicaID = -1
		req.MaxBytes, req.SessionID, req.SessionEpoch = 1<<20, sessionID, epoch
		if withPartition {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = 1<<20, -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		return w.mustRoundTrip(req).(*kmsg.FetchResponse)
	}
	only := func(what string, resp *kmsg.FetchResponse) kmsg.FetchResponseTopicPartition {
		t.Helper()
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("%s: error %s, %d topics, want the one partition", what, protocol.ErrorCode(resp.ErrorCode), len(resp.Topics))
		}
		return resp.Topics[0].Partitions[0]
	}
	first := fetch(0, 0, true)
	if first.SessionID == 0 {
		t.Fatal("no session opened")
	}
	p := only("full fetch", first)
	checkCode(t, "full fetch", p.ErrorCode, protocol.TopicAuthorizationFailed)
	p = only("incremental fetch", fetch(first.SessionID, 1, false))
	checkCode(t, "incremental fetch", p.ErrorCode, protocol.TopicAuthorizationFailed)
	if len(p.RecordBatches) > 0 || p.HighWatermark >= 0 {
		t.Errorf("denied incremental fetch: %d bytes, high watermark %d", len(p.RecordBatches), p.HighWatermark)
	}
	admin.createACLs(allow(acl.ResourceTopic, topic, "User:reader", acl.OpRead))
	p = only("incremental fetch with READ", fetch(first.SessionID, 2, false))
	checkCode(t, "incremental fetch with READ", p.ErrorCode, protocol.None)
	if len(p.RecordBatches) == 0 || p.HighWatermark != 2 {
		t.Errorf("incremental fetch with READ: %d bytes, high watermark %d, want the records and 2", len(p.RecordBatches), p.HighWatermark)
	}
}

// authzDataMetadata asks for the metadata of topics (nil: all) at version
// v, with authorized operations.
func authzDataMetadata(w *wireConn, v int16, autoCreate bool, topics ...kmsg.MetadataRequestTopic) *kmsg.MetadataResponse {
	w.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(v)
	req.AllowAutoTopicCreation = autoCreate
	req.IncludeTopicAuthorizedOperations = true
	req.IncludeClusterAuthorizedOperations = true
	req.Topics = topics
	return w.mustRoundTrip(req).(*kmsg.MetadataResponse)
}

// authzDataNamed is a Metadata request topic by name.
func authzDataNamed(name string) kmsg.MetadataRequestTopic {
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(name)
	return rt
}

// TestAuthzDataMetadata: Metadata, DescribeTopicPartitions and
// DescribeCluster show a topic only with DESCRIBE on it (silently left out
// of a listing of all, TOPIC_AUTHORIZATION_FAILED without its id when
// named), auto-create only with CREATE, and report the principal's
// authorized operations.
func TestAuthzDataMetadata(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t)
	admin := dialWireAs(t, b, "admin")
	visibleID := admin.createTopic("visible", 2, nil)
	admin.createTopic("hidden", 1, nil)
	exists := func(name string) bool { return b.cluster.Snapshot().Topics[name] != nil }
	describeVisible := []authzDataGrant{{acl.ResourceTopic, "visible", acl.OpDescribe}}
	metadataOne := func(w *wireConn, v int16, autoCreate bool, rt kmsg.MetadataRequestTopic) kmsg.MetadataResponseTopic {
		resp := authzDataMetadata(w, v, autoCreate, rt)
		if len(resp.Topics) != 1 {
			w.t.Fatalf("metadata response has %d topics, want 1", len(resp.Topics))
		}
		return resp.Topics[0]
	}
	dtp := func(w *wireConn, name string) (int16, bool) {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
		req.ResponsePartitionLimit = 100
		resp := w.mustRoundTrip(req).(*kmsg.DescribeTopicPartitionsResponse)
		if len(resp.Topics) != 1 {
			w.t.Fatalf("describe topic partitions response has %d topics, want 1", len(resp.Topics))
		}
		return resp.Topics[0].ErrorCode, resp.Topics[0].TopicID != [16]byte{} || len(resp.Topics[0].Partitions) > 0
	}
	runAuthzDataCases(t, b, []authzDataCase{
		{user: "describer", grants: describeVisible, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				mt := metadataOne(w, 12, false, authzDataNamed("visible"))
				return mt.ErrorCode, mt.TopicID != [16]byte{} || len(mt.Partitions) > 0
			}},
		// By id, the id is answered (it is not secret), the name not.
		{user: "describer-by-id", grants: describeVisible, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic, rt.TopicID = kmsg.StringPtr(""), visibleID
				mt := metadataOne(w, 12, false, rt)
				if mt.TopicID != visibleID {
					w.t.Errorf("metadata by id answers id %x, want %x", mt.TopicID, visibleID)
				}
				return mt.ErrorCode, mt.Topic != nil || len(mt.Partitions) > 0
			}},
		{user: "creator", grants: []authzDataGrant{{acl.ResourceTopic, "auto-a", acl.OpDescribe}, {acl.ResourceTopic, "auto-a", acl.OpCreate}},
			denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				mt := metadataOne(w, 12, true, authzDataNamed("auto-a"))
				return mt.ErrorCode, exists("auto-a") || len(mt.Partitions) > 0
			}},
		{user: "cluster-creator", grants: []authzDataGrant{{acl.ResourceTopic, "auto-b", acl.OpDescribe}, {acl.ResourceCluster, acl.ClusterName, acl.OpCreate}},
			denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				mt := metadataOne(w, 12, true, authzDataNamed("auto-b"))
				return mt.ErrorCode, exists("auto-b") || len(mt.Partitions) > 0
			}},
		{user: "partitions-describer", grants: describeVisible, denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) { return dtp(w, "visible") }},
	})

	// DESCRIBE on a topic but no CREATE: the missing topic is refused and
	// not created.
	w := dialWireAs(t, b, "describer")
	admin.createACLs(allow(acl.ResourceTopic, "auto-c", "User:describer", acl.OpDescribe))
	mt := metadataOne(w, 12, true, authzDataNamed("auto-c"))
	checkCode(t, "auto-creation without CREATE", mt.ErrorCode, protocol.TopicAuthorizationFailed)
	if exists("auto-c") {
		t.Error("auto-c was created without CREATE")
	}
	// Without DESCRIBE, a missing topic is denied like one that exists.
	checkCode(t, "missing topic without DESCRIBE", metadataOne(w, 12, false, authzDataNamed("nowhere")).ErrorCode,
		protocol.TopicAuthorizationFailed)

	// Listing every topic leaves out those without DESCRIBE, silently.
	lister := dialWireAs(t, b, "lister")
	names := func(resp *kmsg.MetadataResponse) []string {
		var out []string
		for _, mt := range resp.Topics {
			if mt.ErrorCode != 0 || mt.Topic == nil {
				t.Errorf("listing: topic %v with error %s", mt.Topic, protocol.ErrorCode(mt.ErrorCode))
				continue
			}
			out = append(out, *mt.Topic)
		}
		return out
	}
	if got := names(authzDataMetadata(lister, 12, false)); len(got) != 0 {
		t.Errorf("lister without ACLs sees %v", got)
	}
	admin.createACLs(allow(acl.ResourceTopic, "visible", "User:lister", acl.OpRead))
	resp := authzDataMetadata(lister, 10, false)
	if got := names(resp); len(got) != 1 || got[0] != "visible" {
		t.Errorf("lister with READ on visible sees %v", got)
	}
	// READ implies DESCRIBE; the cluster's operations are none without
	// DESCRIBE on it.
	if ops := resp.Topics[0].AuthorizedOperations; ops != 1<<acl.OpRead|1<<acl.OpDescribe {
		t.Errorf("lister's operations on visible: %b, want READ|DESCRIBE", ops)
	}
	if resp.AuthorizedOperations != 0 {
		t.Errorf("lister's cluster operations: %b, want none", resp.AuthorizedOperations)
	}
	dtpAll := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtpAll.ResponsePartitionLimit = 100
	dtpResp := lister.mustRoundTrip(dtpAll).(*kmsg.DescribeTopicPartitionsResponse)
	if len(dtpResp.Topics) != 1 || *dtpResp.Topics[0].Topic != "visible" || dtpResp.Topics[0].AuthorizedOperations != 1<<acl.OpRead|1<<acl.OpDescribe {
		t.Errorf("lister's DescribeTopicPartitions of all topics: %+v", dtpResp.Topics)
	}

	// The cluster's authorized operations: none without DESCRIBE, then
	// those granted (Metadata v8-10 and DescribeCluster).
	clusterOps := func(w *wireConn) (int32, int32) {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		dc := w.mustRoundTrip(req).(*kmsg.DescribeClusterResponse)
		if dc.ErrorCode != 0 {
			t.Fatalf("describe cluster: %s", protocol.ErrorCode(dc.ErrorCode))
		}
		return authzDataMetadata(w, 10, false).AuthorizedOperations, dc.ClusterAuthorizedOperations
	}
	operator := dialWireAs(t, b, "operator")
	if md, dc := clusterOps(operator); md != 0 || dc != 0 {
		t.Errorf("cluster operations without ACLs: metadata %b, describe cluster %b, want none", md, dc)
	}
	admin.createACLs(allow(acl.ResourceCluster, acl.ClusterName, "User:operator", acl.OpAlter),
		allow(acl.ResourceCluster, acl.ClusterName, "User:operator", acl.OpCreate))
	// ALTER implies DESCRIBE.
	want := int32(1<<acl.OpAlter | 1<<acl.OpCreate | 1<<acl.OpDescribe)
	if md, dc := clusterOps(operator); md != want || dc != want {
		t.Errorf("cluster operations with ALTER and CREATE: metadata %b, describe cluster %b, want %b", md, dc, want)
	}
}

// TestAuthzDataTopicAdmin: CreateTopics needs CREATE on the cluster or the
// topic (and DESCRIBE_CONFIGS for the configs in the answer), DeleteTopics
// DELETE on the cluster or the topic (DESCRIBE to learn of it),
// CreatePartitions ALTER on the topic.
func TestAuthzDataTopicAdmin(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t)
	admin := dialWireAs(t, b, "admin")
	for _, name := range []string{"del-a", "del-b", "del-c", "grow"} {
		admin.createTopic(name, 1, nil)
	}
	delBID := b.cluster.Snapshot().Topics["del-b"].ID
	exists := func(name string) bool { return b.cluster.Snapshot().Topics[name] != nil }
	create := func(w *wireConn, name string) kmsg.CreateTopicsResponseTopic {
		return w.createTopicResult(name, 1, 1, nil)
	}
	deleteTopic := func(w *wireConn, rt kmsg.DeleteTopicsRequestTopic) kmsg.DeleteTopicsResponseTopic {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(6)
		req.TimeoutMillis = 10000
		req.Topics = append(req.Topics, rt)
		resp := w.mustRoundTrip(req).(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 1 {
			w.t.Fatalf("delete topics response has %d topics, want 1", len(resp.Topics))
		}
		return resp.Topics[0]
	}
	byName := func(name string) kmsg.DeleteTopicsRequestTopic {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		return rt
	}
	runAuthzDataCases(t, b, []authzDataCase{
		{user: "creator", grants: []authzDataGrant{{acl.ResourceTopic, "new-a", acl.OpCreate}},
			denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				rt := create(w, "new-a")
				if rt.ErrorCode == 0 && (rt.ConfigErrorCode != int16(protocol.TopicAuthorizationFailed) || len(rt.Configs) > 0 || rt.NumPartitions != -1) {
					w.t.Errorf("created without DESCRIBE_CONFIGS: config error %s, %d configs, %d partitions",
						protocol.ErrorCode(rt.ConfigErrorCode), len(rt.Configs), rt.NumPartitions)
				}
				return rt.ErrorCode, exists("new-a") || rt.TopicID != [16]byte{}
			}},
		{user: "cluster-creator", grants: []authzDataGrant{{acl.ResourceCluster, acl.ClusterName, acl.OpCreate},
			{acl.ResourceTopic, "new-b", acl.OpDescribeConfigs}},
			denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				rt := create(w, "new-b")
				if rt.ErrorCode == 0 && (rt.ConfigErrorCode != 0 || len(rt.Configs) == 0 || rt.NumPartitions != 1) {
					w.t.Errorf("created with DESCRIBE_CONFIGS: config error %s, %d configs, %d partitions",
						protocol.ErrorCode(rt.ConfigErrorCode), len(rt.Configs), rt.NumPartitions)
				}
				return rt.ErrorCode, exists("new-b") || rt.TopicID != [16]byte{}
			}},
		{user: "deleter", grants: []authzDataGrant{{acl.ResourceTopic, "del-a", acl.OpDelete}},
			denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				rt := deleteTopic(w, byName("del-a"))
				return rt.ErrorCode, !exists("del-a") || rt.TopicID != [16]byte{}
			}},
		{user: "deleter-by-id", grants: []authzDataGrant{{acl.ResourceTopic, "del-b", acl.OpDelete}},
			denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				rt := kmsg.NewDeleteTopicsRequestTopic()
				rt.TopicID = delBID
				out := deleteTopic(w, rt)
				return out.ErrorCode, !exists("del-b") || (out.ErrorCode != 0 && out.Topic != nil)
			}},
		{user: "cluster-deleter", grants: []authzDataGrant{{acl.ResourceCluster, acl.ClusterName, acl.OpDelete}},
			denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				rt := deleteTopic(w, byName("del-c"))
				return rt.ErrorCode, !exists("del-c")
			}},
		{user: "alterer", grants: []authzDataGrant{{acl.ResourceTopic, "grow", acl.OpAlter}},
			denied: protocol.TopicAuthorizationFailed,
			call: func(w *wireConn) (int16, bool) {
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.SetVersion(3)
				req.TimeoutMillis = 10000
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = "grow", 2
				req.Topics = append(req.Topics, rt)
				out := w.mustRoundTrip(req).(*kmsg.CreatePartitionsResponse).Topics[0]
				return out.ErrorCode, len(b.cluster.Snapshot().Topics["grow"].Partitions) > 1
			}},
	})

	// DeleteTopics by id: with DESCRIBE but no DELETE the name is answered;
	// by name, DESCRIBE tells a missing topic from a denied one.
	admin.createTopic("del-d", 1, nil)
	delDID := b.cluster.Snapshot().Topics["del-d"].ID
	w := dialWireAs(t, b, "looker")
	admin.createACLs(allow(acl.ResourceTopic, "del-d", "User:looker", acl.OpDescribe),
		allow(acl.ResourceTopic, "gone", "User:looker", acl.OpDescribe))
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.TopicID = delDID
	out := deleteTopic(w, rt)
	checkCode(t, "delete by id with DESCRIBE only", out.ErrorCode, protocol.TopicAuthorizationFailed)
	if out.Topic == nil || *out.Topic != "del-d" {
		t.Errorf("delete by id with DESCRIBE only answers name %v, want del-d", out.Topic)
	}
	checkCode(t, "delete of a missing topic with DESCRIBE", deleteTopic(w, byName("gone")).ErrorCode, protocol.UnknownTopicOrPartition)
	checkCode(t, "delete of a missing topic without DESCRIBE", deleteTopic(w, byName("gone-too")).ErrorCode, protocol.TopicAuthorizationFailed)
	unknown := kmsg.NewDeleteTopicsRequestTopic()
	unknown.TopicID = [16]byte{9}
	checkCode(t, "delete of an unknown id", deleteTopic(w, unknown).ErrorCode, protocol.UnknownTopicID)
	if !exists("del-d") {
		t.Error("del-d was deleted without DELETE")
	}
}
