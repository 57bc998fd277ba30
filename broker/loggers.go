package broker

// Broker loggers: the BROKER_LOGGER config resource (DescribeConfigs,
// IncrementalAlterConfigs), as Kafka serves its log4j loggers.
//
// The broker logs through a few named loggers, one per component, each
// line tagged component=<name>: broker (requests and the broker's life),
// network (connections), storage (logs, recovery, retention, the
// cleaner), cluster (the etcd registry) and group (the group
// coordinator). "root" is the level given at start (log.level); a
// component without a level of its own follows it. An operator raises one
// component's level at run time:
//
//	kafka-configs --bootstrap-server HOST:PORT --entity-type broker-loggers \
//	    --entity-name 1 --alter --add-config storage=DEBUG
//
// and puts it back with --delete-config storage. Levels are Kafka's names
// (TRACE, DEBUG, INFO, WARN, ERROR, FATAL; TRACE maps to slog's DEBUG-4,
// FATAL to ERROR+4) and, as in Kafka, are not kept across restarts.

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// The loggers, sorted.
var loggerNames = []string{"broker", "cluster", "group", "network", "root", "storage"}

const rootLogger = "root"

// Kafka's log4j level names, and the slog levels they map to.
var logLevelNames = map[string]slog.Level{
	"TRACE": slog.LevelDebug - 4,
	"DEBUG": slog.LevelDebug,
	"INFO":  slog.LevelInfo,
	"WARN":  slog.LevelWarn,
	"ERROR": slog.LevelError,
	"FATAL": slog.LevelError + 4,
}

// levelName is the Kafka name of an slog level: the highest named level
// at or below it.
func levelName(l slog.Level) string {
	best, name := slog.Level(-1<<31), "TRACE"
	for n, v := range logLevelNames {
		if v <= l && v > best {
			best, name = v, n
		}
	}
	return name
}

// logLevels holds the root level and the components' own levels.
type logLevels struct {
	mu   sync.RWMutex
	root slog.Level
	own  map[string]slog.Level
}

// newLogLevels starts at the level h is enabled from (log.level).
func newLogLevels(h slog.Handler) *logLevels {
	root := slog.LevelError + 4
	for _, l := range []slog.Level{slog.LevelDebug - 4, slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		if h.Enabled(context.Background(), l) {
			root = l
			break
		}
	}
	return &logLevels{root: root, own: map[string]slog.Level{}}
}

func (ls *logLevels) level(name string) slog.Level {
	ls.mu.RLock()
	defer ls.mu.RUnlock()
	if l, ok := ls.own[name]; ok {
		return l
	}
	return ls.root
}

// leveledHandler sends to inner the records its logger's level lets
// through; inner's own level is not consulted.
type leveledHandler struct {
	inner  slog.Handler
	levels *logLevels
	name   string
}

func (h *leveledHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.levels.level(h.name)
}

func (h *leveledHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.inner.Handle(ctx, r)
}

func (h *leveledHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &leveledHandler{inner: h.inner.WithAttrs(as), levels: h.levels, name: h.name}
}

func (h *leveledHandler) WithGroup(g string) slog.Handler {
	return &leveledHandler{inner: h.inner.WithGroup(g), levels: h.levels, name: h.name}
}

// componentLogger returns the logger of a component, over base.
func componentLogger(base slog.Handler, levels *logLevels, name string) *slog.Logger {
	return slog.New(&leveledHandler{inner: base.WithAttrs([]slog.Attr{slog.String("component", name)}), levels: levels, name: name})
}

// logger returns the named component's logger.
func (b *Broker) loggerFor(name string) *slog.Logger {
	return componentLogger(b.logBase, b.logLevels, name)
}

// describeLoggers lists the loggers and their levels, those asked for
// (all when names is empty; unknown names are left out, as Kafka does).
func (b *Broker) describeLoggers(names []string) []kmsg.DescribeConfigsResponseResourceConfig {
	wanted := configNameFilter(names)
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range loggerNames {
		if !wanted(name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = name
		v := levelName(b.logLevels.level(name))
		c.Value = &v
		c.Source = kmsg.ConfigSourceDynamicBrokerLoggerConfig
		doc := "" // Kafka answers an empty documentation, asked for or not
		c.Documentation = &doc
		out = append(out, c)
	}
	return out
}

// alterLoggers checks every operation and, unless validateOnly, applies
// them all: SET a logger's level, DELETE a component's own level (it then
// follows root). Kafka's errors: INVALID_CONFIG for an unknown logger or
// level, INVALID_REQUEST for a null level, APPEND or SUBTRACT, or
// deleting root's level.
func (b *Broker) alterLoggers(ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	for _, op := range ops {
		if !slices.Contains(loggerNames, op.Name) {
			return newTopicError(protocol.InvalidConfig, "There is no logger %s: the loggers are %v.", op.Name, loggerNames)
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return newTopicError(protocol.InvalidRequest, "The level of logger %s cannot be set to null.", op.Name)
			}
			if _, ok := logLevelNames[*op.Value]; !ok {
				return newTopicError(protocol.InvalidConfig,
					"%s is not a log level; the levels are TRACE, DEBUG, INFO, WARN, ERROR and FATAL.", *op.Value)
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if op.Name == rootLogger {
				return newTopicError(protocol.InvalidRequest, "The root logger's level cannot be removed, only set.")
			}
		default:
			return newTopicError(protocol.InvalidRequest, "Operation %s does not apply to broker loggers: only SET and DELETE do.", op.Op)
		}
	}
	if validateOnly {
		return nil
	}
	ls := b.logLevels
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, op := range ops {
		switch {
		case op.Op == kmsg.IncrementalAlterConfigOpDelete:
			delete(ls.own, op.Name)
		case op.Name == rootLogger:
			ls.root = logLevelNames[*op.Value]
		default:
			// The request's strings alias its frame, which is reused.
			ls.own[strings.Clone(op.Name)] = logLevelNames[*op.Value]
		}
	}
	return nil
}
