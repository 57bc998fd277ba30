package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// TestBrokerLoggers reads and changes the components' log levels through
// the BROKER_LOGGER resource, as kafka-configs --entity-type
// broker-loggers does (it was "Unsupported resource type: BROKER_LOGGER").
// The answers' codes are those of Kafka 4.4 for its log4j loggers.
func TestBrokerLoggers(t *testing.T) {
	t.Parallel()
	var out syncLogBuffer
	b := startBroker(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	ctx := configsTestCtx(t)
	cl := newClient(t, b)

	levels := func() map[string]string {
		t.Helper()
		r := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeBrokerLogger, "1", nil, false, false)
		if r.ErrorCode != 0 {
			t.Fatalf("describe broker loggers: error %d", r.ErrorCode)
		}
		got := map[string]string{}
		for _, c := range r.Configs {
			if c.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig || c.ReadOnly || c.IsSensitive || c.Value == nil {
				t.Errorf("logger %s: %+v", c.Name, c)
				continue
			}
			got[c.Name] = *c.Value
		}
		return got
	}
	want := map[string]string{"root": "INFO", "broker": "INFO", "cluster": "INFO", "group": "INFO", "network": "INFO", "storage": "INFO"}
	if got := levels(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("loggers at start: %v, want %v", got, want)
	}
	alter := func(validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (protocol.ErrorCode, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.Configs = kmsg.ConfigResourceTypeBrokerLogger, "1", ops
		req.Resources = append(req.Resources, rr)
		res := cfgNodeRequest[*kmsg.IncrementalAlterConfigsResponse](ctx, t, b, cl, req).Resources[0]
		msg := ""
		if res.ErrorMessage != nil {
			msg = *res.ErrorMessage
		}
		return protocol.ErrorCode(res.ErrorCode), msg
	}
	set := func(name, level string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: &level}
	}
	del := func(name string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpDelete}
	}

	for _, c := range []struct {
		what string
		op   kmsg.IncrementalAlterConfigsRequestResourceConfig
		want protocol.ErrorCode
	}{
		{"a level in lower case", set("storage", "debug"), protocol.InvalidConfig},
		{"no such level", set("storage", "LOUD"), protocol.InvalidConfig},
		{"OFF, not settable in Kafka", set("storage", "OFF"), protocol.InvalidConfig},
		{"no such logger", set("kafka.server.KafkaApis", "DEBUG"), protocol.InvalidConfig},
		{"a null level", kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "storage", Op: kmsg.IncrementalAlterConfigOpSet}, protocol.InvalidRequest},
		{"removing root's level", del("root"), protocol.InvalidRequest},
		{"APPEND", kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "storage", Op: kmsg.IncrementalAlterConfigOpAppend, Value: kmsg.StringPtr("INFO")}, protocol.InvalidRequest},
	} {
		if code, msg := alter(false, set("broker", "WARN"), c.op); code != c.want {
			t.Errorf("%s: error %d (%s), want %d", c.what, code, msg, c.want)
		}
	}
	if code, _ := alter(true, set("storage", "DEBUG")); code != 0 {
		t.Fatalf("validate-only set: error %d", code)
	}
	if got := levels(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("loggers after refused and validate-only changes: %v, want %v", got, want)
	}

	// One component to DEBUG: its debug lines appear, the others' do not.
	if code, msg := alter(false, set("storage", "DEBUG")); code != 0 {
		t.Fatalf("set storage=DEBUG: error %d (%s)", code, msg)
	}
	want["storage"] = "DEBUG"
	if got := levels(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("loggers after storage=DEBUG: %v, want %v", got, want)
	}
	b.loggerFor("storage").Debug("storage probe")
	b.loggerFor("network").Debug("network probe")
	if logs := out.String(); !strings.Contains(logs, `msg="storage probe" component=storage`) || strings.Contains(logs, "network probe") {
		t.Errorf("with storage at DEBUG, the logs are:\n%s", logs)
	}
	ok := b.loggerFor("storage").Enabled(context.Background(), slog.LevelDebug-4)
	if ok {
		t.Error("storage at DEBUG logs TRACE")
	}

	// Root moves the components that have no level of their own.
	if code, _ := alter(false, set("root", "WARN"), del("storage")); code != 0 {
		t.Fatalf("set root=WARN, delete storage: error %d", code)
	}
	for name := range want {
		want[name] = "WARN"
	}
	if got := levels(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("loggers after root=WARN: %v, want %v", got, want)
	}
	if b.logger.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("the broker logs INFO with root at WARN")
	}

	named := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeBrokerLogger, "1", []string{"cluster", "kafka.server.KafkaApis"}, false, false)
	if len(named.Configs) != 1 || named.Configs[0].Name != "cluster" {
		t.Errorf("describe cluster and an unknown logger: %+v", named.Configs)
	}
}

// syncLogBuffer is a strings.Builder the broker's goroutines can log to
// while the test reads it.
type syncLogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncLogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncLogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
