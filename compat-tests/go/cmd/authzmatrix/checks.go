package main

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The matrix is split by concept: checks_data.go (produce, fetch, offsets,
// metadata), checks_missing.go (resources that do not exist),
// checks_groups.go, checks_admin.go (topics, configs, ACLs, the cluster,
// credentials, quotas), checks_txn.go and checks_share.go. checks() below
// puts their parts in the output order.

// Shorthands for the ACL tables.
const (
	rtTopic   = kmsg.ACLResourceTypeTopic
	rtGroup   = kmsg.ACLResourceTypeGroup
	rtCluster = kmsg.ACLResourceTypeCluster
	rtTxn     = kmsg.ACLResourceTypeTransactionalId

	opRead          = kmsg.ACLOperationRead
	opWrite         = kmsg.ACLOperationWrite
	opCreate        = kmsg.ACLOperationCreate
	opDelete        = kmsg.ACLOperationDelete
	opAlter         = kmsg.ACLOperationAlter
	opDescribe      = kmsg.ACLOperationDescribe
	opClusterAction = kmsg.ACLOperationClusterAction
	opDescConfigs   = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs  = kmsg.ACLOperationAlterConfigs
	opIdemWrite     = kmsg.ACLOperationIdempotentWrite
)

const clusterName = "kafka-cluster"

func one(name string, acls ...acl) aclCase { return aclCase{name: name, acls: acls} }

func on(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) acl {
	return acl{rt: rt, name: name, op: op}
}

func cluster(op kmsg.ACLOperation) acl { return acl{rt: rtCluster, name: clusterName, op: op} }

// Variations of one binding.
func prefixed(a acl) acl               { a.prefixed = true; return a }
func deny(a acl) acl                   { a.deny = true; return a }
func forPrincipal(p string, a acl) acl { a.principal = p; return a }
func fromHost(h string, a acl) acl     { a.host = h; return a }

func str(s string) *string { return &s }

// checks is the matrix, in output order. Where an API changes state when
// allowed (a commit, a deletion, a transaction step), the allowed case comes
// last and later APIs do not depend on what it did, or depend on it the same
// way on both brokers; the order of the parts below is part of that (the
// missing-resource rows, for one, come before Metadata-autocreate creates
// its topic, and Metadata-all before both). The needed ACLs are those of the
// "Operations and Resources on Protocols" table of Kafka's security
// documentation.
func checks() []check {
	return slices.Concat(
		dataChecks(),
		missingResourceChecks(),
		autoCreateChecks(),
		groupChecks(),
		topicAdminChecks(),
		configChecks(),
		txnChecks(),
		aclChecks(),
		clusterChecks(),
		consumerGroupChecks(),
		shareChecks(),
		streamsGroupChecks(),
		quorumChecks(),
		credentialChecks(),
		quotaChecks(),
		featureChecks(),
	)
}

// errorOnly sends req as the user under test and records the one error code
// of its response, which code picks out, as error=.
func errorOnly[R kmsg.Response](ctx context.Context, e *env, req kmsg.Request, code func(R) int16) result {
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	r.code("error", code(resp.(R)))
	return r
}
