package broker

// DescribeConfigs (key 32), versions 1-4.
//
// Describes TOPIC and BROKER resources as Kafka's broker (ConfigHelper)
// does. A topic lists every topic config, resolved over the topic's
// overrides, this broker's dynamic configs, the cluster-wide dynamic
// defaults and the static config (configs.Resolve); an illegal name is
// INVALID_TOPIC_EXCEPTION, an unknown topic UNKNOWN_TOPIC_OR_PARTITION. A
// BROKER resource named by this broker's id lists every broker config of the
// catalogue (but the dynamic-only replication throttle rates, listed only
// where set, as Kafka lists them) and every other name set at some level; the empty name, the
// cluster-wide default, lists only the names set there (configs.ResolveBroker).
// Another broker's id, or a name that is not a number, is INVALID_REQUEST
// with Kafka's message.
//
// The static level is reportedStaticConfigs: a static setting at Kafka's
// default is reported as DEFAULT_CONFIG, as a Kafka broker reports only what
// its server.properties sets; one the operator set to Kafka's default value
// is DEFAULT_CONFIG here and STATIC_BROKER_CONFIG on Kafka.
//
// config_names null or empty asks for everything; names that are not there
// are left out, as Kafka does. Sensitive entries (PASSWORD configs, and broker
// names the catalogue does not know, whose type Kafka cannot tell either)
// have a null value and null synonym values. read_only is false for topic
// configs and true for broker configs that cannot change at run time.
// Synonyms come with include_synonyms (v1+), documentation with
// include_documentation (v3+), config_type from v3. Entries are sorted by
// name; Kafka's order is a hash map's. Unlike a Kafka broker, a topic config's
// synonyms and source name the broker setting that supplies the value even
// when it is a secondary synonym (log.retention.hours for retention.ms), as
// Kafka's controller reports them (see configs.Resolve).
//
// BROKER_LOGGER lists the components' loggers and their levels (see
// loggers.go), after Kafka's checks of the name (this broker's id). GROUP
// lists a group's configs (group_configs.go). Not served: CLIENT_METRICS
// gets INVALID_REQUEST ("Unsupported resource type: ..."). A
// resource type Kafka does not know fails the whole request: every resource
// gets INVALID_REQUEST with Kafka's default message, as Kafka's error
// response does.
//
// Each resource needs DESCRIBE_CONFIGS on what governs it, checked before
// anything else about it: the cluster for BROKER, BROKER_LOGGER and
// CLIENT_METRICS, the topic for TOPIC, the group for GROUP. A denied
// resource gets CLUSTER_, TOPIC_ or GROUP_AUTHORIZATION_FAILED with Kafka's
// message for the code, and no configs. Kafka lists the denied resources
// after the others; here every resource keeps its place in the request.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var describeConfigsAPI = handler{key: 32, min: 1, max: 4, handle: (*Broker).handleDescribeConfigs}

// invalidRequestMessage is Kafka's text for INVALID_REQUEST, which its
// whole-request error responses carry.
const invalidRequestMessage = "This most likely occurs because of a request being malformed by the client " +
	"library or the message was sent to an incompatible broker. See the broker logs for more details."

