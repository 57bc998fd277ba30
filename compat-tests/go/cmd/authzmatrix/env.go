package main

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// Names of the resources the matrix uses. A fresh broker is started for each
// run, so they need no run-unique prefix, and fixed names keep the outputs of
// the two brokers comparable line by line.
const (
	topic        = "authz-topic"                      // 1 partition, records, the groups' offsets
	topicDelete  = "authz-topic-delete"               // DeleteTopics
	topicRecords = "authz-topic-records"              // DeleteRecords
	topicNew     = "authz-topic-new"                  // CreateTopics
	group        = "authz-group"                      // committed offsets on topic, no members
	groupDelete  = "authz-group-delete"               // DeleteGroups
	groupOffDel  = "authz-group-offdel"               // OffsetDelete
	groupClassic = "authz-group-classic"              // JoinGroup and the rest of the classic protocol
	groupCG      = "authz-group-cg"                   // ConsumerGroupHeartbeat/Describe
	groupShare   = "authz-group-share"                // ShareGroupHeartbeat/Describe
	groupTxn     = "authz-group-txn"                  // AddOffsetsToTxn, TxnOffsetCommit
	txnID        = "authz-txn"                        // initialized by the admin; bob's requests use its producer id
	txnIDBob     = "authz-txn-bob"                    // InitProducerId as bob
	shareMember  = "authzmatrix-share-member-0000000" // the member of groupShare
	topicAuto    = "authz-topic-auto"                 // created by Metadata-autocreate when allowed
	topicMissing = "authz-topic-missing"              // never created, nor the two below
	groupMissing = "authz-group-missing"
	txnIDMissing = "authz-txn-missing"
)

// env holds the two clients: the admin's on the super-user listener and
// bob's on the SASL listener, of which only one connection (the seed
// broker's) is used, so that kgo never routes or retries bob's requests.
type env struct {
	admin     *kgo.Client
	adm       *kadm.Client
	bob       *kgo.Client
	bobOld    *kgo.Client // AddPartitionsToTxn pinned to v3 (the last client version), Produce and Fetch to v12, OffsetCommit to v9 (the last naming topics)
	user      string
	topicID   [16]byte
	recID     [16]byte
	delID     [16]byte
	pid       int64 // of txnID
	epoch     int16
	idemPID   int64 // an idempotent (not transactional) producer's
	idemEpoch int16
	memberCG  string
}

func newEnv(ctx context.Context, adminAddr, saslAddr, user, password string) (*env, error) {
	e := &env{user: user, memberCG: "authzmatrix-cg-member-0000000000"}
	var err error
	e.admin, err = kgo.NewClient(kgo.SeedBrokers(adminAddr), kgo.RequestRetries(20))
	if err != nil {
		return nil, err
	}
	e.adm = kadm.NewClient(e.admin)
	mech := plain.Auth{User: user, Pass: password}.AsMechanism()
	e.bob, err = kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.SASL(mech), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.AddPartitionsToTxn), 3)
	v.SetMaxKeyVersion(int16(kmsg.Produce), 12)
	v.SetMaxKeyVersion(int16(kmsg.Fetch), 12)
	v.SetMaxKeyVersion(int16(kmsg.OffsetCommit), 9)
	e.bobOld, err = kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.SASL(mech), kgo.RequestRetries(0), kgo.MaxVersions(v))
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	e.bob.Close()
	e.bobOld.Close()
	e.admin.Close()
}

// principal is the ACL principal of the user under test.
func (e *env) principal() string { return "User:" + e.user }

// send sends req as the user under test on its one connection.
func (e *env) send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cl := e.bob
	if req.Key() == int16(kmsg.AddPartitionsToTxn) {
		cl = e.bobOld
	}
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// sendOld sends req on the connection of pinned versions (bobOld).
func (e *env) sendOld(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return e.bobOld.SeedBrokers()[0].Request(ctx, req)
}

// adminReq sends req as the admin, retrying retriable errors as kgo does.
func (e *env) adminReq(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return e.admin.Request(ctx, req)
}

