package broker

// Group configs (KIP-848, KIP-932): the GROUP config resource of
// DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, as `kafka-configs
// --entity-type groups` uses it. A group's configs override the broker's
// group.consumer.* and group.share.* settings for that group; they are
// kept in the registry (coordinator/cluster, configs/groups/<id>), seen by
// every broker, and may be set before the group exists, as in Kafka.
//
// The keys are Kafka 4.x's group configs that Gregor applies; Kafka's
// others (streams.*, the assignment intervals, share.renew.acknowledge.enable,
// the dead-letter queue keys) are refused as unknown. A change is checked
// on the group's whole resulting set, as Kafka's GroupConfig.validate does:
// each value against its type and the broker's bounds with Kafka 4.4's
// messages (INVALID_CONFIG), an unknown key is INVALID_CONFIG, and so is a
// session timeout not above its heartbeat interval. AlterConfigs replaces
// the group's set; IncrementalAlterConfigs takes SET and DELETE, while
// APPEND and SUBTRACT (no group config is a list) are INVALID_CONFIG. A
// resource with a duplicate key or a null value is INVALID_REQUEST.
// DescribeConfigs lists every key: DYNAMIC_GROUP_CONFIG where the group
// sets it, else the broker's value as DEFAULT_CONFIG.

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
)

// sourceDynamicGroupConfig is DescribeConfigs' source for a group config the
// group sets (Kafka's DYNAMIC_GROUP_CONFIG).
const sourceDynamicGroupConfig = 8

// groupConfigDef is one group config key.
type groupConfigDef struct {
	name string
	typ  kmsg.ConfigType
	doc  string
	// synonym is the broker setting that gives the default, "" when
	// there is none.
	synonym string
	// def is the broker's value, used when the group does not set it.
	def func(b *Broker) string
	// check validates a value: "" when it is valid, else the whole
	// message, Kafka's.
	check func(b *Broker, name, v string) string
}

// between checks an INT config: a number, at least atLeast (the type's
// bound), then within the broker's bounds for it, with Kafka's messages for
// each.
func between(atLeast int64, bounds func(b *Broker) (lo, hi int64)) func(*Broker, string, string) string {
	return func(b *Broker, name, v string) string {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return fmt.Sprintf("Invalid value %s for configuration %s: Not a number of type INT", v, name)
		}
		if n < atLeast {
			return fmt.Sprintf("Invalid value %d for configuration %s: Value must be at least %d", n, name, atLeast)
		}
		if lo, hi := bounds(b); n < lo || n > hi {
			return fmt.Sprintf("%s must be in the range %d to %d inclusive.", name, lo, hi)
		}
		return ""
	}
}

// msBounds gives between the bounds of a millisecond config.
func msBounds(bounds func(b *Broker) (lo, hi time.Duration)) func(*Broker) (int64, int64) {
	return func(b *Broker) (int64, int64) {
		lo, hi := bounds(b)
		return lo.Milliseconds(), hi.Milliseconds()
	}
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// isoDuration matches the ISO-8601 durations by_duration takes (Java's
// Duration.parse, days at most).
var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// parseISODuration parses what isoDuration matches.
func parseISODuration(s string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return 0, false
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
		if m[i+1] != "" {
			n, err := strconv.ParseInt(m[i+1], 10, 64)
			if err != nil {
				return 0, false
			}
			d += time.Duration(n) * unit
		}
	}
	if m[4] != "" {
		f, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return 0, false
		}
		d += time.Duration(f * float64(time.Second))
	}
	return d, true
}

