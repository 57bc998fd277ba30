package main

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicAdminChecks: creating and deleting topics, adding partitions and
// deleting records.
func topicAdminChecks() []check {
	return []check{
		{api: "CreateTopics", cases: []aclCase{
			one("topic-create", on(rtTopic, topicNew, opCreate)),
			one("topic-create+topic-describeconfigs", on(rtTopic, topicNew+"-2", opCreate), on(rtTopic, topicNew+"-2", opDescConfigs)),
			one("cluster-create", cluster(opCreate)),
		},
			run: func(ctx context.Context, e *env) result {
				// Each case creates a topic of its own; the
				// validate-only requests change nothing. The names are
				// asked for in turn: the first the cases have not
				// created yet.
				var r result
				for _, name := range []string{topicNew, topicNew + "-2", topicNew + "-3"} {
					req := kmsg.NewPtrCreateTopicsRequest()
					req.TimeoutMillis = 10000
					t := kmsg.NewCreateTopicsRequestTopic()
					t.Topic = name
					t.NumPartitions = 1
					t.ReplicationFactor = 1
					req.Topics = append(req.Topics, t)
					resp, err := e.send(ctx, req)
					if err != nil {
						return errResult(err)
					}
					for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
						r.code(name, t.ErrorCode)
						r.code(name+"/configs", t.ConfigErrorCode)
					}
				}
				return r
			}},
		{api: "DeleteTopics", cases: []aclCase{one("topic-delete", on(rtTopic, topicDelete, opDelete))},
			run: func(ctx context.Context, e *env) result {
				return deleteTopic(ctx, e, topicDelete)
			}},
		{api: "CreatePartitions", cases: []aclCase{one("topic-alter", on(rtTopic, topic, opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.TimeoutMillis = 10000
				req.ValidateOnly = true
				t := kmsg.NewCreatePartitionsRequestTopic()
				t.Topic = topic
				t.Count = 2
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.CreatePartitionsResponse).Topics {
					r.code("topic", t.ErrorCode)
				}
				return r
			}},
		{api: "DeleteRecords", cases: []aclCase{one("topic-delete", on(rtTopic, topicRecords, opDelete))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDeleteRecordsRequest()
				req.TimeoutMillis = 10000
				t := kmsg.NewDeleteRecordsRequestTopic()
				t.Topic = topicRecords
				p := kmsg.NewDeleteRecordsRequestTopicPartition()
				p.Offset = 1
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.DeleteRecordsResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
	}
}

// configReq is the request of a config check.
type configReq int

const (
	describeReq    configReq = iota // DescribeConfigs
	alterReq                        // AlterConfigs, validate only
	incrementalReq                  // IncrementalAlterConfigs (SET), validate only
)

// configRow is one config check: req on one resource, which for the alters
// sets key to value.
type configRow struct {
	api        string
	cases      []aclCase
	req        configReq
	rt         kmsg.ConfigResourceType
	name       string
	key, value string
}

// configChecks: describing and altering the configs of topics, the broker,
// its loggers and groups.
func configChecks() []check {
	const (
		topicRT  = kmsg.ConfigResourceTypeTopic
		brokerRT = kmsg.ConfigResourceTypeBroker
		loggerRT = kmsg.ConfigResourceTypeBrokerLogger
		groupRT  = kmsg.ConfigResourceTypeGroupConfig
	)
	var (
		clusterDescribe = []aclCase{one("cluster-describeconfigs", cluster(opDescConfigs))}
		clusterAlter    = []aclCase{one("cluster-alterconfigs", cluster(opAlterConfigs))}
		topicAlter      = []aclCase{one("topic-alterconfigs", on(rtTopic, topic, opAlterConfigs))}
	)
	rows := []configRow{
		{api: "DescribeConfigs-topic", req: describeReq, rt: topicRT, name: topic, cases: []aclCase{
			one("topic-describeconfigs", on(rtTopic, topic, opDescConfigs)),
			one("topic-alterconfigs", on(rtTopic, topic, opAlterConfigs)),
			one("topic-describe", on(rtTopic, topic, opDescribe)),
		}},
		{api: "DescribeConfigs-broker", req: describeReq, rt: brokerRT, name: "1", cases: clusterDescribe},
		{api: "DescribeConfigs-broker-logger", req: describeReq, rt: loggerRT, name: "1", cases: clusterDescribe},
		{api: "DescribeConfigs-group", req: describeReq, rt: groupRT, name: group,
			cases: []aclCase{one("group-describeconfigs", on(rtGroup, group, opDescConfigs))}},
		// The root logger to INFO.
		{api: "IncrementalAlterConfigs-broker-logger", req: incrementalReq, rt: loggerRT, name: "1", key: "root", value: "INFO", cases: clusterAlter},
		{api: "AlterConfigs-topic", req: alterReq, rt: topicRT, name: topic, key: "retention.ms", value: "3600000", cases: topicAlter},
		{api: "AlterConfigs-broker", req: alterReq, rt: brokerRT, name: "1", key: "log.retention.ms", value: "604800000", cases: clusterAlter},
		// A static key: which comes first, the check of the key or of
		// the ACL.
		{api: "AlterConfigs-broker-readonly", req: alterReq, rt: brokerRT, name: "1", key: "log.dirs", value: "/tmp/authzmatrix", cases: clusterAlter},
		{api: "IncrementalAlterConfigs-broker-readonly", req: incrementalReq, rt: brokerRT, name: "1", key: "log.dirs", value: "/tmp/authzmatrix", cases: clusterAlter},
		{api: "IncrementalAlterConfigs-topic", req: incrementalReq, rt: topicRT, name: topic, key: "retention.ms", value: "3600000", cases: topicAlter},
		{api: "IncrementalAlterConfigs-broker", req: incrementalReq, rt: brokerRT, name: "1", key: "log.retention.ms", value: "604800000", cases: clusterAlter},
		{api: "IncrementalAlterConfigs-group", req: incrementalReq, rt: groupRT, name: group, key: "consumer.session.timeout.ms", value: "45000",
			cases: []aclCase{one("group-alterconfigs", on(rtGroup, group, opAlterConfigs))}},
	}
	cs := make([]check, 0, len(rows))
	for _, row := range rows {
		cs = append(cs, check{api: row.api, cases: row.cases, run: row.run})
	}
	return cs
}

func (c configRow) run(ctx context.Context, e *env) result {
	switch c.req {
	case alterReq:
		return alterConfigs(ctx, e, c.rt, c.name, c.key, c.value)
	case incrementalReq:
		return incrementalAlterConfigs(ctx, e, c.rt, c.name, c.key, c.value)
	default:
		return describeConfigs(ctx, e, c.rt, c.name)
	}
}

// aclChecks: describing, creating and deleting ACLs.
func aclChecks() []check {
	return []check{
		{api: "DescribeAcls", cases: []aclCase{one("cluster-describe", cluster(opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeACLsRequest()
				req.ResourceType = kmsg.ACLResourceTypeAny
				req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
				req.Operation = kmsg.ACLOperationAny
				req.PermissionType = kmsg.ACLPermissionTypeAny
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.DescribeACLsResponse)
				var r result
				r.code("error", dr.ErrorCode)
				r.add("resources", itoa(len(dr.Resources)))
				return r
			}},
		{api: "CreateAcls", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrCreateACLsRequest()
				c := kmsg.NewCreateACLsRequestCreation()
				c.ResourceType = rtTopic
				c.ResourceName = "authz-acl-topic"
				c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
				c.Principal = "User:carol"
				c.Host = "*"
				c.Operation = opRead
				c.PermissionType = kmsg.ACLPermissionTypeAllow
				req.Creations = append(req.Creations, c)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, c := range resp.(*kmsg.CreateACLsResponse).Results {
					r.code("creation", c.ErrorCode)
				}
				return r
			}},
		{api: "DeleteAcls", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDeleteACLsRequest()
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType = rtTopic
				f.ResourceName = str("authz-acl-topic")
				f.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
				f.Operation = kmsg.ACLOperationAny
				f.PermissionType = kmsg.ACLPermissionTypeAny
				req.Filters = append(req.Filters, f)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, f := range resp.(*kmsg.DeleteACLsResponse).Results {
					r.code("filter", f.ErrorCode)
					r.add("matches", itoa(len(f.MatchingACLs)))
				}
				return r
			}},
	}
}

// clusterChecks: describing the cluster and its log dirs, moving replicas
// and leaders.
func clusterChecks() []check {
	return []check{
		{api: "DescribeCluster", cases: []aclCase{
			one("cluster-describe", cluster(opDescribe)),
			one("cluster-alter", cluster(opAlter)),
			one("cluster-all", cluster(kmsg.ACLOperationAll)),
			one("cluster-alterconfigs", cluster(opAlterConfigs)),
			one("cluster-all+deny-idempotentwrite", cluster(kmsg.ACLOperationAll), deny(cluster(opIdemWrite))),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeClusterRequest()
				req.IncludeClusterAuthorizedOperations = true
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.DescribeClusterResponse)
				var r result
				r.code("error", dr.ErrorCode)
				r.ops("ops", dr.ClusterAuthorizedOperations)
				return r
			}},
		{api: "DescribeLogDirs", cases: []aclCase{one("cluster-describe", cluster(opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeLogDirsRequest()
				t := kmsg.NewDescribeLogDirsRequestTopic()
				t.Topic = topic
				t.Partitions = []int32{0}
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.DescribeLogDirsResponse)
				var r result
				r.code("error", dr.ErrorCode)
				n := 0
				for _, d := range dr.Dirs {
					r.code("dir", d.ErrorCode)
					for _, t := range d.Topics {
						n += len(t.Partitions)
					}
				}
				r.add("partitions", itoa(n))
				return r
			}},
		{api: "AlterReplicaLogDirs", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				// A log dir the broker does not have: once
				// authorized, LOG_DIR_NOT_FOUND.
				req := kmsg.NewPtrAlterReplicaLogDirsRequest()
				d := kmsg.NewAlterReplicaLogDirsRequestDir()
				d.Dir = "/authzmatrix/no-such-dir"
				dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
				dt.Topic = topic
				dt.Partitions = []int32{0}
				d.Topics = append(d.Topics, dt)
				req.Dirs = append(req.Dirs, d)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, t := range resp.(*kmsg.AlterReplicaLogDirsResponse).Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "ElectLeaders", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrElectLeadersRequest()
				req.TimeoutMillis = 10000
				t := kmsg.NewElectLeadersRequestTopic()
				t.Topic = topic
				t.Partitions = []int32{0}
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				er := resp.(*kmsg.ElectLeadersResponse)
				var r result
				r.code("error", er.ErrorCode)
				for _, t := range er.Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "AlterPartitionReassignments", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				// Cancel a reassignment that is not in progress:
				// once authorized, NO_REASSIGNMENT_IN_PROGRESS.
				req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
				req.TimeoutMillis = 10000
				t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
				t.Topic = topic
				p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
				p.Replicas = nil
				t.Partitions = append(t.Partitions, p)
				req.Topics = append(req.Topics, t)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				ar := resp.(*kmsg.AlterPartitionAssignmentsResponse)
				var r result
				r.code("error", ar.ErrorCode)
				for _, t := range ar.Topics {
					for _, p := range t.Partitions {
						r.code("p0", p.ErrorCode)
					}
				}
				return r
			}},
		{api: "ListPartitionReassignments", cases: []aclCase{one("cluster-describe", cluster(opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrListPartitionReassignmentsRequest()
				req.TimeoutMillis = 10000
				return errorOnly(ctx, e, req, func(r *kmsg.ListPartitionReassignmentsResponse) int16 { return r.ErrorCode })
			}},
	}
}

// quorumChecks: DescribeQuorum, of the KRaft metadata quorum.
func quorumChecks() []check {
	return []check{
		{api: "DescribeQuorum", cases: []aclCase{one("cluster-describe", cluster(opDescribe))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeQuorumRequest()
				t := kmsg.NewDescribeQuorumRequestTopic()
				t.Topic = "__cluster_metadata"
				t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
				req.Topics = append(req.Topics, t)
				return errorOnly(ctx, e, req, func(r *kmsg.DescribeQuorumResponse) int16 { return r.ErrorCode })
			}},
	}
}

// credentialChecks: delegation tokens and SCRAM credentials.
func credentialChecks() []check {
	return []check{
		{api: "CreateDelegationToken", cases: []aclCase{
			one("cluster-all", cluster(kmsg.ACLOperationAll)),
		},
			run: func(ctx context.Context, e *env) result {
				// For itself: no ACL is needed; neither broker has
				// delegation.token.secret.key, so tokens are off.
				req := kmsg.NewPtrCreateDelegationTokenRequest()
				req.MaxLifetimeMillis = -1
				return errorOnly(ctx, e, req, func(r *kmsg.CreateDelegationTokenResponse) int16 { return r.ErrorCode })
			}},
		{api: "CreateDelegationToken-other-owner", cases: []aclCase{
			one("user-createtokens", on(kmsg.ACLResourceTypeUser, "User:alice", kmsg.ACLOperationCreateTokens)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrCreateDelegationTokenRequest()
				req.OwnerPrincipalType = str("User")
				req.OwnerPrincipalName = str("alice")
				req.MaxLifetimeMillis = -1
				return errorOnly(ctx, e, req, func(r *kmsg.CreateDelegationTokenResponse) int16 { return r.ErrorCode })
			}},
		{api: "DescribeDelegationToken", cases: []aclCase{
			one("user-describetokens", on(kmsg.ACLResourceTypeUser, "User:alice", kmsg.ACLOperationDescribeTokens)),
		},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeDelegationTokenRequest()
				req.Owners = []kmsg.DescribeDelegationTokenRequestOwner{{PrincipalType: "User", PrincipalName: "alice"}}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.DescribeDelegationTokenResponse)
				var r result
				r.code("error", dr.ErrorCode)
				r.add("tokens", itoa(len(dr.TokenDetails)))
				return r
			}},
		{api: "DescribeUserScramCredentials", cases: []aclCase{one("cluster-describe", cluster(opDescribe))},
			run: func(ctx context.Context, e *env) result {
				// A named user, not users=null (all): Kafka 4.4
				// answers a denied users=null with no response (a
				// NullPointerException building the error response).
				req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
				req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "authz-carol"}}
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				dr := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
				var r result
				r.code("error", dr.ErrorCode)
				for _, u := range dr.Results {
					r.code("user", u.ErrorCode)
				}
				return r
			}},
		{api: "AlterUserScramCredentials", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
				d.Name = "authz-carol"
				d.Mechanism = 1
				req.Deletions = append(req.Deletions, d)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, u := range resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
					r.code("user", u.ErrorCode)
				}
				return r
			}},
	}
}