// setup creates, as the admin, every resource the matrix reads or changes.
func (e *env) setup(ctx context.Context) error {
	if err := e.clearACLs(ctx); err != nil {
		return err
	}
	for _, t := range []string{topic, topicDelete, topicRecords} {
		r, err := e.adm.CreateTopic(ctx, 1, 1, nil, t)
		if err != nil {
			return fmt.Errorf("create topic %s: %w", t, err)
		}
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", t, r.Err)
		}
	}
	// Records on the topics, so that Fetch, ListOffsets, DeleteRecords and
	// DescribeProducers have something to read.
	for _, t := range []string{topic, topicRecords} {
		for i := 0; i < 3; i++ {
			r := &kgo.Record{Topic: t, Value: []byte(fmt.Sprintf("record-%d", i))}
			if err := e.admin.ProduceSync(ctx, r).FirstErr(); err != nil {
				return fmt.Errorf("produce to %s: %w", t, err)
			}
		}
	}
	md, err := e.adm.Metadata(ctx, topic, topicRecords, topicDelete)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	e.topicID = md.Topics[topic].ID
	e.recID = md.Topics[topicRecords].ID
	e.delID = md.Topics[topicDelete].ID
	// Committed offsets of groups without members.
	for _, g := range []string{group, groupDelete, groupOffDel} {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
		r, err := e.adm.CommitOffsets(ctx, g, os)
		if err != nil {
			return fmt.Errorf("commit offsets of %s: %w", g, err)
		}
		if err := r.Error(); err != nil {
			return fmt.Errorf("commit offsets of %s: %w", g, err)
		}
	}
	// An idempotent producer id for bob's idempotent batch.
	idem := kmsg.NewPtrInitProducerIDRequest()
	idem.TransactionTimeoutMillis = 60000
	resp, err := e.adminReq(ctx, idem)
	if err != nil {
		return fmt.Errorf("init idempotent producer id: %w", err)
	}
	ir := resp.(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		return fmt.Errorf("init idempotent producer id: %w", kerr.ErrorForCode(ir.ErrorCode))
	}
	e.idemPID, e.idemEpoch = ir.ProducerID, ir.ProducerEpoch
	// A transactional id with a producer id and epoch, which bob's
	// transactional requests present.
	init := kmsg.NewPtrInitProducerIDRequest()
	tid := txnID
	init.TransactionalID = &tid
	init.TransactionTimeoutMillis = 60000
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := e.adminReq(ctx, init)
		if err != nil {
			return fmt.Errorf("init producer id: %w", err)
		}
		r := resp.(*kmsg.InitProducerIDResponse)
		if r.ErrorCode == 0 {
			e.pid, e.epoch = r.ProducerID, r.ProducerEpoch
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("init producer id: %w", kerr.ErrorForCode(r.ErrorCode))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// acl is one binding: by default a LITERAL one that ALLOWs the user under
// test from any host.
type acl struct {
	rt        kmsg.ACLResourceType
	name      string
	op        kmsg.ACLOperation
	prefixed  bool   // PREFIXED pattern instead of LITERAL
	deny      bool   // DENY instead of ALLOW
	principal string // instead of the user under test ("User:*", another user)
	host      string // instead of "*"
}

// aclCase is a named set of ACLs granted to the user before the request.
type aclCase struct {
	name string
	acls []acl
}

func (ac aclCase) describe(*env) string {
	if len(ac.acls) == 0 {
		return "-"
	}
	var s []string
	for _, a := range ac.acls {
		d := fmt.Sprintf("%s:%s:%s", a.rt, a.name, a.op)
		if a.prefixed {
			d += ":PREFIXED"
		}
		if a.deny {
			d += ":DENY"
		}
		if a.principal != "" {
			d += ":" + a.principal
		}
		if a.host != "" {
			d += ":host=" + a.host
		}
		s = append(s, d)
	}
	return strings.Join(s, ",")
}

// check is one API of the matrix: the cases beside "none", and the request.
type check struct {
	api   string
	cases []aclCase
	run   func(ctx context.Context, e *env) result
}

// runCase grants the case's ACLs, waits until the authorizer shows them,
// runs the request and clears the ACLs again.
func (e *env) runCase(ctx context.Context, c check, ac aclCase) (string, error) {
	if err := e.grant(ctx, ac.acls); err != nil {
		return "", err
	}
	res := c.run(ctx, e)
	if err := e.clearACLs(ctx); err != nil {
		return "", err
	}
	return res.String(), nil
}

func (e *env) grant(ctx context.Context, acls []acl) error {
	if len(acls) == 0 {
		return nil
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType = a.rt
		c.ResourceName = a.name
		c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
		if a.prefixed {
			c.ResourcePatternType = kmsg.ACLResourcePatternTypePrefixed
		}
		c.Principal = e.principal()
		if a.principal != "" {
			c.Principal = a.principal
		}
		c.Host = "*"
		if a.host != "" {
			c.Host = a.host
		}
		c.Operation = a.op
		c.PermissionType = kmsg.ACLPermissionTypeAllow
		if a.deny {
			c.PermissionType = kmsg.ACLPermissionTypeDeny
		}
		req.Creations = append(req.Creations, c)
	}
	resp, err := e.adminReq(ctx, req)
	if err != nil {
		return fmt.Errorf("create acls: %w", err)
	}
	for _, r := range resp.(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			return fmt.Errorf("create acls: %w", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	return e.waitACLs(ctx, len(acls))
}

// clearACLs deletes every ACL and waits until none is described.
func (e *env) clearACLs(ctx context.Context) error {
	req := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType = kmsg.ACLResourceTypeAny
	f.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	f.Operation = kmsg.ACLOperationAny
	f.PermissionType = kmsg.ACLPermissionTypeAny
	req.Filters = append(req.Filters, f)
	resp, err := e.adminReq(ctx, req)
	if err != nil {
		return fmt.Errorf("delete acls: %w", err)
	}
	for _, r := range resp.(*kmsg.DeleteACLsResponse).Results {
		if r.ErrorCode != 0 {
			return fmt.Errorf("delete acls: %w", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	return e.waitACLs(ctx, 0)
}

// waitACLs polls DescribeAcls until it shows n bindings.
func (e *env) waitACLs(ctx context.Context, n int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType = kmsg.ACLResourceTypeAny
		req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
		req.Operation = kmsg.ACLOperationAny
		req.PermissionType = kmsg.ACLPermissionTypeAny
		resp, err := e.adminReq(ctx, req)
		if err != nil {
			return fmt.Errorf("describe acls: %w", err)
		}
		r := resp.(*kmsg.DescribeACLsResponse)
		got := 0
		for _, res := range r.Resources {
			got += len(res.ACLs)
		}
		if r.ErrorCode == 0 && got == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("describe acls: %d bindings, want %d (error code %d)", got, n, r.ErrorCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// result is what one request came back with, rendered as key=value pairs in
// the order they were added.
type result struct{ kv []string }

func (r *result) add(key, val string) { r.kv = append(r.kv, key+"="+val) }

func (r *result) code(key string, c int16) { r.add(key, codeName(c)) }

func (r *result) ops(key string, ops int32) { r.add(key, opsNames(ops)) }

func (r result) String() string {
	if len(r.kv) == 0 {
		return "-"
	}
	return strings.Join(r.kv, " ")
}

// errResult renders a request that got no answer: the connection closed, the
// API not served, or a timeout.
func errResult(err error) result {
	var r result
	var ne net.Error
	switch {
	case errors.Is(err, kgo.ErrClientClosed):
		r.add("err", "client-closed")
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		r.add("err", "timeout")
	case strings.Contains(err.Error(), "too old"):
		r.add("err", "unsupported")
	default:
		r.add("err", "closed")
	}
	return r
}

func codeName(c int16) string {
	if c == 0 {
		return "NONE"
	}
	if err := kerr.ErrorForCode(c); err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return ke.Message
		}
	}
	return fmt.Sprintf("CODE_%d", c)
}

// opsNames renders an authorized-operations bit field.
func opsNames(ops int32) string {
	if ops == math.MinInt32 {
		return "omitted"
	}
	var names []string
	for i := 0; i < 31; i++ {
		if ops&(1<<i) != 0 {
			names = append(names, strings.ToUpper(kmsg.ACLOperation(i).String()))
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "[]"
	}
	return "[" + strings.Join(names, ",") + "]"
}

// batch is a record batch of one record (magic 2, no compression, no
// producer id), the smallest valid Produce payload.
func batch(value string, producerID int64, epoch int16, transactional bool) []byte {
	var rec []byte
	rec = append(rec, 0)             // attributes
	rec = kbin.AppendVarlong(rec, 0) // timestamp delta
	rec = kbin.AppendVarint(rec, 0)  // offset delta
	rec = kbin.AppendVarint(rec, -1) // null key
	rec = kbin.AppendVarint(rec, int32(len(value)))
	rec = append(rec, value...)
	rec = kbin.AppendVarint(rec, 0) // headers
	records := kbin.AppendVarint(nil, int32(len(rec)))
	records = append(records, rec...)

	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      0,
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           producerID,
		ProducerEpoch:        epoch,
		FirstSequence:        -1,
		NumRecords:           1,
		Records:              records,
	}
	if producerID >= 0 {
		b.FirstSequence = 0
	}
	if transactional {
		b.Attributes = 0x10
	}
	out := b.AppendTo(nil)
	// Length counts what follows it (offset 12 on); the CRC-32C covers
	// everything after the CRC (offset 21 on).
	kbin.AppendInt32(out[:8], int32(len(out)-12))
	crc := crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli))
	kbin.AppendInt32(out[:17], int32(crc))
	return out
}

// topicExists asks the admin whether a topic exists, polling for up to wait
// while it does not.
func (e *env) topicExists(ctx context.Context, name string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		md, err := e.adm.Metadata(ctx, name)
		if err == nil {
			if t, ok := md.Topics[name]; ok && t.Err == nil {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// shareAssigned heartbeats as the share group member that just joined
// (first its join's response) until it is assigned a partition, for up to
// 15 s.
func (e *env) shareAssigned(ctx context.Context, hr *kmsg.ShareGroupHeartbeatResponse) bool {
	deadline := time.Now().Add(15 * time.Second)
	for {
		if hr.Assignment != nil && len(hr.Assignment.TopicPartitions) > 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID = groupShare
		req.MemberID = shareMember
		req.MemberEpoch = hr.MemberEpoch
		resp, err := e.send(ctx, req)
		if err != nil {
			return false
		}
		next := resp.(*kmsg.ShareGroupHeartbeatResponse)
		if next.ErrorCode != 0 {
			return false
		}
		next.MemberEpoch = max(next.MemberEpoch, hr.MemberEpoch)
		hr = next
	}
}