var groupConfigDefs = []groupConfigDef{
	{name: "consumer.heartbeat.interval.ms", typ: kmsg.ConfigTypeInt,
		doc:     "The heartbeat interval given to the members of a consumer group.",
		def:     func(b *Broker) string { return ms(b.cfg.Groups.ConsumerHeartbeatInterval) },
		synonym: "group.consumer.heartbeat.interval.ms",
		check: between(1, msBounds(func(b *Broker) (time.Duration, time.Duration) {
			return b.cfg.Groups.ConsumerMinHeartbeatInterval, b.cfg.Groups.ConsumerMaxHeartbeatInterval
		}))},
	{name: "consumer.session.timeout.ms", typ: kmsg.ConfigTypeInt,
		doc:     "The timeout to detect client failures when using the consumer group protocol.",
		def:     func(b *Broker) string { return ms(b.cfg.Groups.ConsumerSessionTimeout) },
		synonym: "group.consumer.session.timeout.ms",
		check: between(1, msBounds(func(b *Broker) (time.Duration, time.Duration) {
			return b.cfg.Groups.ConsumerMinSessionTimeout, b.cfg.Groups.ConsumerMaxSessionTimeout
		}))},
	{name: "share.auto.offset.reset", typ: kmsg.ConfigTypeString,
		doc: "Where a share group starts on a partition it never consumed: latest, earliest, or by_duration:<ISO-8601 duration>.",
		def: func(*Broker) string { return "latest" },
		check: func(_ *Broker, name, v string) string {
			if v == "latest" || v == "earliest" {
				return ""
			}
			if d, ok := strings.CutPrefix(v, "by_duration:"); ok {
				if _, ok := parseISODuration(d); ok {
					return ""
				}
			}
			return fmt.Sprintf("Invalid value %s for configuration %s: Invalid value `%s` for configuration %s. "+
				"The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", v, name, v, name)
		}},
	{name: "share.delivery.count.limit", typ: kmsg.ConfigTypeInt,
		doc:     "How often a record is delivered to the members of a share group before it is archived instead of offered again.",
		def:     func(b *Broker) string { return strconv.Itoa(int(b.cfg.ShareDeliveryCountLimit)) },
		synonym: "group.share.delivery.count.limit",
		check: between(2, func(b *Broker) (int64, int64) {
			return int64(b.cfg.ShareMinDeliveryCountLimit), int64(b.cfg.ShareMaxDeliveryCountLimit)
		})},
	{name: "share.heartbeat.interval.ms", typ: kmsg.ConfigTypeInt,
		doc:     "The heartbeat interval given to the members of a share group.",
		def:     func(b *Broker) string { return ms(b.cfg.Groups.ShareHeartbeatInterval) },
		synonym: "group.share.heartbeat.interval.ms",
		check: between(1, msBounds(func(b *Broker) (time.Duration, time.Duration) {
			return b.cfg.Groups.ShareMinHeartbeatInterval, b.cfg.Groups.ShareMaxHeartbeatInterval
		}))},
	{name: "share.isolation.level", typ: kmsg.ConfigTypeString,
		doc: "read_uncommitted: share group members get every record; read_committed: records of committed transactions only.",
		def: func(*Broker) string { return "read_uncommitted" },
		check: func(_ *Broker, name, v string) string {
			if v == "read_uncommitted" || v == "read_committed" {
				return ""
			}
			return fmt.Sprintf("Invalid value %s for configuration %s: String must be one of: read_committed, read_uncommitted", v, name)
		}},
	{name: "share.partition.max.record.locks", typ: kmsg.ConfigTypeInt,
		doc:     "Most records of one partition a share group has in flight (acquired or waiting to be delivered again) at once.",
		def:     func(b *Broker) string { return strconv.Itoa(int(b.cfg.SharePartitionMaxRecordLocks)) },
		synonym: "group.share.partition.max.record.locks",
		check: between(100, func(b *Broker) (int64, int64) {
			return int64(b.cfg.ShareMinPartitionMaxRecordLocks), int64(b.cfg.ShareMaxPartitionMaxRecordLocks)
		})},
	{name: "share.record.lock.duration.ms", typ: kmsg.ConfigTypeInt,
		doc:     "How long a share group member holds the records it acquired.",
		def:     func(b *Broker) string { return ms(b.cfg.ShareRecordLockDuration) },
		synonym: "group.share.record.lock.duration.ms",
		check: between(1000, msBounds(func(b *Broker) (time.Duration, time.Duration) {
			return b.cfg.ShareMinRecordLockDuration, b.cfg.ShareMaxRecordLockDuration
		}))},
	{name: "share.session.timeout.ms", typ: kmsg.ConfigTypeInt,
		doc:     "The timeout to detect share group member failures.",
		def:     func(b *Broker) string { return ms(b.cfg.Groups.ShareSessionTimeout) },
		synonym: "group.share.session.timeout.ms",
		check: between(1, msBounds(func(b *Broker) (time.Duration, time.Duration) {
			return b.cfg.Groups.ShareMinSessionTimeout, b.cfg.Groups.ShareMaxSessionTimeout
		}))},
}

func groupConfigDefFor(name string) *groupConfigDef {
	for i := range groupConfigDefs {
		if groupConfigDefs[i].name == name {
			return &groupConfigDefs[i]
		}
	}
	return nil
}

// groupSetting is a group's value of a group config: its own, else the
// broker's.
func (b *Broker) groupSetting(md *cluster.Metadata, groupID, name string) string {
	if v, ok := md.GroupConfigs[groupID][name]; ok {
		return v
	}
	return groupConfigDefFor(name).def(b)
}

// groupInt is a group's INT setting. Values were checked when written.
func (b *Broker) groupInt(md *cluster.Metadata, groupID, name string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(b.groupSetting(md, groupID, name)), 10, 32)
	return n
}

// groupDuration is a group's millisecond setting as a duration.
func (b *Broker) groupDuration(md *cluster.Metadata, groupID, name string) time.Duration {
	return time.Duration(b.groupInt(md, groupID, name)) * time.Millisecond
}

