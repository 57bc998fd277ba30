package configs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ValidateTopic checks a topic's config overrides as Kafka's controller does
// for CreateTopics, AlterConfigs and IncrementalAlterConfigs, and returns the
// first problem in Kafka's words:
//
//   - a name that is not a topic config: "Unknown topic config name: foo"
//     (ErrUnknownConfig);
//   - a value that does not parse or is out of range, e.g. "Invalid value abc
//     for configuration retention.ms: Not a number of type LONG";
//   - min.compaction.lag.ms above max.compaction.lag.ms, each taken from
//     configs or else from its default. Kafka takes the missing one from the
//     broker's effective value; a caller that needs that exactly can check
//     the resolved TopicValues;
//   - remote.storage.enable=true: Gregor has no tiered storage, which Kafka
//     reports as a broker with tiered storage disabled.
//
// All errors wrap ErrInvalidConfig.
func ValidateTopic(configs map[string]string) error {
	names := make([]string, 0, len(configs))
	for name := range configs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := topicByName[name]; !ok {
			return newError(ErrUnknownConfig, name, "Unknown topic config name: "+name)
		}
	}
	values := make(map[string]parsed, len(configs))
	for _, d := range topicDefs {
		raw, ok := configs[d.Name]
		if !ok {
			continue
		}
		p, err := d.parse(raw)
		if err != nil {
			return err
		}
		values[d.Name] = p
	}
	minLag := topicValue(values, "min.compaction.lag.ms").i
	maxLag := topicValue(values, "max.compaction.lag.ms").i
	if minLag > maxLag {
		return newError(ErrInvalidConfig, "", "conflict topic config setting min.compaction.lag.ms ("+
			strconv.FormatInt(minLag, 10)+") > max.compaction.lag.ms ("+strconv.FormatInt(maxLag, 10)+")")
	}
	if topicValue(values, "remote.storage.enable").b {
		return newError(ErrInvalidConfig, "remote.storage.enable",
			"Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")
	}
	return nil
}

// topicValue is values[name], or the config's parsed default.
func topicValue(values map[string]parsed, name string) parsed {
	if p, ok := values[name]; ok {
		return p
	}
	d := topicByName[name]
	p, _ := d.parse(d.Default)
	return p
}

// ValidateTopicNullable is ValidateTopic for configs as CreateTopics carries
// them, where a value may be null. Kafka rejects a topic with any null
// value, naming all of them: "Null value not supported for topic configs:
// a,b" (ErrNullValue; CreateTopics answers INVALID_CONFIG). Otherwise it
// returns the configs without pointers.
func ValidateTopicNullable(configs map[string]*string) (map[string]string, error) {
	var nulls []string
	out := make(map[string]string, len(configs))
	for name, v := range configs {
		if v == nil {
			nulls = append(nulls, name)
			continue
		}
		out[name] = *v
	}
	if len(nulls) > 0 {
		sort.Strings(nulls)
		return nil, newError(ErrNullValue, strings.Join(nulls, ","),
			"Null value not supported for topic configs: "+strings.Join(nulls, ","))
	}
	if err := ValidateTopic(out); err != nil {
		return nil, err
	}
	return out, nil
}

// ValidateBroker checks broker configs for the given scope as Kafka does.
//
// Names the catalogue does not know are accepted, as Kafka accepts custom
// configs in both the static config and dynamic updates. Known names must
// parse and pass their validator. For dynamic scopes, read-only configs are
// refused first, then values are checked, then (ScopeClusterDefault)
// per-broker configs are refused:
//
//	Cannot update these configs dynamically: [node.id]
//	Cannot update these configs at default cluster level, broker id must be specified: [listeners]
//
// Both wrap ErrReadOnly. Kafka answers failed dynamic broker changes with
// INVALID_REQUEST.
func ValidateBroker(configs map[string]string, scope Scope) error {
	names := make([]string, 0, len(configs))
	for name := range configs {
		names = append(names, name)
	}
	sort.Strings(names)
	if scope != ScopeStatic {
		var readOnly []string
		for _, name := range names {
			if d, ok := brokerByName[name]; ok && d.Update == UpdateReadOnly {
				readOnly = append(readOnly, name)
			}
		}
		if len(readOnly) > 0 {
			return newError(ErrReadOnly, strings.Join(readOnly, ","),
				"Cannot update these configs dynamically: "+javaSet(readOnly))
		}
	}
	for _, name := range names {
		if d, ok := brokerByName[name]; ok {
			if _, err := d.parse(configs[name]); err != nil {
				return err
			}
		}
		if err := validateListenerConfig(name, configs[name]); err != nil {
			return err
		}
	}
	if scope == ScopeClusterDefault {
		var perBroker []string
		for _, name := range names {
			if d, ok := brokerByName[name]; ok && d.Update == UpdatePerBroker {
				perBroker = append(perBroker, name)
			}
		}
		if len(perBroker) > 0 {
			return newError(ErrReadOnly, strings.Join(perBroker, ","),
				"Cannot update these configs at default cluster level, broker id must be specified: "+javaSet(perBroker))
		}
	}
	return nil
}

// ListenerConnectionCreationRate is the key of a listener's own
// max.connection.creation.rate; listener is the listener's name in any
// case (Kafka's config prefix takes it in lower case).
func ListenerConnectionCreationRate(listener string) string {
	return "listener.name." + strings.ToLower(listener) + ".max.connection.creation.rate"
}

// validateListenerConfig checks a listener's max.connection.creation.rate
// (listener.name.<listener>.max.connection.creation.rate) as Kafka's
// ListenerConnectionQuota does: an int above 0. Other listener-prefixed
// names are left alone, as custom configs.
func validateListenerConfig(name, value string) error {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return nil
	}
	const key = "max.connection.creation.rate"
	if _, base, ok := strings.Cut(rest, "."); !ok || base != key {
		return nil
	}
	p, err := brokerByName[key].parse(value)
	if err != nil {
		return newError(ErrInvalidConfig, name, fmt.Sprintf("Invalid value %s for configuration %s: Not a number of type INT", value, name))
	}
	if p.i <= 0 {
		return newError(ErrInvalidConfig, name, fmt.Sprintf("Invalid %s %d", key, p.i))
	}
	return nil
}