// quotaChecks: describing and altering client quotas.
func quotaChecks() []check {
	return []check{
		{api: "DescribeClientQuotas", cases: []aclCase{one("cluster-describeconfigs", cluster(opDescConfigs))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrDescribeClientQuotasRequest()
				return errorOnly(ctx, e, req, func(r *kmsg.DescribeClientQuotasResponse) int16 { return r.ErrorCode })
			}},
		{api: "AlterClientQuotas", cases: []aclCase{one("cluster-alterconfigs", cluster(opAlterConfigs))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrAlterClientQuotasRequest()
				req.ValidateOnly = true
				en := kmsg.NewAlterClientQuotasRequestEntry()
				en.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: str("authz-carol")}}
				op := kmsg.NewAlterClientQuotasRequestEntryOp()
				op.Key = "producer_byte_rate"
				op.Value = 1048576
				en.Ops = append(en.Ops, op)
				req.Entries = append(req.Entries, en)
				resp, err := e.send(ctx, req)
				if err != nil {
					return errResult(err)
				}
				var r result
				for _, en := range resp.(*kmsg.AlterClientQuotasResponse).Entries {
					r.code("entity", en.ErrorCode)
				}
				return r
			}},
	}
}

// featureChecks: UpdateFeatures and ListConfigResources.
func featureChecks() []check {
	return []check{
		{api: "UpdateFeatures", cases: []aclCase{one("cluster-alter", cluster(opAlter))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrUpdateFeaturesRequest()
				req.TimeoutMillis = 10000
				req.ValidateOnly = true
				return errorOnly(ctx, e, req, func(r *kmsg.UpdateFeaturesResponse) int16 { return r.ErrorCode })
			}},
		{api: "ListConfigResources", cases: []aclCase{one("cluster-describeconfigs", cluster(opDescConfigs))},
			run: func(ctx context.Context, e *env) result {
				req := kmsg.NewPtrListConfigResourcesRequest()
				return errorOnly(ctx, e, req, func(r *kmsg.ListConfigResourcesResponse) int16 { return r.ErrorCode })
			}},
	}
}

