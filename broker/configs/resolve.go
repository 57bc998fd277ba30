package configs

// brokerLevels are the broker config levels in order of precedence, each
// with the source DescribeConfigs reports for it.
type brokerLevel struct {
	configs map[string]string
	source  Source
}

func levels(dynamic, clusterDefault, static map[string]string) [3]brokerLevel {
	return [3]brokerLevel{
		{dynamic, SourceDynamicBroker},
		{clusterDefault, SourceDynamicDefaultBroker},
		{static, SourceStaticBroker},
	}
}

// Resolve gives the effective value of the topic config called name, where
// it comes from, and the synonym list DescribeConfigs returns with
// include_synonyms.
//
// topic holds the topic's overrides; brokerDynamic the per-broker dynamic
// configs of the broker answering; brokerDefault the cluster-wide dynamic
// defaults; brokerStatic the broker's static config. Any may be nil.
//
// The value is the first of: the topic override; then, at each broker level
// in turn (per-broker, cluster default, static), the first of the config's
// broker synonyms set there, converted to milliseconds where the synonym
// counts minutes or hours; then Kafka's default. It is printed the way Kafka
// prints a parsed value ("compact, delete" becomes "compact,delete").
//
// The synonyms are: the topic override if set; every broker synonym set at
// each level, level by level in precedence order, values as set (not
// converted); then each broker synonym that has a default, with that default
// and source DEFAULT_CONFIG. With log.retention.hours=1 in the static config
// and nothing else, retention.ms resolves to "3600000" from
// STATIC_BROKER_CONFIG with synonyms [log.retention.hours=1 STATIC_BROKER_CONFIG,
// log.retention.hours=168 DEFAULT_CONFIG].
//
// Kafka's broker builds its own synonym list with a quirk: it drops every
// entry before the first one named after the primary broker synonym, so for
// retention.ms it reports no broker synonyms, and DEFAULT_CONFIG as the
// source, unless log.retention.ms itself is set somewhere. Gregor reports the
// full list and the true source, which is also what Kafka's controller
// reports in CreateTopics responses.
//
// An unknown name gives "", SourceUnknown and no synonyms.
func Resolve(name string, topic, brokerDynamic, brokerDefault, brokerStatic map[string]string) (string, Source, []Synonym) {
	d, ok := topicByName[name]
	if !ok {
		return "", SourceUnknown, nil
	}
	var (
		syns  []Synonym
		value string
		src   = SourceUnknown
	)
	if v, ok := topic[name]; ok {
		value, src = d.normalize(v), SourceTopic
		syns = append(syns, Synonym{Name: name, Value: value, Source: SourceTopic})
	}
	for _, l := range levels(brokerDynamic, brokerDefault, brokerStatic) {
		for _, s := range d.syns {
			v, ok := l.configs[s.name]
			if !ok {
				continue
			}
			syns = append(syns, Synonym{Name: s.name, Value: v, Source: l.source})
			if src == SourceUnknown {
				value, src = d.normalize(s.value(v)), l.source
			}
		}
	}
	for _, s := range d.syns {
		if b, ok := brokerByName[s.name]; ok && !b.NullDefault {
			syns = append(syns, Synonym{Name: s.name, Value: b.Default, Source: SourceDefault})
		}
	}
	if src == SourceUnknown {
		value, src = d.Default, SourceDefault
	}
	return value, src, syns
}

// TopicValues resolves every topic config for a topic (see Resolve) and
// returns the values by name: what the broker's log for that topic runs with.
func TopicValues(topic, brokerDynamic, brokerDefault, brokerStatic map[string]string) Values {
	out := make(Values, len(topicDefs))
	for _, d := range topicDefs {
		v, _, _ := Resolve(d.Name, topic, brokerDynamic, brokerDefault, brokerStatic)
		out[d.Name] = v
	}
	return out
}

// ResolveBroker gives a broker config as DescribeConfigs on a BROKER resource
// reports it, with Kafka's logic.
//
// With perBroker set (the resource names this broker), the value is the
// config's own value at the first level that sets it (per-broker dynamic,
// cluster default, static) or its default, which may be null. Synonyms are
// the setting's names (Def.Synonyms, or just name) set at each level, then
// their defaults as DEFAULT_CONFIG (none for DynamicOnly configs), with every entry before the first one
// called name dropped; the source is the first remaining synonym's, else
// DEFAULT_CONFIG. So log.retention.ms reports null from DEFAULT_CONFIG when
// only log.retention.hours is set, as in Kafka.
//
// Without perBroker (the cluster default resource, empty name), Kafka only
// lists the names set in brokerDefault: the value is brokerDefault[name] and
// only DYNAMIC_DEFAULT_BROKER_CONFIG synonyms are kept.
//
// Names the catalogue does not know resolve the same way, as their own only
// synonym, with a null default.
func ResolveBroker(name string, perBroker bool, brokerDynamic, brokerDefault, brokerStatic map[string]string) (value string, null bool, src Source, synonyms []Synonym) {
	d, known := brokerByName[name]
	family := []string{name}
	if known && d.Synonyms != nil {
		family = d.Synonyms
	}
	var all []Synonym
	for _, l := range levels(brokerDynamic, brokerDefault, brokerStatic) {
		for _, n := range family {
			if v, ok := l.configs[n]; ok {
				all = append(all, Synonym{Name: n, Value: v, Source: l.source})
			}
		}
	}
	for _, n := range family {
		if b, ok := brokerByName[n]; ok && !b.NullDefault && !b.DynamicOnly {
			all = append(all, Synonym{Name: n, Value: b.Default, Source: SourceDefault})
		}
	}
	for len(all) > 0 && all[0].Name != name {
		all = all[1:]
	}
	if len(all) == 0 {
		all = nil
	}
	if !perBroker {
		for _, s := range all {
			if s.Source == SourceDynamicDefaultBroker {
				synonyms = append(synonyms, s)
			}
		}
	} else {
		synonyms = all
	}
	src = SourceDefault
	if len(synonyms) > 0 {
		src = synonyms[0].Source
	}

	var raw string
	var found bool
	if perBroker {
		for _, l := range levels(brokerDynamic, brokerDefault, brokerStatic) {
			if raw, found = l.configs[name]; found {
				break
			}
		}
	} else {
		raw, found = brokerDefault[name]
	}
	switch {
	case found && known:
		return d.normalize(raw), false, src, synonyms
	case found:
		return raw, false, src, synonyms
	case known && !d.NullDefault:
		return d.Default, false, src, synonyms
	}
	return "", true, src, synonyms
}

// ReportedStatic returns the static broker configs as DescribeConfigs and
// CreateTopics report them: static without the entries whose value is
// Kafka's default for the name. A Kafka broker reports STATIC_BROKER_CONFIG
// only for what its server.properties sets; a broker whose static config
// holds every setting it runs with reports, through this, the ones that
// differ from Kafka's default, and DEFAULT_CONFIG for the rest. The values
// resolved are the same with either map: an entry is dropped only when the
// default it falls back to is the same value (for a topic config, its broker
// synonyms' defaults are its own default). Names the catalogue does not know
// and names with a null default are kept. static is not modified.
func ReportedStatic(static map[string]string) map[string]string {
	out := make(map[string]string, len(static))
	for name, v := range static {
		if d, ok := brokerByName[name]; ok && !d.NullDefault && d.normalize(v) == d.Default {
			continue
		}
		out[name] = v
	}
	return out
}
