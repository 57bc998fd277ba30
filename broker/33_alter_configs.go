package broker

// AlterConfigs (key 33), versions 0-2.
//
// The legacy, non-incremental config change: a resource's configs become
// exactly the ones listed, and dynamic configs not listed are removed, as in
// Kafka. Checks follow Kafka's broker (ConfigAdminManager) and then its
// controller (ControllerConfigurationValidator, ConfigurationControlManager),
// in their order and with their messages:
//
//   - a resource named twice in the request: INVALID_REQUEST for each
//     ("Each resource must appear at most once.");
//   - a config named twice, or with a null value: INVALID_REQUEST;
//   - TOPIC: the empty name is INVALID_REQUEST, an illegal one
//     INVALID_TOPIC_EXCEPTION; the configs are checked with
//     configs.ValidateTopic (INVALID_CONFIG with Kafka's message) before the
//     topic's existence (UNKNOWN_TOPIC_OR_PARTITION);
//   - BROKER: the name is this broker's id (its per-broker configs) or empty
//     (the cluster-wide default), else INVALID_REQUEST; the configs are
//     checked with configs.ValidateBroker at that scope, and a failure is
//     INVALID_REQUEST, as Kafka answers (KAFKA-13609);
//   - GROUP: the group's configs become the ones listed, checked as a whole
//     (group_configs.go); the empty name is INVALID_REQUEST;
//   - any other type: INVALID_REQUEST ("Unknown resource type 8" for
//     BROKER_LOGGER, which this API never took); CLIENT_METRICS is not
//     served yet ("Unsupported resource type: CLIENT_METRICS").
//
// validate_only stops before writing. A change is one etcd transaction per
// resource; once any resource changed, the local logs are brought in line
// with the new values before the response.
//
// Each resource needs ALTER_CONFIGS on what governs it (the cluster for
// BROKER and CLIENT_METRICS, else the topic or group), checked where
// Kafka checks it: after the checks of the request's shape above (and for
// BROKER of its name), before the configs are validated: Kafka 4.4
// answers a read-only broker config without the ACL
// CLUSTER_AUTHORIZATION_FAILED (compat-tests/authz). A denied resource gets CLUSTER_, TOPIC_ or
// GROUP_AUTHORIZATION_FAILED with Kafka's message for the code.

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/coordinator/acl"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

var alterConfigsAPI = handler{key: 33, min: 0, max: 2, handle: (*Broker).handleAlterConfigs}

func (b *Broker) handleAlterConfigs(ctx context.Context, c *conn, _ protocol.RequestHeader, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	keys := make([]configResourceKey, len(req.Resources))
	for i, rr := range req.Resources {
		keys[i] = configResourceKey{rr.ResourceType, rr.ResourceName}
	}
	b.alterEach(keys, func(i int) (bool, error) {
		return b.replaceConfigs(ctx, c, req.Resources[i], req.ValidateOnly)
	}, func(i int, err error) {
		out := kmsg.NewAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = keys[i].typ, keys[i].name
		if err != nil {
			setConfigsError(&out.ErrorCode, &out.ErrorMessage, err)
		}
		resp.Resources = append(resp.Resources, out)
	})
	return resp, nil
}

// alterEach runs an AlterConfigs-like request, keys naming its resources
// in order: every copy of a resource named twice is refused, each other
// resource goes to alter (which reports whether it wrote), and answer gets
// each resource's outcome in order. Once any resource changed, the local
// logs are brought in line with the new values, before the response.
func (b *Broker) alterEach(keys []configResourceKey, alter func(i int) (bool, error), answer func(i int, err error)) {
	dup := duplicateResources(keys)
	changed := false
	for i, k := range keys {
		var err error
		if dup[k] {
			err = errDuplicateResource
		} else {
			var wrote bool
			wrote, err = alter(i)
			changed = changed || wrote
		}
		answer(i, err)
	}
	if changed {
		b.applyConfigChanges()
	}
}

// replaceConfigs checks and, unless validateOnly, writes one resource's new
// config set for c's principal. It reports whether it wrote.
func (b *Broker) replaceConfigs(ctx context.Context, c *conn, rr kmsg.AlterConfigsRequestResource, validateOnly bool) (bool, error) {
	set, err := legacyConfigSet(rr.Configs)
	if err != nil {
		return false, err
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics:
		if err := c.authorizedToAlterConfigs(rr.ResourceType, rr.ResourceName); err != nil {
			return false, err
		}
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		name := rr.ResourceName
		if err := checkAlterTopicName(name); err != nil {
			return false, err
		}
		if err := configs.ValidateTopic(set); err != nil {
			return false, topicConfigError(err)
		}
		if b.cluster.Snapshot().Topics[name] == nil {
			return false, unknownTopicError(name)
		}
		if validateOnly {
			return false, nil
		}
		if err := b.cluster.SetTopicConfigs(ctx, name, set); err != nil {
			return false, configWriteError(err, name, topicConfigError)
		}
		return true, nil

	case kmsg.ConfigResourceTypeBroker:
		node, scope, err := b.alterBrokerTarget(rr.ResourceName)
		if err != nil {
			return false, err
		}
		if err := c.authorizedToAlterConfigs(rr.ResourceType, rr.ResourceName); err != nil {
			return false, err
		}
		if err := configs.ValidateBroker(set, scope); err != nil {
			return false, brokerValidationError(err)
		}
		if validateOnly {
			return false, nil
		}
		if err := b.cluster.SetBrokerConfigs(ctx, node, set); err != nil {
			return false, configWriteError(err, "", brokerValidationError)
		}
		return true, nil

	case kmsg.ConfigResourceTypeGroupConfig:
		return b.replaceGroupConfigs(ctx, rr.ResourceName, set, validateOnly)

	case kmsg.ConfigResourceTypeClientMetrics:
		return false, unsupportedResource(rr.ResourceType)
	}
	return false, newTopicError(protocol.InvalidRequest, "Unknown resource type %d", rr.ResourceType)
}