// describeGroupConfigs lists a group's configs.
func (b *Broker) describeGroupConfigs(md *cluster.Metadata, rr kmsg.DescribeConfigsRequestResource,
	withSynonyms, withDocs bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if rr.ResourceName == "" {
		return nil, newTopicError(protocol.InvalidRequest, "Group name must not be empty")
	}
	wanted := configNameFilter(rr.ConfigNames)
	set := md.GroupConfigs[rr.ResourceName]
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, d := range groupConfigDefs {
		if !wanted(d.name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.ConfigType = d.name, d.typ
		v, own := set[d.name]
		if own {
			c.Source = sourceDynamicGroupConfig
		} else {
			v = d.def(b)
			c.Source = kmsg.ConfigSourceDefaultConfig
			c.IsDefault = true
		}
		c.Value = &v
		if withDocs {
			doc := d.doc
			c.Documentation = &doc
		}
		if withSynonyms {
			// Kafka's order: the group's own value, then the default
			// under the broker setting that gives it.
			c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
			if own {
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = d.name, &v, sourceDynamicGroupConfig
				c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
			}
			def := d.def(b)
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = d.name, &def, kmsg.ConfigSourceDefaultConfig
			if d.synonym != "" {
				syn.Name = d.synonym
			}
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
		}
		out = append(out, c)
	}
	return out, nil
}

// validateGroupConfigs checks a group's whole config set, as Kafka's
// GroupConfig.validate does: every name known, every value valid, and each
// session timeout above its heartbeat interval, a key the set lacks taking
// the broker's value. Names and values are checked in name order, so the
// first failure reported does not depend on map order. Every failure is
// INVALID_CONFIG.
func (b *Broker) validateGroupConfigs(set map[string]string) error {
	names := slices.Sorted(maps.Keys(set))
	for _, name := range names {
		if groupConfigDefFor(name) == nil {
			return newTopicError(protocol.InvalidConfig, "Unknown group config name: %s", name)
		}
	}
	for _, name := range names {
		if msg := groupConfigDefFor(name).check(b, name, set[name]); msg != "" {
			return newTopicError(protocol.InvalidConfig, "%s", msg)
		}
	}
	for _, kind := range []string{"consumer", "share"} {
		num := func(name string) int64 {
			v, ok := set[name]
			if !ok {
				v = groupConfigDefFor(name).def(b)
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
		if num(kind+".session.timeout.ms") <= num(kind+".heartbeat.interval.ms") {
			return newTopicError(protocol.InvalidConfig, "%s.session.timeout.ms must be greater than %s.heartbeat.interval.ms", kind, kind)
		}
	}
	return nil
}

// replaceGroupConfigs is AlterConfigs (the legacy, non-incremental API) on
// a GROUP resource: the group's configs become exactly set, those it does
// not name go back to the broker's values, and an empty set removes them
// all. The whole set is checked first, as by IncrementalAlterConfigs.
func (b *Broker) replaceGroupConfigs(ctx context.Context, name string, set map[string]string, validateOnly bool) (bool, error) {
	if name == "" {
		return false, newTopicError(protocol.InvalidRequest, "Group name must not be empty")
	}
	if err := b.validateGroupConfigs(set); err != nil {
		return false, err
	}
	if validateOnly {
		return false, nil
	}
	replace := func(map[string]string) (map[string]string, error) { return set, nil }
	if err := b.cluster.UpdateGroupConfigs(ctx, name, replace); err != nil {
		return false, configWriteError(err, name, func(err error) error { return err })
	}
	return true, nil
}

// incrementalAlterGroup applies IncrementalAlterConfigs operations to a
// group's configs, then checks the resulting set as a whole.
func (b *Broker) incrementalAlterGroup(ctx context.Context, name string, ops []configs.Op, validateOnly bool) (bool, error) {
	if name == "" {
		return false, newTopicError(protocol.InvalidRequest, "Group name must not be empty")
	}
	seen := map[string]bool{}
	for _, op := range ops {
		switch {
		case seen[op.Name]:
			return false, newTopicError(protocol.InvalidRequest, "Error due to duplicate config keys")
		case op.Op < configs.OpSet || op.Op > configs.OpSubtract:
			return false, newTopicError(protocol.InvalidRequest, "Unknown operations type %d", op.Op)
		case op.Op != configs.OpDelete && op.Value == nil:
			return false, newTopicError(protocol.InvalidRequest, "Null value not supported for : %s", op.Name)
		}
		seen[op.Name] = true
	}
	apply := func(cur map[string]string) (map[string]string, error) {
		next := maps.Clone(cur)
		if next == nil {
			next = map[string]string{}
		}
		for _, op := range ops {
			switch {
			case groupConfigDefFor(op.Name) == nil:
				return nil, newTopicError(protocol.InvalidConfig, "Unknown group config name: %s", op.Name)
			case op.Op == configs.OpAppend || op.Op == configs.OpSubtract:
				return nil, newTopicError(protocol.InvalidConfig, "Can't %s to key %s because its type is not LIST.", op.Op, op.Name)
			case op.Op == configs.OpDelete:
				delete(next, op.Name)
			default:
				next[op.Name] = *op.Value
			}
		}
		if err := b.validateGroupConfigs(next); err != nil {
			return nil, err
		}
		return next, nil
	}
	if _, err := apply(b.cluster.Snapshot().GroupConfigs[name]); err != nil {
		return false, err
	}
	if validateOnly {
		return false, nil
	}
	if err := b.cluster.UpdateGroupConfigs(ctx, name, apply); err != nil {
		return false, configWriteError(err, name, func(err error) error { return err })
	}
	return true, nil
}
