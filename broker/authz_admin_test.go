package broker

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/protocol"
)

// adminOutcome is what one admin request got: the authorization-relevant
// error code and whether the answer carried data.
type adminOutcome struct {
	code protocol.ErrorCode
	data bool
}

// TestAuthzAdminAPIs: each config and cluster administration API refuses
// a principal without the ACL it needs with Kafka's error, at Kafka's
// level, and no data; once an admin grants that one ACL, the same request
// is served. Every case has its own principal, so that no grant of one
// case (ALTER implies DESCRIBE) helps another.
func TestAuthzAdminAPIs(t *testing.T) {
	t.Parallel()
	b := startAuthzBroker(t)
	admin := dialWireAs(t, b, "admin")
	admin.createTopic("conf", 1, nil)
	node := strconv.Itoa(int(b.cfg.NodeID))

	describeConfigs := func(typ kmsg.ConfigResourceType, name string) func(w *wireConn) adminOutcome {
		return func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.SetVersion(4)
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = typ, name
			req.Resources = append(req.Resources, rr)
			res := w.mustRoundTrip(req).(*kmsg.DescribeConfigsResponse).Resources[0]
			return adminOutcome{protocol.ErrorCode(res.ErrorCode), len(res.Configs) > 0}
		}
	}
	alterConfigs := func(typ kmsg.ConfigResourceType, name string, kv ...string) func(w *wireConn) adminOutcome {
		return func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrAlterConfigsRequest()
			req.SetVersion(2)
			req.ValidateOnly = true
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = typ, name
			for i := 0; i+1 < len(kv); i += 2 {
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name, c.Value = kv[i], &kv[i+1]
				rr.Configs = append(rr.Configs, c)
			}
			req.Resources = append(req.Resources, rr)
			res := w.mustRoundTrip(req).(*kmsg.AlterConfigsResponse).Resources[0]
			return adminOutcome{code: protocol.ErrorCode(res.ErrorCode)}
		}
	}
	incrementalAlter := func(typ kmsg.ConfigResourceType, name string, kv ...string) func(w *wireConn) adminOutcome {
		return func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			req.SetVersion(1)
			req.ValidateOnly = true
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = typ, name
			for i := 0; i+1 < len(kv); i += 2 {
				c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				c.Name, c.Op, c.Value = kv[i], kmsg.IncrementalAlterConfigOpSet, &kv[i+1]
				rr.Configs = append(rr.Configs, c)
			}
			req.Resources = append(req.Resources, rr)
			res := w.mustRoundTrip(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
			return adminOutcome{code: protocol.ErrorCode(res.ErrorCode)}
		}
	}
	cluster := func(op acl.Operation) acl.Binding {
		return acl.Binding{ResourceType: acl.ResourceCluster, Name: acl.ClusterName, Operation: op}
	}

	for i, c := range []struct {
		name    string
		needs   acl.Binding // Principal and Host are the case's
		call    func(w *wireConn) adminOutcome
		denied  adminOutcome
		allowed adminOutcome
	}{
		{"DescribeConfigs broker", cluster(acl.OpDescribeConfigs), describeConfigs(kmsg.ConfigResourceTypeBroker, node),
			adminOutcome{protocol.ClusterAuthorizationFailed, false}, adminOutcome{protocol.None, true}},
		{"DescribeConfigs broker logger", cluster(acl.OpDescribeConfigs), describeConfigs(kmsg.ConfigResourceTypeBrokerLogger, node),
			adminOutcome{protocol.ClusterAuthorizationFailed, false}, adminOutcome{protocol.None, true}},
		{"DescribeConfigs topic", acl.Binding{ResourceType: acl.ResourceTopic, Name: "conf", Operation: acl.OpDescribeConfigs},
			describeConfigs(kmsg.ConfigResourceTypeTopic, "conf"),
			adminOutcome{protocol.TopicAuthorizationFailed, false}, adminOutcome{protocol.None, true}},
		{"DescribeConfigs group", acl.Binding{ResourceType: acl.ResourceGroup, Name: "cg", Operation: acl.OpDescribeConfigs},
			describeConfigs(kmsg.ConfigResourceTypeGroupConfig, "cg"),
			adminOutcome{protocol.GroupAuthorizationFailed, false}, adminOutcome{protocol.None, true}},
		{"AlterConfigs topic", acl.Binding{ResourceType: acl.ResourceTopic, Name: "conf", Operation: acl.OpAlterConfigs},
			alterConfigs(kmsg.ConfigResourceTypeTopic, "conf", "retention.ms", "1000"),
			adminOutcome{code: protocol.TopicAuthorizationFailed}, adminOutcome{code: protocol.None}},
		{"AlterConfigs broker", cluster(acl.OpAlterConfigs), alterConfigs(kmsg.ConfigResourceTypeBroker, ""),
			adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.None}},
		{"AlterConfigs group", acl.Binding{ResourceType: acl.ResourceGroup, Name: "cg", Operation: acl.OpAlterConfigs},
			alterConfigs(kmsg.ConfigResourceTypeGroupConfig, "cg", "consumer.session.timeout.ms", "50000"),
			adminOutcome{code: protocol.GroupAuthorizationFailed}, adminOutcome{code: protocol.None}},
		{"IncrementalAlterConfigs topic", acl.Binding{ResourceType: acl.ResourceTopic, Name: "conf", Operation: acl.OpAlterConfigs},
			incrementalAlter(kmsg.ConfigResourceTypeTopic, "conf", "retention.ms", "1000"),
			adminOutcome{code: protocol.TopicAuthorizationFailed}, adminOutcome{code: protocol.None}},
		{"IncrementalAlterConfigs broker", cluster(acl.OpAlterConfigs),
			incrementalAlter(kmsg.ConfigResourceTypeBroker, node, "leader.replication.throttled.rate", "1000000"),
			adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.None}},
		{"IncrementalAlterConfigs broker logger", cluster(acl.OpAlterConfigs),
			incrementalAlter(kmsg.ConfigResourceTypeBrokerLogger, node, rootLogger, "INFO"),
			adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.None}},
		{"IncrementalAlterConfigs group", acl.Binding{ResourceType: acl.ResourceGroup, Name: "cg", Operation: acl.OpAlterConfigs},
			incrementalAlter(kmsg.ConfigResourceTypeGroupConfig, "cg", "consumer.session.timeout.ms", "50000"),
			adminOutcome{code: protocol.GroupAuthorizationFailed}, adminOutcome{code: protocol.None}},
		{"AlterReplicaLogDirs", cluster(acl.OpAlter), func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrAlterReplicaLogDirsRequest()
			req.SetVersion(2)
			d := kmsg.NewAlterReplicaLogDirsRequestDir()
			d.Dir = "/no/such/dir"
			dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
			dt.Topic, dt.Partitions = "conf", []int32{0}
			d.Topics = append(d.Topics, dt)
			req.Dirs = append(req.Dirs, d)
			resp := w.mustRoundTrip(req).(*kmsg.AlterReplicaLogDirsResponse)
			return adminOutcome{code: protocol.ErrorCode(resp.Topics[0].Partitions[0].ErrorCode)}
		}, adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.LogDirNotFound}},
		{"DescribeLogDirs", cluster(acl.OpDescribe), func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrDescribeLogDirsRequest()
			req.SetVersion(4)
			resp := w.mustRoundTrip(req).(*kmsg.DescribeLogDirsResponse)
			return adminOutcome{protocol.ErrorCode(resp.ErrorCode), len(resp.Dirs) > 0}
		}, adminOutcome{protocol.ClusterAuthorizationFailed, false}, adminOutcome{protocol.None, true}},
		{"ElectLeaders", cluster(acl.OpAlter), func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrElectLeadersRequest()
			req.SetVersion(2)
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = "conf", []int32{0}
			req.Topics = append(req.Topics, rt)
			resp := w.mustRoundTrip(req).(*kmsg.ElectLeadersResponse)
			code := protocol.ErrorCode(resp.ErrorCode)
			if p := resp.Topics[0].Partitions[0]; code == protocol.None {
				code = protocol.ErrorCode(p.ErrorCode)
			} else if p.ErrorCode != resp.ErrorCode {
				t.Errorf("ElectLeaders: partition error %d, top-level %d", p.ErrorCode, resp.ErrorCode)
			}
			return adminOutcome{code: code}
		}, adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.ElectionNotNeeded}},
		{"AlterPartitionReassignments", cluster(acl.OpAlter), func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = "conf"
			rt.Partitions = append(rt.Partitions, kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()) // a cancel
			req.Topics = append(req.Topics, rt)
			resp := w.mustRoundTrip(req).(*kmsg.AlterPartitionAssignmentsResponse)
			code := protocol.ErrorCode(resp.ErrorCode)
			if code == protocol.None {
				code = protocol.ErrorCode(resp.Topics[0].Partitions[0].ErrorCode)
			}
			return adminOutcome{code: code}
		}, adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.NoReassignmentInProgress}},
		{"ListPartitionReassignments", cluster(acl.OpDescribe), func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrListPartitionReassignmentsRequest()
			resp := w.mustRoundTrip(req).(*kmsg.ListPartitionReassignmentsResponse)
			return adminOutcome{code: protocol.ErrorCode(resp.ErrorCode), data: len(resp.Topics) > 0}
		}, adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.None}},
		{"UnregisterBroker", cluster(acl.OpAlter), func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrUnregisterBrokerRequest()
			req.BrokerID = 999
			return adminOutcome{code: protocol.ErrorCode(w.mustRoundTrip(req).(*kmsg.UnregisterBrokerResponse).ErrorCode)}
		}, adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.BrokerIDNotRegistered}},
		{"DescribeClientQuotas", cluster(acl.OpDescribeConfigs), func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			req.SetVersion(1)
			resp := w.mustRoundTrip(req).(*kmsg.DescribeClientQuotasResponse)
			if protocol.ErrorCode(resp.ErrorCode) != protocol.None && resp.Entries != nil {
				t.Errorf("DescribeClientQuotas refused with entries %+v", resp.Entries)
			}
			return adminOutcome{code: protocol.ErrorCode(resp.ErrorCode)}
		}, adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.None}},
		{"AlterClientQuotas", cluster(acl.OpAlterConfigs), func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrAlterClientQuotasRequest()
			req.SetVersion(1)
			req.ValidateOnly = true
			req.Entries = append(req.Entries, quotaEntry([]string{"client-id=c"}, "producer_byte_rate=1024"))
			resp := w.mustRoundTrip(req).(*kmsg.AlterClientQuotasResponse)
			if len(resp.Entries) != 1 || len(resp.Entries[0].Entity) != 1 {
				t.Errorf("AlterClientQuotas: entries %+v, want one for client-id c", resp.Entries)
				return adminOutcome{code: -1}
			}
			return adminOutcome{code: protocol.ErrorCode(resp.Entries[0].ErrorCode)}
		}, adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.None}},
		{"DescribeUserScramCredentials", cluster(acl.OpDescribe), func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			u.Name = "someone"
			req.Users = append(req.Users, u)
			resp := w.mustRoundTrip(req).(*kmsg.DescribeUserSCRAMCredentialsResponse)
			code := protocol.ErrorCode(resp.ErrorCode)
			if code == protocol.None {
				code = protocol.ErrorCode(resp.Results[0].ErrorCode)
			} else if len(resp.Results) != 1 || resp.Results[0].ErrorCode != resp.ErrorCode {
				t.Errorf("DescribeUserScramCredentials refused: results %+v", resp.Results)
			}
			return adminOutcome{code: code}
		}, adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.ResourceNotFound}},
		{"AlterUserScramCredentials", cluster(acl.OpAlter), func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = "someone", 1
			req.Deletions = append(req.Deletions, d)
			resp := w.mustRoundTrip(req).(*kmsg.AlterUserSCRAMCredentialsResponse)
			if len(resp.Results) != 1 || resp.Results[0].User != "someone" {
				t.Errorf("AlterUserScramCredentials: results %+v", resp.Results)
				return adminOutcome{code: -1}
			}
			return adminOutcome{code: protocol.ErrorCode(resp.Results[0].ErrorCode)}
		}, adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{code: protocol.ResourceNotFound}},
		{"UpdateFeatures", cluster(acl.OpAlter), func(w *wireConn) adminOutcome {
			req := kmsg.NewPtrUpdateFeaturesRequest()
			req.SetVersion(1)
			req.ValidateOnly = true
			u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			u.Feature, u.MaxVersionLevel, u.UpgradeType = "transaction.version", 2, upgradeTypeUpgrade
			req.FeatureUpdates = append(req.FeatureUpdates, u)
			resp := w.mustRoundTrip(req).(*kmsg.UpdateFeaturesResponse)
			if protocol.ErrorCode(resp.ErrorCode) == protocol.ClusterAuthorizationFailed && len(resp.Results) != 0 {
				t.Errorf("UpdateFeatures refused with results %+v", resp.Results)
			}
			return adminOutcome{code: protocol.ErrorCode(resp.ErrorCode), data: len(resp.Results) > 0}
		}, adminOutcome{code: protocol.ClusterAuthorizationFailed}, adminOutcome{protocol.None, true}},
	} {
		user := fmt.Sprintf("admin-case-%d", i)
		w := dialWireAs(t, b, user)
		if got := c.call(w); got != c.denied {
			t.Errorf("%s without the ACL: %s (data %v), want %s (data %v)", c.name, got.code, got.data, c.denied.code, c.denied.data)
		}
		grant := c.needs
		grant.PatternType, grant.Principal, grant.Host, grant.Permission = acl.PatternLiteral, "User:"+user, acl.Wildcard, acl.PermissionAllow
		admin.createACLs(grant)
		if got := c.call(w); got != c.allowed {
			t.Errorf("%s with %s: %s (data %v), want %s (data %v)", c.name, grant, got.code, got.data, c.allowed.code, c.allowed.data)
		}
	}

	// Config resources are authorized one by one, in their places, with
	// Kafka's messages; what Kafka's broker checks before its controller
	// authorizes is still answered first.
	w := dialWireAs(t, b, "mixed")
	admin.createACLs(allow(acl.ResourceTopic, "conf", "User:mixed", acl.OpDescribeConfigs))
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dreq.SetVersion(4)
	for _, name := range []string{"other", "conf"} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
		dreq.Resources = append(dreq.Resources, rr)
	}
	dres := w.mustRoundTrip(dreq).(*kmsg.DescribeConfigsResponse).Resources
	if len(dres) != 2 || dres[0].ResourceName != "other" || dres[0].ErrorMessage == nil ||
		*dres[0].ErrorMessage != "Topic authorization failed." || len(dres[0].Configs) != 0 ||
		dres[1].ResourceName != "conf" || dres[1].ErrorCode != 0 || len(dres[1].Configs) == 0 {
		t.Errorf("DescribeConfigs of a denied and an allowed topic: %+v", dres)
	}

	ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ireq.SetVersion(1)
	add := func(typ kmsg.ConfigResourceType, name string, kv ...string) {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[i], &kv[i+1]
			rr.Configs = append(rr.Configs, c)
		}
		ireq.Resources = append(ireq.Resources, rr)
	}
	add(kmsg.ConfigResourceTypeTopic, "conf", "retention.ms", "1", "retention.ms", "2")
	add(kmsg.ConfigResourceTypeBroker, "77", "leader.replication.throttled.rate", "1")
	add(kmsg.ConfigResourceTypeBrokerLogger, node, rootLogger, "INFO")
	add(kmsg.ConfigResourceTypeTopic, "other", "retention.ms", "1")
	ires := w.mustRoundTrip(ireq).(*kmsg.IncrementalAlterConfigsResponse).Resources
	wantIAC := []struct {
		code protocol.ErrorCode
		msg  string
	}{
		{protocol.InvalidRequest, "Error due to duplicate config keys"},
		{protocol.InvalidRequest, "Unexpected broker id, expected " + node + ", but received 77"},
		{protocol.ClusterAuthorizationFailed, ""},
		{protocol.TopicAuthorizationFailed, "Topic authorization failed."},
	}
	for i, r := range ires {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if i >= len(wantIAC) || protocol.ErrorCode(r.ErrorCode) != wantIAC[i].code || msg != wantIAC[i].msg {
			t.Errorf("IncrementalAlterConfigs resource %d (%s) by a principal without ALTER_CONFIGS: %s %q", i, r.ResourceName,
				protocol.ErrorCode(r.ErrorCode), msg)
		}
	}
}

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