// authorizedToAlterConfigs checks ALTER_CONFIGS on what governs a config
// resource (configResourceACL), and returns its error when denied.
func (c *conn) authorizedToAlterConfigs(t kmsg.ConfigResourceType, name string) error {
	rt, n := configResourceACL(t, name)
	if !c.authorized(acl.OpAlterConfigs, rt, n) {
		return configsDenied(rt)
	}
	return nil
}

// legacyConfigSet turns an AlterConfigs resource's configs into a map,
// refusing what Kafka's broker refuses before anything else: a config named
// twice, and null values (all of them named, in request order).
func legacyConfigSet(in []kmsg.AlterConfigsRequestResourceConfig) (map[string]string, error) {
	set := make(map[string]string, len(in))
	var nulls []string
	for _, c := range in {
		if _, ok := set[c.Name]; ok {
			return nil, newTopicError(protocol.InvalidRequest, "Error due to duplicate config keys")
		}
		set[c.Name] = ""
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		set[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return nil, newTopicError(protocol.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	return set, nil
}

// configResourceKey identifies a resource of a config request, for the check
// that none appears twice.
type configResourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// errDuplicateResource is Kafka's answer for every copy of a resource named
// more than once in one AlterConfigs or IncrementalAlterConfigs request.
var errDuplicateResource = &topicError{code: protocol.InvalidRequest, msg: "Each resource must appear at most once."}

// duplicateResources returns the keys that appear more than once.
func duplicateResources(keys []configResourceKey) map[configResourceKey]bool {
	seen := make(map[configResourceKey]bool, len(keys))
	dup := map[configResourceKey]bool{}
	for _, k := range keys {
		if seen[k] {
			dup[k] = true
		}
		seen[k] = true
	}
	return dup
}

// checkAlterTopicName applies the controller's checks of a TOPIC resource
// name being altered.
func checkAlterTopicName(name string) error {
	if name == "" {
		return newTopicError(protocol.InvalidRequest, "Default topic resources are not allowed.")
	}
	if err := validTopicName(name); err != nil {
		return newTopicError(protocol.InvalidTopicException, "%v", err)
	}
	return nil
}

// alterBrokerTarget checks the name of a BROKER resource being altered, as
// Kafka's broker does: empty for the cluster-wide default, else this broker's
// id. It returns the node id the configs are kept under (-1 for the default)
// and the scope they are validated for.
func (b *Broker) alterBrokerTarget(name string) (int32, configs.Scope, error) {
	if name == "" {
		return -1, configs.ScopeClusterDefault, nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return 0, 0, newTopicError(protocol.InvalidRequest, "Node id must be an integer, but it is: %s", name)
	}
	if int32(id) != b.cfg.NodeID {
		return 0, 0, newTopicError(protocol.InvalidRequest, "Unexpected broker id, expected %d, but received %s", b.cfg.NodeID, name)
	}
	return b.cfg.NodeID, configs.ScopePerBroker, nil
}

// topicConfigError maps a topic config error: INVALID_CONFIG, or
// INVALID_REQUEST for a malformed request.
func topicConfigError(err error) error { return configError(err) }

// brokerValidationError maps a failed check of dynamic broker configs: Kafka
// answers INVALID_REQUEST with the message (KAFKA-13609).
func brokerValidationError(err error) error {
	return newTopicError(protocol.InvalidRequest, "%v", err)
}

// unknownTopicError is the controller's answer for a config change to a
// topic that does not exist.
func unknownTopicError(name string) error {
	return newTopicError(protocol.UnknownTopicOrPartition, "The topic '%s' does not exist.", name)
}

// configWriteError maps an error of a registry config write: the topic gone
// meanwhile, a config error (mapped with onConfig) from an update function
// run again after a conflicting write, a write not visible in time.
func configWriteError(err error, topic string, onConfig func(error) error) error {
	var ce *configs.Error
	switch {
	case errors.Is(err, cluster.ErrUnknownTopic):
		return unknownTopicError(topic)
	case errors.As(err, &ce):
		return onConfig(ce)
	case errors.Is(err, cluster.ErrNotVisible):
		return newTopicError(protocol.RequestTimedOut, "%v", err)
	}
	return err
}

// applyConfigChanges brings the local logs in line with changed configs
// before the response, so that the change is already true here when the
// client hears of it; the metadata watch would apply it too, later.
func (b *Broker) applyConfigChanges() {
	if err := b.syncPartitions(b.cluster.Snapshot()); err != nil {
		b.logger.Error("applying changed configs failed", "err", err)
	}
}