// deleteTopic deletes one topic, named in both TopicNames (up to v5) and
// Topics (v6 on), whichever the version sends.
func deleteTopic(ctx context.Context, e *env, name string) result {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 10000
	t := kmsg.NewDeleteTopicsRequestTopic()
	t.Topic = str(name)
	req.Topics = append(req.Topics, t)
	req.TopicNames = []string{name}
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, t := range resp.(*kmsg.DeleteTopicsResponse).Topics {
		r.code("topic", t.ErrorCode)
	}
	return r
}

func describeConfigs(ctx context.Context, e *env, rt kmsg.ConfigResourceType, name string) result {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = rt
	res.ResourceName = name
	req.Resources = append(req.Resources, res)
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, res := range resp.(*kmsg.DescribeConfigsResponse).Resources {
		r.code("resource", res.ErrorCode)
	}
	return r
}

func alterConfigs(ctx context.Context, e *env, rt kmsg.ConfigResourceType, name, key, val string) result {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = true
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType = rt
	res.ResourceName = name
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name = key
	c.Value = &val
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, res := range resp.(*kmsg.AlterConfigsResponse).Resources {
		r.code("resource", res.ErrorCode)
	}
	return r
}

func incrementalAlterConfigs(ctx context.Context, e *env, rt kmsg.ConfigResourceType, name, key, val string) result {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = true
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = rt
	res.ResourceName = name
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name = key
	c.Value = &val
	c.Op = kmsg.IncrementalAlterConfigOpSet
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := e.send(ctx, req)
	if err != nil {
		return errResult(err)
	}
	var r result
	for _, res := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		r.code("resource", res.ErrorCode)
	}
	return r
}
