package broker

// IncrementalAlterConfigs (key 44), versions 0-1.
//
// SET, DELETE, APPEND and SUBTRACT on TOPIC and BROKER resources, applied
// with configs.IncrementalAlter / IncrementalAlterBroker inside one
// read-modify-write of the registry (cluster.UpdateTopicConfigs /
// UpdateBrokerConfigs), so concurrent changes to one resource never lose one
// another. Checks and messages follow Kafka's broker and controller, in
// their order:
//
//   - a resource named twice in the request: INVALID_REQUEST for each
//     ("Each resource must appear at most once.");
//   - a config named twice, then a null value on anything but DELETE:
//     INVALID_REQUEST, for every resource type, as Kafka's broker checks
//     them first; an unknown operation: INVALID_REQUEST;
//   - TOPIC: APPEND or SUBTRACT on a config that is not a LIST is
//     INVALID_CONFIG; then the empty name is INVALID_REQUEST, an illegal one
//     INVALID_TOPIC_EXCEPTION; then the resulting configs are checked with
//     configs.ValidateTopic (INVALID_CONFIG); then the topic's existence
//     (UNKNOWN_TOPIC_OR_PARTITION);
//   - BROKER: the name is this broker's id or empty (the cluster-wide
//     default), else INVALID_REQUEST; APPEND or SUBTRACT on a broker config
//     that is not a LIST, or unknown, is INVALID_CONFIG; the resulting configs
//     failing configs.ValidateBroker at that scope is INVALID_REQUEST, as
//     Kafka answers (KAFKA-13609).
//   - BROKER_LOGGER: after Kafka's checks of the name (this broker's id),
//     SET and DELETE of the components' log levels (see loggers.go).
//   - GROUP: SET and DELETE of a group's configs (group_configs.go).
//     CLIENT_METRICS is not served yet (INVALID_REQUEST); other types are
//     "Unknown resource type N".
//
// validate_only stops before writing. Once any resource changed, the local
// logs are brought in line with the new values before the response.
//
// Each resource needs ALTER_CONFIGS on what governs it: the cluster for
// BROKER, BROKER_LOGGER and CLIENT_METRICS, else the topic or group. It is
// checked where Kafka checks it: after the duplicate and null checks, and
// for BROKER after the name, before the resulting configs are validated
// (Kafka 4.4 answers a read-only broker config without the ACL
// CLUSTER_AUTHORIZATION_FAILED); a BROKER_LOGGER is authorized before its
// name is looked at. A denied resource gets
// CLUSTER_, TOPIC_ or GROUP_AUTHORIZATION_FAILED with Kafka's message for
// the code (none for BROKER_LOGGER, which Kafka's broker answers itself).

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/protocol"
)

var incrementalAlterConfigsAPI = handler{key: 44, min: 0, max: 1, handle: (*Broker).handleIncrementalAlterConfigs}

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	keys := make([]configResourceKey, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = configResourceKey{rr.ResourceType, rr.ResourceName}
	}
	b.alterEach(keys, func(i int) (bool, error) {
		return b.incrementalAlter(ctx, c, req.Resources[i], req.ValidateOnly)
	}, func(i int, err error) {
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = keys[i].typ, keys[i].name
		if err != nil {
			setConfigsError(&out.ErrorCode, &out.ErrorMessage, err)
		}
		resp.Resources = append(resp.Resources, out)
	})
	return resp, nil
}