func (b *Broker) handleDescribeConfigs(_ context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		if resourceTypeName(rr.ResourceType) == "UNKNOWN" {
			for _, rr := range req.Resources {
				out := kmsg.NewDescribeConfigsResponseResource()
				out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
				setConfigsError(&out.ErrorCode, &out.ErrorMessage, newTopicError(protocol.InvalidRequest, invalidRequestMessage))
				resp.Resources = append(resp.Resources, out)
			}
			return resp, nil
		}
	}
	md := b.cluster.Snapshot()
	for _, rr := range req.Resources {
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if rt, name := configResourceACL(rr.ResourceType, rr.ResourceName); !c.authorized(acl.OpDescribeConfigs, rt, name) {
			setConfigsError(&out.ErrorCode, &out.ErrorMessage, configsDenied(rt))
			resp.Resources = append(resp.Resources, out)
			continue
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			out.Configs, err = b.describeTopicConfigs(md, rr, req.IncludeSynonyms, req.IncludeDocumentation)
		case kmsg.ConfigResourceTypeBroker:
			out.Configs, err = b.describeBrokerConfigs(md, rr, req.IncludeSynonyms, req.IncludeDocumentation)
		case kmsg.ConfigResourceTypeBrokerLogger:
			if err = b.checkBrokerLoggerName(rr.ResourceName); err == nil {
				out.Configs = b.describeLoggers(rr.ConfigNames)
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			out.Configs, err = b.describeGroupConfigs(md, rr, req.IncludeSynonyms, req.IncludeDocumentation)
		default:
			err = unsupportedResource(rr.ResourceType)
		}
		if err != nil {
			out.Configs = nil
			setConfigsError(&out.ErrorCode, &out.ErrorMessage, err)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp, nil
}

// describeTopicConfigs lists a topic's configs.
func (b *Broker) describeTopicConfigs(md *cluster.Metadata, rr kmsg.DescribeConfigsRequestResource,
	withSynonyms, withDocs bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if err := validTopicName(rr.ResourceName); err != nil {
		return nil, newTopicError(protocol.InvalidTopicException, "%v", err)
	}
	t := md.Topics[rr.ResourceName]
	if t == nil {
		// Kafka sets no message here.
		return nil, &topicError{code: protocol.UnknownTopicOrPartition}
	}
	wanted := configNameFilter(rr.ConfigNames)
	dynamic, clusterDefault, static := md.BrokerConfigs[b.cfg.NodeID], md.BrokerConfigs[-1], b.reportedStaticConfigs()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, d := range configs.Topics() {
		if !wanted(d.Name) {
			continue
		}
		v, src, syns := configs.Resolve(d.Name, t.Configs, dynamic, clusterDefault, static)
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = d.Name
		if !d.Sensitive && (src != configs.SourceDefault || !d.NullDefault) {
			c.Value = &v
		}
		c.Source = kmsg.ConfigSource(src)
		c.IsDefault = src == configs.SourceDefault
		c.IsSensitive = d.Sensitive
		c.ConfigType = kmsg.ConfigType(d.Type)
		if withDocs {
			doc := d.Doc
			c.Documentation = &doc
		}
		if withSynonyms {
			c.ConfigSynonyms = synonymsOut(syns, d.Sensitive)
		}
		out = append(out, c)
	}
	return out, nil
}

// describeBrokerConfigs lists this broker's configs, or the cluster-wide
// defaults for the empty name.
func (b *Broker) describeBrokerConfigs(md *cluster.Metadata, rr kmsg.DescribeConfigsRequestResource,
	withSynonyms, withDocs bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	perBroker := rr.ResourceName != ""
	if perBroker {
		id, err := strconv.ParseInt(rr.ResourceName, 10, 32)
		if err != nil {
			return nil, newTopicError(protocol.InvalidRequest, "Broker id must be an integer, but it is: %s", rr.ResourceName)
		}
		if int32(id) != b.cfg.NodeID {
			return nil, newTopicError(protocol.InvalidRequest,
				"Unexpected broker id, expected %d or empty string, but received %s", b.cfg.NodeID, rr.ResourceName)
		}
	}
	dynamic, clusterDefault, static := md.BrokerConfigs[b.cfg.NodeID], md.BrokerConfigs[-1], b.reportedStaticConfigs()
	names := map[string]bool{}
	levels := []map[string]string{clusterDefault}
	if perBroker {
		for _, d := range configs.Brokers() {
			// Dynamic-only configs (the replication throttle rates) are
			// listed where they are set, as Kafka lists them.
			if !d.DynamicOnly {
				names[d.Name] = true
			}
		}
		levels = append(levels, dynamic, static)
	}
	for _, level := range levels {
		for name := range level {
			names[name] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for name := range names {
		sorted = append(sorted, name)
	}
	sort.Strings(sorted)

	wanted := configNameFilter(rr.ConfigNames)
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range sorted {
		if !wanted(name) {
			continue
		}
		v, null, src, syns := configs.ResolveBroker(name, perBroker, dynamic, clusterDefault, static)
		d, known := configs.Broker(name)
		sensitive := !known || d.Sensitive
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = name
		if !null && !sensitive {
			c.Value = &v
		}
		c.Source = kmsg.ConfigSource(src)
		c.IsDefault = src == configs.SourceDefault
		c.IsSensitive = sensitive
		// Kafka reports its dynamic-only configs read-only too: its
		// DescribeConfigs checks the reconfigurable KafkaConfig settings,
		// which they are not among.
		c.ReadOnly = !known || d.Update == configs.UpdateReadOnly || d.DynamicOnly
		c.ConfigType = kmsg.ConfigTypeUnknown
		if known {
			c.ConfigType = kmsg.ConfigType(d.Type)
			if withDocs {
				doc := d.Doc
				c.Documentation = &doc
			}
		}
		if withSynonyms {
			c.ConfigSynonyms = synonymsOut(syns, sensitive)
		}
		out = append(out, c)
	}
	return out, nil
}

// reportedStaticConfigs are the static broker configs as DescribeConfigs
// reports them: staticConfigs, which topic configs resolve over, plus the
// settings the broker runs with that only DescribeConfigs shows (broker.id,
// the group coordinator's), less every value equal to Kafka's default
// (configs.ReportedStatic). So a setting is STATIC_BROKER_CONFIG when the
// operator set it to something else than Kafka's default, or when Gregor
// runs with a default of its own (log.flush.interval.messages=1, the
// classic group protocol only); effective values are the same either way.
func (b *Broker) reportedStaticConfigs() map[string]string {
	s := b.staticConfigs()
	g := b.cfg.Groups
	more := map[string]string{
		"broker.id":                                        fmt.Sprint(b.cfg.NodeID),
		"broker.session.timeout.ms":                        fmt.Sprint(b.cfg.SessionTimeout.Milliseconds()),
		"offsets.topic.num.partitions":                     fmt.Sprint(b.cfg.OffsetsTopicNumPartitions),
		"offsets.topic.replication.factor":                 fmt.Sprint(b.cfg.OffsetsTopicReplicationFactor),
		"offsets.topic.segment.bytes":                      fmt.Sprint(b.cfg.OffsetsTopicSegmentBytes),
		"group.min.session.timeout.ms":                     fmt.Sprint(g.MinSessionTimeout.Milliseconds()),
		"group.max.session.timeout.ms":                     fmt.Sprint(g.MaxSessionTimeout.Milliseconds()),
		"group.initial.rebalance.delay.ms":                 fmt.Sprint(g.InitialRebalanceDelay.Milliseconds()),
		"group.max.size":                                   fmt.Sprint(g.MaxSize),
		"offsets.retention.minutes":                        fmt.Sprint(int64(g.OffsetsRetention / time.Minute)),
		"offsets.retention.check.interval.ms":              fmt.Sprint(g.OffsetsRetentionCheckInterval.Milliseconds()),
		"offset.metadata.max.bytes":                        fmt.Sprint(g.OffsetMetadataMaxBytes),
		"group.coordinator.rebalance.protocols":            "classic,consumer,share",
		"group.consumer.session.timeout.ms":                fmt.Sprint(g.ConsumerSessionTimeout.Milliseconds()),
		"group.consumer.heartbeat.interval.ms":             fmt.Sprint(g.ConsumerHeartbeatInterval.Milliseconds()),
		"group.consumer.migration.policy":                  g.MigrationPolicy,
		"group.share.session.timeout.ms":                   fmt.Sprint(g.ShareSessionTimeout.Milliseconds()),
		"group.share.heartbeat.interval.ms":                fmt.Sprint(g.ShareHeartbeatInterval.Milliseconds()),
		"group.share.max.size":                             fmt.Sprint(g.ShareMaxSize),
		"group.share.record.lock.duration.ms":              fmt.Sprint(b.cfg.ShareRecordLockDuration.Milliseconds()),
		"group.share.delivery.count.limit":                 fmt.Sprint(b.cfg.ShareDeliveryCountLimit),
		"group.share.partition.max.record.locks":           fmt.Sprint(b.cfg.SharePartitionMaxRecordLocks),
		"group.consumer.min.session.timeout.ms":            fmt.Sprint(g.ConsumerMinSessionTimeout.Milliseconds()),
		"group.consumer.max.session.timeout.ms":            fmt.Sprint(g.ConsumerMaxSessionTimeout.Milliseconds()),
		"group.consumer.min.heartbeat.interval.ms":         fmt.Sprint(g.ConsumerMinHeartbeatInterval.Milliseconds()),
		"group.consumer.max.heartbeat.interval.ms":         fmt.Sprint(g.ConsumerMaxHeartbeatInterval.Milliseconds()),
		"group.share.min.session.timeout.ms":               fmt.Sprint(g.ShareMinSessionTimeout.Milliseconds()),
		"group.share.max.session.timeout.ms":               fmt.Sprint(g.ShareMaxSessionTimeout.Milliseconds()),
		"group.share.min.heartbeat.interval.ms":            fmt.Sprint(g.ShareMinHeartbeatInterval.Milliseconds()),
		"group.share.max.heartbeat.interval.ms":            fmt.Sprint(g.ShareMaxHeartbeatInterval.Milliseconds()),
		"group.share.min.record.lock.duration.ms":          fmt.Sprint(b.cfg.ShareMinRecordLockDuration.Milliseconds()),
		"group.share.max.record.lock.duration.ms":          fmt.Sprint(b.cfg.ShareMaxRecordLockDuration.Milliseconds()),
		"group.share.min.delivery.count.limit":             fmt.Sprint(b.cfg.ShareMinDeliveryCountLimit),
		"group.share.max.delivery.count.limit":             fmt.Sprint(b.cfg.ShareMaxDeliveryCountLimit),
		"group.share.min.partition.max.record.locks":       fmt.Sprint(b.cfg.ShareMinPartitionMaxRecordLocks),
		"group.share.max.partition.max.record.locks":       fmt.Sprint(b.cfg.ShareMaxPartitionMaxRecordLocks),
		"share.coordinator.state.topic.num.partitions":     fmt.Sprint(b.cfg.ShareStateTopicNumPartitions),
		"share.coordinator.state.topic.replication.factor": fmt.Sprint(b.cfg.ShareStateTopicReplicationFactor),
		"share.coordinator.state.topic.min.isr":            fmt.Sprint(b.cfg.ShareStateTopicMinISR),
		"share.coordinator.state.topic.segment.bytes":      fmt.Sprint(b.cfg.ShareStateTopicSegmentBytes),
		"max.connections":                                  fmt.Sprint(b.cfg.MaxConnections),
		"max.connections.per.ip":                           fmt.Sprint(b.cfg.MaxConnectionsPerIP),
		"max.connection.creation.rate":                     fmt.Sprint(b.cfg.MaxConnectionCreationRate),
		"connections.max.idle.ms":                          fmt.Sprint(b.cfg.ConnectionsMaxIdle.Milliseconds()),
		"queued.max.requests":                              fmt.Sprint(b.cfg.QueuedMaxRequests),
	}
	for _, name := range SSLConfigNames() {
		if v, _ := b.cfg.SSL.Setting(name); v != "" {
			more[name] = v
		}
	}
	tx := b.cfg.Transactions
	for k, v := range map[string]any{
		"transaction.state.log.num.partitions":                        b.cfg.TransactionStateLogNumPartitions,
		"transaction.state.log.replication.factor":                    b.cfg.TransactionStateLogReplicationFactor,
		"transaction.state.log.min.isr":                               b.cfg.TransactionStateLogMinISR,
		"transaction.state.log.segment.bytes":                         b.cfg.TransactionStateLogSegmentBytes,
		"transaction.max.timeout.ms":                                  tx.MaxTimeout.Milliseconds(),
		"transactional.id.expiration.ms":                              tx.TransactionalIDExpiration.Milliseconds(),
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": tx.AbortTimedOutInterval.Milliseconds(),
		"transaction.remove.expired.transaction.cleanup.interval.ms":  tx.RemoveExpiredInterval.Milliseconds(),
	} {
		more[k] = fmt.Sprint(v)
	}
	for k, v := range more {
		if _, set := s[k]; !set {
			s[k] = v
		}
	}
	return configs.ReportedStatic(s)
}

// checkBrokerLoggerName applies Kafka's checks of a BROKER_LOGGER name:
// this broker's id.
func (b *Broker) checkBrokerLoggerName(name string) error {
	if name == "" {
		return newTopicError(protocol.InvalidRequest, "Broker id must not be empty")
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return newTopicError(protocol.InvalidRequest, "Broker id must be an integer, but it is: %s", name)
	}
	if int32(id) != b.cfg.NodeID {
		return newTopicError(protocol.InvalidRequest, "Unexpected broker id, expected %d but received %s", b.cfg.NodeID, name)
	}
	return nil
}

// configNameFilter reports whether a config was asked for: all of them when
// names is null or empty, as in Kafka.
func configNameFilter(names []string) func(string) bool {
	if len(names) == 0 {
		return func(string) bool { return true }
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(name string) bool { return set[name] }
}

func synonymsOut(syns []configs.Synonym, sensitive bool) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	out := make([]kmsg.DescribeConfigsResponseResourceConfigConfigSynonym, 0, len(syns))
	for _, s := range syns {
		o := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		o.Name, o.Source = s.Name, kmsg.ConfigSource(s.Source)
		if !sensitive {
			v := s.Value
			o.Value = &v
		}
		out = append(out, o)
	}
	return out
}

// resourceTypeName is Kafka's name for a config resource type
// (ConfigResource.Type), UNKNOWN for a number it does not know.
func resourceTypeName(t kmsg.ConfigResourceType) string {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return "TOPIC"
	case kmsg.ConfigResourceTypeBroker:
		return "BROKER"
	case kmsg.ConfigResourceTypeBrokerLogger:
		return "BROKER_LOGGER"
	case kmsg.ConfigResourceTypeClientMetrics:
		return "CLIENT_METRICS"
	case kmsg.ConfigResourceTypeGroupConfig:
		return "GROUP"
	}
	return "UNKNOWN"
}

// unsupportedResource is the answer for a resource type Kafka serves and
// Gregor does not (yet).
func unsupportedResource(t kmsg.ConfigResourceType) error {
	return newTopicError(protocol.InvalidRequest, "Unsupported resource type: %s", resourceTypeName(t))
}

// configResourceACL is the resource whose ACLs govern a config resource
// of type t named name, as Kafka decides for DescribeConfigs and the
// AlterConfigs APIs: the cluster for BROKER, BROKER_LOGGER and
// CLIENT_METRICS, else the topic or group itself. Types without configs
// are never asked about (they fail before), and fall to the cluster.
func configResourceACL(t kmsg.ConfigResourceType, name string) (acl.ResourceType, string) {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return acl.ResourceTopic, name
	case kmsg.ConfigResourceTypeGroupConfig:
		return acl.ResourceGroup, name
	}
	return acl.ResourceCluster, acl.ClusterName
}

// configsDenied is a config resource's error when the principal may not
// describe or alter its configs: the authorization error of rt, with
// Kafka's message for that code.
func configsDenied(rt acl.ResourceType) error {
	code := authorizationError(rt)
	msg := "Cluster authorization failed."
	switch code {
	case protocol.TopicAuthorizationFailed:
		msg = "Topic authorization failed."
	case protocol.GroupAuthorizationFailed:
		msg = "Group authorization failed."
	}
	return &topicError{code: code, msg: msg}
}

// setConfigsError fills a config resource result's error code and message;
// an empty message stays null.
func setConfigsError(code *int16, msg **string, err error) {
	*code = int16(errorCode(err))
	if m := err.Error(); m != "" {
		*msg = &m
	}
}
