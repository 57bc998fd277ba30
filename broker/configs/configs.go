package configs

import (
	"fmt"
	"sort"
)

// Type is a config's data type, numbered as DescribeConfigs (v3+) numbers
// config_type.
type Type int8

// Config types.
const (
	TypeUnknown  Type = 0
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

var typeNames = [...]string{"UNKNOWN", "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"}

// String is Kafka's name for the type, as in "Not a number of type LONG".
func (t Type) String() string {
	if t >= 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", int8(t))
}

// Source is where a config value comes from, numbered as DescribeConfigs
// numbers config_source.
type Source int8

// Config sources.
const (
	SourceUnknown              Source = 0
	SourceTopic                Source = 1 // TOPIC_CONFIG
	SourceDynamicBroker        Source = 2 // DYNAMIC_BROKER_CONFIG
	SourceDynamicDefaultBroker Source = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
	SourceStaticBroker         Source = 4 // STATIC_BROKER_CONFIG
	SourceDefault              Source = 5 // DEFAULT_CONFIG
	SourceDynamicBrokerLogger  Source = 6 // DYNAMIC_BROKER_LOGGER_CONFIG
	SourceClientMetrics        Source = 7 // CLIENT_METRICS_CONFIG
	SourceGroup                Source = 8 // GROUP_CONFIG
)

var sourceNames = [...]string{
	"UNKNOWN", "TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG",
	"STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", "DYNAMIC_BROKER_LOGGER_CONFIG",
	"CLIENT_METRICS_CONFIG", "GROUP_CONFIG",
}

// String is Kafka's name for the source.
func (s Source) String() string {
	if s >= 0 && int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return fmt.Sprintf("Source(%d)", int8(s))
}

// UpdateMode says whether and where a broker config can be changed while the
// broker runs, as Kafka's documentation marks it. Topic configs can always be
// changed per topic; their UpdateMode is not used.
type UpdateMode int8

// Update modes.
const (
	// UpdateReadOnly configs are read at startup only.
	UpdateReadOnly UpdateMode = iota
	// UpdatePerBroker configs can be changed for one broker at a time, not
	// as a cluster-wide default.
	UpdatePerBroker
	// UpdateClusterWide configs can be changed per broker or as a
	// cluster-wide default.
	UpdateClusterWide
)

// String is the mode as Kafka's documentation writes it.
func (m UpdateMode) String() string {
	switch m {
	case UpdateReadOnly:
		return "read-only"
	case UpdatePerBroker:
		return "per-broker"
	case UpdateClusterWide:
		return "cluster-wide"
	}
	return fmt.Sprintf("UpdateMode(%d)", int8(m))
}

// Scope is the level a set of broker configs is validated for.
type Scope int8

// Broker config scopes.
const (
	// ScopeStatic is the config file the broker starts with.
	ScopeStatic Scope = iota
	// ScopePerBroker is a dynamic change to one broker (a BROKER resource
	// named by its id).
	ScopePerBroker
	// ScopeClusterDefault is a dynamic change to the cluster-wide default
	// (the BROKER resource with an empty name).
	ScopeClusterDefault
)

// Synonym is one entry of DescribeConfigs' synonym list: a config set at
// some level that bears on the described config. Values are as set, not
// converted: log.retention.hours=1 stays "1".
type Synonym struct {
	Name   string
	Value  string
	Source Source
}

// Def describes one config. Defs are shared; callers must not modify them.
type Def struct {
	Name string
	Type Type
	// Default is Kafka's default as DescribeConfigs prints it (lists
	// comma-joined, an empty list as ""). It is meaningless when
	// NullDefault is set.
	Default string
	// NullDefault is set when Kafka's default is null (no value), as for
	// log.retention.ms, which then falls back to log.retention.hours.
	NullDefault bool
	// Doc is a one- or two-sentence description.
	Doc string
	// Valid is Kafka's "Valid Values" text, e.g. "[1048576,...]"; empty
	// when any value of the type is accepted.
	Valid string
	// Sensitive configs have their values hidden in DescribeConfigs.
	Sensitive bool
	// Synonyms, for a topic config, are the broker configs that supply its
	// value when the topic has no override, in Kafka's order of precedence.
	// For a broker config they are all names of the same setting in that
	// order (log.retention.ms, log.retention.minutes, log.retention.hours),
	// the config itself included; nil when it has no other names.
	Synonyms []string
	// Update is where a broker config can be changed dynamically.
	Update UpdateMode
	// Deprecated configs are accepted but have no effect.
	Deprecated bool
	// Unused configs are Kafka's, and Gregor does not act on them: they are
	// described with Kafka's default, read-only, and ignored (with a
	// warning) when given at start.
	Unused bool
	// DynamicOnly configs exist only as dynamic broker configs (Kafka's
	// DynamicConfig.Broker quota settings, such as
	// leader.replication.throttled.rate): a broker describes them only
	// where they are set, with no DEFAULT_CONFIG synonym, and, as Kafka's
	// DescribeConfigs does, reports them read-only although they are
	// changed dynamically only.
	DynamicOnly bool

	check validator
	// syns are the topic config's broker synonyms with their conversions.
	syns []synonym
}

// Validate checks one value of the config and returns Kafka's error for
// it, wrapping ErrInvalidConfig.
func (d *Def) Validate(value string) error {
	_, err := d.parse(value)
	return err
}

// parse parses and validates value.
func (d *Def) parse(value string) (parsed, error) {
	p, err := parseValue(d.Name, d.Type, value)
	if err != nil {
		return p, err
	}
	if d.check.check != nil {
		if err := d.check.check(d.Name, p); err != nil {
			return p, err
		}
	}
	return p, nil
}

// normalize returns value as Kafka prints it after parsing (trimmed,
// lists joined with ",", doubles in Java's form), or value unchanged when it
// does not parse.
func (d *Def) normalize(value string) string {
	p, err := parseValue(d.Name, d.Type, value)
	if err != nil {
		return value
	}
	return p.format()
}

// synonym is a broker config that stands for a topic config, with the
// conversion its values need.
type synonym struct {
	name    string
	convert func(string) string // nil: the value is used as it is
}

func (s synonym) value(v string) string {
	if s.convert == nil {
		return v
	}
	return s.convert(v)
}

var (
	topicByName  = map[string]*Def{}
	brokerByName = map[string]*Def{}
	topicSorted  []*Def
	brokerSorted []*Def
)

// unusedDoc documents every unused broker config.
const unusedDoc = "A setting of Apache Kafka that Gregor does not act on; described with Kafka's default, read-only."

// addUnusedBrokerDefs defines, as unused, every broker config Kafka
// reports that Gregor does not define itself.
func addUnusedBrokerDefs() {
	defined := map[string]bool{}
	for _, d := range brokerDefs {
		defined[d.Name] = true
	}
	for _, k := range kafkaBrokerConfigs {
		if defined[k.name] {
			continue
		}
		brokerDefs = append(brokerDefs, &Def{Name: k.name, Type: k.typ, Default: k.def, NullDefault: k.null,
			Doc: unusedDoc, Update: UpdateReadOnly, Unused: true})
	}
}

// kafkaBrokerConfig is one broker config as Kafka reports it.
type kafkaBrokerConfig struct {
	name string
	typ  Type
	def  string
	null bool // the default is null
}

func init() {
	addUnusedBrokerDefs()
	for _, d := range topicDefs {
		if topicByName[d.Name] != nil {
			panic("configs: topic config defined twice: " + d.Name)
		}
		topicByName[d.Name] = d
		d.Valid = d.check.valid
		d.Sensitive = d.Type == TypePassword
		for _, s := range d.syns {
			d.Synonyms = append(d.Synonyms, s.name)
		}
	}
	for _, d := range brokerDefs {
		if brokerByName[d.Name] != nil {
			panic("configs: broker config defined twice: " + d.Name)
		}
		brokerByName[d.Name] = d
		d.Valid = d.check.valid
		d.Sensitive = d.Type == TypePassword
	}
	for name, family := range brokerFamilies {
		brokerByName[name].Synonyms = family
	}
	topicSorted = sortedDefs(topicDefs)
	brokerSorted = sortedDefs(brokerDefs)
}

func sortedDefs(defs []*Def) []*Def {
	s := append([]*Def(nil), defs...)
	sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
	return s
}

// Topic returns the topic config called name.
func Topic(name string) (*Def, bool) {
	d, ok := topicByName[name]
	return d, ok
}

// Topics returns every topic config, sorted by name. The slice is the
// caller's; the Defs are shared.
func Topics() []*Def { return append([]*Def(nil), topicSorted...) }

// Broker returns the broker config called name.
func Broker(name string) (*Def, bool) {
	d, ok := brokerByName[name]
	return d, ok
}

// Brokers returns every broker config in the catalogue, sorted by name. The
// slice is the caller's; the Defs are shared.
func Brokers() []*Def { return append([]*Def(nil), brokerSorted...) }