// incrementalAlter checks and, unless validateOnly, applies one resource's
// operations for c's principal. It reports whether it wrote.
func (b *Broker) incrementalAlter(ctx context.Context, c *conn, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (bool, error) {
	ops := make([]configs.Op, len(rr.Configs))
	for i, rc := range rr.Configs {
		ops[i] = configs.Op{Name: rc.Name, Op: configs.OpType(rc.Op), Value: rc.Value}
	}
	if err := malformedIncrementalOps(ops); err != nil {
		return false, err
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics:
		if err := c.authorizedToAlterConfigs(rr.ResourceType, rr.ResourceName); err != nil {
			return false, err
		}
	case kmsg.ConfigResourceTypeBrokerLogger:
		if c.authorizedToAlterConfigs(rr.ResourceType, rr.ResourceName) != nil {
			return false, &topicError{code: protocol.ClusterAuthorizationFailed}
		}
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		return b.incrementalAlterTopic(ctx, rr.ResourceName, ops, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		return b.incrementalAlterBroker(ctx, c, rr.ResourceName, ops, validateOnly)
	case kmsg.ConfigResourceTypeBrokerLogger:
		if err := b.checkBrokerLoggerAlterName(rr.ResourceName); err != nil {
			return false, err
		}
		return false, b.alterLoggers(rr.Configs, validateOnly)
	case kmsg.ConfigResourceTypeGroupConfig:
		return b.incrementalAlterGroup(ctx, rr.ResourceName, ops, validateOnly)
	case kmsg.ConfigResourceTypeClientMetrics:
		return false, unsupportedResource(rr.ResourceType)
	}
	return false, newTopicError(protocol.InvalidRequest, "Unknown resource type %d", rr.ResourceType)
}

func (b *Broker) incrementalAlterTopic(ctx context.Context, name string, ops []configs.Op, validateOnly bool) (bool, error) {
	t := b.cluster.Snapshot().Topics[name]
	var current map[string]string
	if t != nil {
		current = t.Configs
	}
	_, err := configs.IncrementalAlter(current, ops)
	// Kafka's broker refuses malformed operations and its controller then
	// refuses APPEND/SUBTRACT on non-lists before it looks at the name;
	// the values are validated after the name, the existence last.
	if err != nil && (errors.Is(err, configs.ErrInvalidRequest) || listOpRejected(ops, configs.Topic)) {
		return false, topicConfigError(err)
	}
	if err := checkAlterTopicName(name); err != nil {
		return false, err
	}
	if err != nil {
		return false, topicConfigError(err)
	}
	if t == nil {
		return false, unknownTopicError(name)
	}
	if validateOnly {
		return false, nil
	}
	err = b.cluster.UpdateTopicConfigs(ctx, name, func(cur map[string]string) (map[string]string, error) {
		return configs.IncrementalAlter(cur, ops)
	})
	if err != nil {
		return false, configWriteError(err, name, topicConfigError)
	}
	return true, nil
}

func (b *Broker) incrementalAlterBroker(ctx context.Context, c *conn, name string, ops []configs.Op, validateOnly bool) (bool, error) {
	node, scope, err := b.alterBrokerTarget(name)
	if err != nil {
		return false, err
	}
	mapErr := func(err error) error { return incrementalBrokerError(err, ops) }
	if err := c.authorizedToAlterConfigs(kmsg.ConfigResourceTypeBroker, name); err != nil {
		return false, err
	}
	if _, err := configs.IncrementalAlterBroker(b.cluster.Snapshot().BrokerConfigs[node], ops, scope); err != nil {
		return false, mapErr(err)
	}
	if validateOnly {
		return false, nil
	}
	err = b.cluster.UpdateBrokerConfigs(ctx, node, func(cur map[string]string) (map[string]string, error) {
		return configs.IncrementalAlterBroker(cur, ops, scope)
	})
	if err != nil {
		return false, configWriteError(err, "", mapErr)
	}
	return true, nil
}

// malformedIncrementalOps is what Kafka's broker refuses in any resource
// before anything else about it, authorization included: a config named
// twice, then null values on anything but DELETE (all of them named, in
// request order). Both are INVALID_REQUEST with the messages configs uses
// for them.
func malformedIncrementalOps(ops []configs.Op) error {
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Name] {
			return newTopicError(protocol.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[op.Name] = true
	}
	var nulls []string
	for _, op := range ops {
		if op.Op != configs.OpDelete && op.Value == nil {
			nulls = append(nulls, op.Name)
		}
	}
	if len(nulls) > 0 {
		return newTopicError(protocol.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	return nil
}

// incrementalBrokerError maps an IncrementalAlterBroker error to Kafka's
// code: INVALID_REQUEST for malformed operations and for configs that fail
// validation, but INVALID_CONFIG for APPEND or SUBTRACT on a config that is
// not a LIST, which the broker checks first and reports as such.
func incrementalBrokerError(err error, ops []configs.Op) error {
	if !errors.Is(err, configs.ErrInvalidRequest) && listOpRejected(ops, configs.Broker) {
		return configError(err)
	}
	return brokerValidationError(err)
}

// listOpRejected reports whether an APPEND or SUBTRACT names a config that
// lookup does not know or that is not a LIST. IncrementalAlter and
// IncrementalAlterBroker refuse such an operation before validating
// anything else, so when they fail and this holds, that was the failure.
func listOpRejected(ops []configs.Op, lookup func(string) (*configs.Def, bool)) bool {
	for _, op := range ops {
		if op.Op != configs.OpAppend && op.Op != configs.OpSubtract {
			continue
		}
		if d, ok := lookup(op.Name); !ok || d.Type != configs.TypeList {
			return true
		}
	}
	return false
}

// checkBrokerLoggerAlterName applies Kafka's check of the name of a
// BROKER_LOGGER resource being altered (RuntimeLoggerManager), whose
// messages differ from DescribeConfigs'. Kafka's mismatch message prints its
// own id twice; this one prints the id received.
func (b *Broker) checkBrokerLoggerAlterName(name string) error {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return newTopicError(protocol.InvalidRequest, "Node id must be an integer, but it is: %s", name)
	}
	if int32(id) != b.cfg.NodeID {
		return newTopicError(protocol.InvalidRequest, "Unexpected node id. Expected %d, but received %s", b.cfg.NodeID, name)
	}
	return nil
}
