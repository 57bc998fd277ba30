package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/broker/configs"
)

// configsTestCtx bounds one config test.
func configsTestCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// cfgNodeRequest sends req straight to b, bypassing the client's sharding of
// config resources by broker id.
func cfgNodeRequest[R kmsg.Response](ctx context.Context, t *testing.T, b *Broker, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Broker(int(b.cfg.NodeID)).Request(ctx, req)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	return resp.(R)
}

func cfgDescribe(ctx context.Context, t *testing.T, b *Broker, cl *kgo.Client, typ kmsg.ConfigResourceType, name string,
	names []string, synonyms, docs bool) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = synonyms, docs
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, name, names
	req.Resources = append(req.Resources, rr)
	resp := cfgNodeRequest[*kmsg.DescribeConfigsResponse](ctx, t, b, cl, req)
	if len(resp.Resources) != 1 {
		t.Fatalf("DescribeConfigs answered %d resources, want 1", len(resp.Resources))
	}
	return resp.Resources[0]
}

func cfgEntry(t *testing.T, res kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, c := range res.Configs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("resource %q has no config %s", res.ResourceName, name)
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

func cfgStr(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

type cfgSyn struct {
	name, value string
	source      kmsg.ConfigSource
}

// cfgCheckEntry compares one described config's value, source and synonyms.
func cfgCheckEntry(t *testing.T, c kmsg.DescribeConfigsResponseResourceConfig, value string, src kmsg.ConfigSource, syns ...cfgSyn) {
	t.Helper()
	if got := cfgStr(c.Value); got != value || c.Source != src {
		t.Errorf("%s = %s from %v, want %s from %v", c.Name, got, c.Source, value, src)
	}
	var got []cfgSyn
	for _, s := range c.ConfigSynonyms {
		got = append(got, cfgSyn{s.Name, cfgStr(s.Value), s.Source})
	}
	if syns != nil && !reflect.DeepEqual(got, syns) {
		t.Errorf("%s synonyms = %v, want %v", c.Name, got, syns)
	}
}

func cfgCheckErr(t *testing.T, what string, code int16, msg *string, want error, wantMsg string) {
	t.Helper()
	if err := kerr.ErrorForCode(code); !errors.Is(err, want) || cfgStr(msg) != wantMsg {
		t.Errorf("%s: got %v %q, want %v %q", what, err, cfgStr(msg), want, wantMsg)
	}
}

func cfgCheckAlter(t *testing.T, what string, rs kadm.AlterConfigsResponses, err error, want error, wantMsg string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(rs) != 1 {
		t.Fatalf("%s: %d results, want 1", what, len(rs))
	}
	if !errors.Is(rs[0].Err, want) || (wantMsg != "" && rs[0].ErrMessage != wantMsg) || (want == nil && rs[0].Err != nil) {
		t.Errorf("%s: got %v %q, want %v %q", what, rs[0].Err, rs[0].ErrMessage, want, wantMsg)
	}
}

func cfgSettings(t *testing.T, b *Broker, topic string) *topicSettings {
	t.Helper()
	p, code := b.lookupPartition(topic, [16]byte{}, false, 0)
	if p == nil {
		t.Fatalf("partition %s-0: %v", topic, code)
	}
	return p.settings.Load()
}

func TestDescribeTopicConfigs(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) {
		c.StaticTopicDefaults = map[string]string{"log.retention.hours": "1"}
	})
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"retention.ms": kadm.StringPtr("7200000"), "cleanup.policy": kadm.StringPtr("compact"),
	}, "tuned"); err != nil {
		t.Fatal(err)
	}

	plain := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeTopic, "plain", nil, true, true)
	if plain.ErrorCode != 0 {
		t.Fatalf("describe plain: %v", kerr.ErrorForCode(plain.ErrorCode))
	}
	if len(plain.Configs) != len(configs.Topics()) {
		t.Errorf("plain has %d configs, want every topic config (%d)", len(plain.Configs), len(configs.Topics()))
	}
	c := cfgEntry(t, plain, "retention.ms")
	cfgCheckEntry(t, c, "3600000", kmsg.ConfigSourceStaticBrokerConfig,
		cfgSyn{"log.retention.hours", "1", kmsg.ConfigSourceStaticBrokerConfig},
		cfgSyn{"log.retention.hours", "168", kmsg.ConfigSourceDefaultConfig})
	if c.ConfigType != kmsg.ConfigTypeLong || c.Documentation == nil || *c.Documentation == "" || c.ReadOnly || c.IsSensitive {
		t.Errorf("retention.ms: type %v, doc %q, read-only %v, sensitive %v; want LONG, a doc, false, false",
			c.ConfigType, cfgStr(c.Documentation), c.ReadOnly, c.IsSensitive)
	}
	c = cfgEntry(t, plain, "cleanup.policy")
	cfgCheckEntry(t, c, "delete", kmsg.ConfigSourceDefaultConfig, cfgSyn{"log.cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig})
	if c.ConfigType != kmsg.ConfigTypeList {
		t.Errorf("cleanup.policy type %v, want LIST", c.ConfigType)
	}
	// message.max.bytes is in the static config at Kafka's default, which
	// Kafka reports as DEFAULT_CONFIG; flush.messages comes from Gregor's
	// own default, log.flush.interval.messages=1.
	cfgCheckEntry(t, cfgEntry(t, plain, "max.message.bytes"), "1048588", kmsg.ConfigSourceDefaultConfig,
		cfgSyn{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig})
	cfgCheckEntry(t, cfgEntry(t, plain, "flush.messages"), "1", kmsg.ConfigSourceStaticBrokerConfig,
		cfgSyn{"log.flush.interval.messages", "1", kmsg.ConfigSourceStaticBrokerConfig},
		cfgSyn{"log.flush.interval.messages", "9223372036854775807", kmsg.ConfigSourceDefaultConfig})

	tuned := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeTopic, "tuned", nil, true, false)
	cfgCheckEntry(t, cfgEntry(t, tuned, "retention.ms"), "7200000", kmsg.ConfigSourceDynamicTopicConfig,
		cfgSyn{"retention.ms", "7200000", kmsg.ConfigSourceDynamicTopicConfig},
		cfgSyn{"log.retention.hours", "1", kmsg.ConfigSourceStaticBrokerConfig},
		cfgSyn{"log.retention.hours", "168", kmsg.ConfigSourceDefaultConfig})
	cfgCheckEntry(t, cfgEntry(t, tuned, "cleanup.policy"), "compact", kmsg.ConfigSourceDynamicTopicConfig)
	if d := cfgEntry(t, tuned, "retention.ms").Documentation; d != nil {
		t.Errorf("documentation %q without include_documentation", *d)
	}

	// Only the names asked for; unknown names are left out.
	some := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeTopic, "tuned", []string{"retention.ms", "no.such.config"}, false, false)
	if len(some.Configs) != 1 || some.Configs[0].Name != "retention.ms" {
		t.Errorf("config_names filter gave %d configs, want retention.ms only", len(some.Configs))
	} else if len(some.Configs[0].ConfigSynonyms) != 0 {
		t.Errorf("synonyms without include_synonyms: %v", some.Configs[0].ConfigSynonyms)
	}

	missing := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeTopic, "missing", nil, false, false)
	cfgCheckErr(t, "unknown topic", missing.ErrorCode, missing.ErrorMessage, kerr.UnknownTopicOrPartition, "<null>")
	bad := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeTopic, "bad/name", nil, false, false)
	if !errors.Is(kerr.ErrorForCode(bad.ErrorCode), kerr.InvalidTopicException) || len(bad.Configs) != 0 {
		t.Errorf("illegal topic name: %v with %d configs, want INVALID_TOPIC_EXCEPTION", kerr.ErrorForCode(bad.ErrorCode), len(bad.Configs))
	}

	// kadm sees the same.
	rcs, err := adm.DescribeTopicConfigs(ctx, "tuned")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("tuned", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("kadm describe: %v %v", err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && (c.MaybeValue() != "compact" || c.Source != kmsg.ConfigSourceDynamicTopicConfig) {
			t.Errorf("kadm: cleanup.policy = %s from %v", c.MaybeValue(), c.Source)
		}
	}
}

func TestAlterTopicConfigsIncremental(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, b, kgo.ProducerBatchMaxBytes(4<<20), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(3))
	big := bytes.Repeat([]byte("x"), 4096)
	produce := func(v []byte) error {
		return prod.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: v}).FirstErr()
	}
	if err := produce(big); err != nil {
		t.Fatalf("produce 4 KiB under the default limit: %v", err)
	}

	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("1024")}}, "t")
	cfgCheckAlter(t, "set max.message.bytes", rs, err, nil, "")
	if got := cfgSettings(t, b, "t").maxMessageBytes; got != 1024 {
		t.Errorf("partition max.message.bytes = %d right after the change, want 1024", got)
	}
	res := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeTopic, "t", []string{"max.message.bytes"}, false, false)
	cfgCheckEntry(t, cfgEntry(t, res, "max.message.bytes"), "1024", kmsg.ConfigSourceDynamicTopicConfig)
	if err := produce(big); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("produce 4 KiB over max.message.bytes=1024: %v, want MESSAGE_TOO_LARGE", err)
	}
	if err := produce([]byte("small")); err != nil {
		t.Errorf("produce a small record: %v", err)
	}

	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "max.message.bytes"},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
	}, "t")
	cfgCheckAlter(t, "delete and append", rs, err, nil, "")
	if got := b.cluster.Snapshot().Topics["t"].Configs; !maps.Equal(got, map[string]string{"cleanup.policy": "delete,compact"}) {
		t.Errorf("topic configs = %v, want cleanup.policy=delete,compact only", got)
	}
	if s := cfgSettings(t, b, "t"); s.maxMessageBytes != 1048588 || !s.compacted {
		t.Errorf("settings after delete/append: max %d compacted %v, want 1048588 true", s.maxMessageBytes, s.compacted)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rcs[0].Configs {
		switch c.Key {
		case "max.message.bytes":
			if c.MaybeValue() != "1048588" || c.Source != kmsg.ConfigSourceDefaultConfig {
				t.Errorf("max.message.bytes after DELETE = %s from %v, want the broker's", c.MaybeValue(), c.Source)
			}
		case "cleanup.policy":
			if c.MaybeValue() != "delete,compact" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("cleanup.policy after APPEND = %s from %v", c.MaybeValue(), c.Source)
			}
		}
	}
	// Compacted topics take keyed records only.
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "t", Key: []byte("k"), Value: big}).FirstErr(); err != nil {
		t.Errorf("produce 4 KiB after DELETE: %v", err)
	}

	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, "t")
	cfgCheckAlter(t, "subtract", rs, err, nil, "")
	if got := b.cluster.Snapshot().Topics["t"].Configs["cleanup.policy"]; got != "delete" {
		t.Errorf("cleanup.policy after SUBTRACT = %q, want delete", got)
	}
}

func TestAlterTopicConfigErrors(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	set := func(name, value string) []kadm.AlterConfig {
		return []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: &value}}
	}

	rs, err := adm.AlterTopicConfigs(ctx, set("retention.ms", "abc"), "t")
	cfgCheckAlter(t, "invalid value", rs, err, kerr.InvalidConfig, "Invalid value abc for configuration retention.ms: Not a number of type LONG")
	rs, err = adm.AlterTopicConfigs(ctx, set("foo", "1"), "t")
	cfgCheckAlter(t, "unknown config", rs, err, kerr.InvalidConfig, "Unknown topic config name: foo")
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "t")
	cfgCheckAlter(t, "append to a non-list", rs, err, kerr.InvalidConfig, "Can't APPEND to key retention.ms because its type is not LIST.")
	rs, err = adm.AlterTopicConfigs(ctx, set("retention.ms", "1000"), "missing")
	cfgCheckAlter(t, "unknown topic", rs, err, kerr.UnknownTopicOrPartition, "The topic 'missing' does not exist.")
	rs, err = adm.AlterTopicConfigs(ctx, set("retention.ms", "abc"), "missing")
	cfgCheckAlter(t, "invalid value for an unknown topic (values are checked first)", rs, err, kerr.InvalidConfig, "")

	// Validate-only changes nothing, but still validates.
	rs, err = adm.ValidateAlterTopicConfigs(ctx, set("max.message.bytes", "1024"), "t")
	cfgCheckAlter(t, "validate only", rs, err, nil, "")
	rs, err = adm.ValidateAlterTopicConfigs(ctx, set("max.message.bytes", "-5"), "t")
	cfgCheckAlter(t, "validate only, invalid", rs, err, kerr.InvalidConfig, "")
	if got := b.cluster.Snapshot().Topics["t"].Configs; len(got) != 0 {
		t.Errorf("validate-only wrote configs %v", got)
	}
	if got := cfgSettings(t, b, "t").maxMessageBytes; got != 1048588 {
		t.Errorf("validate-only changed max.message.bytes to %d", got)
	}
	res := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeTopic, "t", []string{"max.message.bytes"}, false, false)
	cfgCheckEntry(t, cfgEntry(t, res, "max.message.bytes"), "1048588", kmsg.ConfigSourceDefaultConfig)

	// Malformed requests, sent as they are.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	addRes := func(name string, cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.Configs = kmsg.ConfigResourceTypeTopic, name, cfgs
		req.Resources = append(req.Resources, rr)
	}
	op := func(name string, o kmsg.IncrementalAlterConfigOp, v *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = name, o, v
		return c
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "u"); err != nil {
		t.Fatal(err)
	}
	addRes("t", op("retention.ms", kmsg.IncrementalAlterConfigOpSet, kadm.StringPtr("1000")))
	addRes("u", op("retention.ms", kmsg.IncrementalAlterConfigOpSet, nil))
	addRes("t", op("segment.ms", kmsg.IncrementalAlterConfigOpSet, kadm.StringPtr("1000")))
	addRes("", op("retention.ms", kmsg.IncrementalAlterConfigOpSet, kadm.StringPtr("1000")))
	addRes("u", op("retention.ms", kmsg.IncrementalAlterConfigOpSet, kadm.StringPtr("1")), op("retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil))
	resp := cfgNodeRequest[*kmsg.IncrementalAlterConfigsResponse](ctx, t, b, cl, req)
	if len(resp.Resources) != 5 {
		t.Fatalf("%d results for 5 resources", len(resp.Resources))
	}
	want := []struct {
		err error
		msg string
	}{
		{kerr.InvalidRequest, "Each resource must appear at most once."},
		{kerr.InvalidRequest, "Each resource must appear at most once."},
		{kerr.InvalidRequest, "Each resource must appear at most once."},
		{kerr.InvalidRequest, "Default topic resources are not allowed."},
		{kerr.InvalidRequest, "Each resource must appear at most once."},
	}
	for i, w := range want {
		r := resp.Resources[i]
		cfgCheckErr(t, "resource "+r.ResourceName, r.ErrorCode, r.ErrorMessage, w.err, w.msg)
	}
	req.Resources = req.Resources[1:2]
	resp = cfgNodeRequest[*kmsg.IncrementalAlterConfigsResponse](ctx, t, b, cl, req)
	cfgCheckErr(t, "null SET", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, kerr.InvalidRequest,
		"Null value not supported for : retention.ms")
	req.Resources = nil
	addRes("u", op("retention.ms", kmsg.IncrementalAlterConfigOpSet, kadm.StringPtr("1")), op("retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil))
	resp = cfgNodeRequest[*kmsg.IncrementalAlterConfigsResponse](ctx, t, b, cl, req)
	cfgCheckErr(t, "config named twice", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, kerr.InvalidRequest,
		"Error due to duplicate config keys")
	if got := b.cluster.Snapshot().Topics["u"].Configs; len(got) != 0 {
		t.Errorf("failed requests wrote configs %v", got)
	}
}

func TestBrokerConfigs(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}

	node := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeBroker, "1", nil, true, true)
	if node.ErrorCode != 0 {
		t.Fatalf("describe broker 1: %v %s", kerr.ErrorForCode(node.ErrorCode), cfgStr(node.ErrorMessage))
	}
	listed := 0 // the catalogue less the dynamic-only configs, listed only where set
	for _, d := range configs.Brokers() {
		if !d.DynamicOnly {
			listed++
		}
	}
	if len(node.Configs) < listed {
		t.Errorf("broker 1 lists %d configs, want at least the catalogue's %d", len(node.Configs), listed)
	}
	c := cfgEntry(t, node, "message.max.bytes")
	cfgCheckEntry(t, c, "1048588", kmsg.ConfigSourceDefaultConfig,
		cfgSyn{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig})
	if c.ReadOnly || c.ConfigType != kmsg.ConfigTypeInt || c.Documentation == nil {
		t.Errorf("message.max.bytes: read-only %v type %v doc %v; want false INT a doc", c.ReadOnly, c.ConfigType, c.Documentation)
	}
	if c := cfgEntry(t, node, "log.retention.hours"); !c.ReadOnly {
		t.Error("log.retention.hours is not reported read-only")
	}
	cfgCheckEntry(t, cfgEntry(t, node, "log.retention.ms"), "<null>", kmsg.ConfigSourceDefaultConfig)

	def := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeBroker, "", nil, true, false)
	if def.ErrorCode != 0 || len(def.Configs) != 0 {
		t.Errorf("cluster default before any change: %v, %d configs; want none", kerr.ErrorForCode(def.ErrorCode), len(def.Configs))
	}

	// Cluster-wide default, then per broker.
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: kadm.StringPtr("60000")}})
	cfgCheckAlter(t, "set cluster default", rs, err, nil, "")
	rcs, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rcs) != 1 || len(rcs[0].Configs) != 1 || rcs[0].Configs[0].Key != "log.retention.ms" ||
		rcs[0].Configs[0].MaybeValue() != "60000" || rcs[0].Configs[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("cluster default describe = %+v, want log.retention.ms=60000 only", rcs)
	}
	node = cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeBroker, "1", []string{"log.retention.ms"}, true, false)
	cfgCheckEntry(t, cfgEntry(t, node, "log.retention.ms"), "60000", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		cfgSyn{"log.retention.ms", "60000", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		cfgSyn{"log.retention.hours", "168", kmsg.ConfigSourceDefaultConfig})
	topic := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeTopic, "t", []string{"retention.ms"}, false, false)
	cfgCheckEntry(t, cfgEntry(t, topic, "retention.ms"), "60000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)

	rs, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "message.max.bytes", Value: kadm.StringPtr("2000")},
		{Op: kadm.SetConfig, Name: "my.custom.setting", Value: kadm.StringPtr("secret?")},
	}, 1)
	cfgCheckAlter(t, "set per broker", rs, err, nil, "")
	if got := cfgSettings(t, b, "t").maxMessageBytes; got != 2000 {
		t.Errorf("topic max.message.bytes = %d after the broker's message.max.bytes=2000", got)
	}
	topic = cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeTopic, "t", []string{"max.message.bytes"}, false, false)
	cfgCheckEntry(t, cfgEntry(t, topic, "max.message.bytes"), "2000", kmsg.ConfigSourceDynamicBrokerConfig)
	node = cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeBroker, "1", []string{"my.custom.setting", "message.max.bytes"}, false, false)
	if len(node.Configs) != 2 {
		t.Fatalf("asked for 2 broker configs, got %d", len(node.Configs))
	}
	c = cfgEntry(t, node, "my.custom.setting")
	if c.Value != nil || !c.IsSensitive || !c.ReadOnly || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("custom config: value %s sensitive %v read-only %v source %v; want hidden, true, true, DYNAMIC_BROKER_CONFIG",
			cfgStr(c.Value), c.IsSensitive, c.ReadOnly, c.Source)
	}
	cfgCheckEntry(t, cfgEntry(t, node, "message.max.bytes"), "2000", kmsg.ConfigSourceDynamicBrokerConfig)

	// Failures.
	rs, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "node.id", Value: kadm.StringPtr("5")}}, 1)
	cfgCheckAlter(t, "read-only config", rs, err, kerr.InvalidRequest, "Cannot update these configs dynamically: [node.id]")
	rs, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "listeners", Value: kadm.StringPtr("PLAINTEXT://:9093")}})
	cfgCheckAlter(t, "per-broker config at the default", rs, err, kerr.InvalidRequest,
		"Cannot update these configs at default cluster level, broker id must be specified: [listeners]")
	rs, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.max.bytes", Value: kadm.StringPtr("abc")}}, 1)
	cfgCheckAlter(t, "invalid broker value", rs, err, kerr.InvalidRequest, "Invalid value abc for configuration message.max.bytes: Not a number of type INT")
	rs, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "message.max.bytes", Value: kadm.StringPtr("1")}}, 1)
	cfgCheckAlter(t, "append to a non-list broker config", rs, err, kerr.InvalidConfig, "Config value append is not allowed for config key: message.max.bytes")
	rs, err = adm.ValidateAlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.max.bytes", Value: kadm.StringPtr("3000")}}, 1)
	cfgCheckAlter(t, "validate only", rs, err, nil, "")
	if got := b.cluster.Snapshot().BrokerConfigs[1]["message.max.bytes"]; got != "2000" {
		t.Errorf("validate-only changed message.max.bytes to %s", got)
	}

	ireq := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeBroker, "7"
	ireq.Resources = append(ireq.Resources, ir)
	ir.ResourceName = "x"
	ireq.Resources = append(ireq.Resources, ir)
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
	ireq.Resources = append(ireq.Resources, ir)
	iresp := cfgNodeRequest[*kmsg.IncrementalAlterConfigsResponse](ctx, t, b, cl, ireq)
	cfgCheckErr(t, "other broker", iresp.Resources[0].ErrorCode, iresp.Resources[0].ErrorMessage, kerr.InvalidRequest,
		"Unexpected broker id, expected 1, but received 7")
	cfgCheckErr(t, "broker name not a number", iresp.Resources[1].ErrorCode, iresp.Resources[1].ErrorMessage, kerr.InvalidRequest,
		"Node id must be an integer, but it is: x")
	if iresp.Resources[2].ErrorCode != 0 {
		t.Errorf("broker logger with no operations: error %d", iresp.Resources[2].ErrorCode)
	}

	other := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeBroker, "7", nil, false, false)
	cfgCheckErr(t, "describe other broker", other.ErrorCode, other.ErrorMessage, kerr.InvalidRequest,
		"Unexpected broker id, expected 1 or empty string, but received 7")
	otherLogger := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeBrokerLogger, "7", nil, false, false)
	cfgCheckErr(t, "describe another broker's loggers", otherLogger.ErrorCode, otherLogger.ErrorMessage, kerr.InvalidRequest,
		"Unexpected broker id, expected 1 but received 7")
}

func TestAlterConfigsReplacesWholeSet(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"retention.ms": kadm.StringPtr("100000"), "max.message.bytes": kadm.StringPtr("1024"),
	}, "t"); err != nil {
		t.Fatal(err)
	}
	if got := cfgSettings(t, b, "t").maxMessageBytes; got != 1024 {
		t.Fatalf("created with max.message.bytes=1024, partition runs with %d", got)
	}

	rs, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, "t")
	cfgCheckAlter(t, "replace topic configs", rs, err, nil, "")
	if got := b.cluster.Snapshot().Topics["t"].Configs; !maps.Equal(got, map[string]string{"cleanup.policy": "compact"}) {
		t.Errorf("topic configs = %v, want cleanup.policy=compact only", got)
	}
	if s := cfgSettings(t, b, "t"); s.maxMessageBytes != 1048588 || !s.compacted {
		t.Errorf("partition settings: max %d compacted %v, want 1048588 true", s.maxMessageBytes, s.compacted)
	}
	res := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeTopic, "t",
		[]string{"retention.ms", "cleanup.policy", "max.message.bytes"}, false, false)
	cfgCheckEntry(t, cfgEntry(t, res, "retention.ms"), "604800000", kmsg.ConfigSourceDefaultConfig)
	cfgCheckEntry(t, cfgEntry(t, res, "cleanup.policy"), "compact", kmsg.ConfigSourceDynamicTopicConfig)
	cfgCheckEntry(t, cfgEntry(t, res, "max.message.bytes"), "1048588", kmsg.ConfigSourceDefaultConfig)

	rs, err = adm.ValidateAlterTopicConfigsState(ctx, nil, "t")
	cfgCheckAlter(t, "validate-only replace", rs, err, nil, "")
	rs, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "segment.bytes", Value: kadm.StringPtr("1")}}, "t")
	cfgCheckAlter(t, "invalid value", rs, err, kerr.InvalidConfig, "")
	rs, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: nil}}, "t")
	cfgCheckAlter(t, "null value", rs, err, kerr.InvalidRequest, "Null value not supported for : retention.ms")
	rs, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("1")}}, "missing")
	cfgCheckAlter(t, "unknown topic", rs, err, kerr.UnknownTopicOrPartition, "The topic 'missing' does not exist.")
	if got := b.cluster.Snapshot().Topics["t"].Configs; !maps.Equal(got, map[string]string{"cleanup.policy": "compact"}) {
		t.Errorf("after failed and validate-only changes, topic configs = %v", got)
	}

	// An empty set removes every override.
	rs, err = adm.AlterTopicConfigsState(ctx, nil, "t")
	cfgCheckAlter(t, "replace with nothing", rs, err, nil, "")
	if got := b.cluster.Snapshot().Topics["t"].Configs; len(got) != 0 {
		t.Errorf("topic configs after an empty AlterConfigs = %v", got)
	}

	// Broker configs are replaced the same way.
	rs, err = adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{
		{Name: "message.max.bytes", Value: kadm.StringPtr("5000")}, {Name: "log.retention.ms", Value: kadm.StringPtr("1000")},
	}, 1)
	cfgCheckAlter(t, "replace broker configs", rs, err, nil, "")
	if got := cfgSettings(t, b, "t").maxMessageBytes; got != 5000 {
		t.Errorf("topic max.message.bytes = %d after broker message.max.bytes=5000", got)
	}
	rs, err = adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: kadm.StringPtr("2000")}}, 1)
	cfgCheckAlter(t, "replace broker configs again", rs, err, nil, "")
	if got := b.cluster.Snapshot().BrokerConfigs[1]; !maps.Equal(got, map[string]string{"log.retention.ms": "2000"}) {
		t.Errorf("broker configs = %v, want log.retention.ms=2000 only", got)
	}
	if got := cfgSettings(t, b, "t").maxMessageBytes; got != 1048588 {
		t.Errorf("topic max.message.bytes = %d after message.max.bytes was dropped", got)
	}
	rs, err = adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Name: "node.id", Value: kadm.StringPtr("3")}}, 1)
	cfgCheckAlter(t, "read-only broker config", rs, err, kerr.InvalidRequest, "Cannot update these configs dynamically: [node.id]")

	req := kmsg.NewPtrAlterConfigsRequest()
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
	req.Resources = append(req.Resources, rr)
	resp := cfgNodeRequest[*kmsg.AlterConfigsResponse](ctx, t, b, cl, req)
	cfgCheckErr(t, "broker logger", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, kerr.InvalidRequest,
		"Unknown resource type 8")
}

// TestStaticConfigSources checks the rule for STATIC_BROKER_CONFIG: a
// setting the broker runs with is reported from there only when it differs
// from Kafka's default, as a Kafka broker reports only what its
// server.properties sets.
func TestStaticConfigSources(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) {
		c.MessageMaxBytes = 2000000
		c.Groups.InitialRebalanceDelay = 0
		c.OffsetsTopicReplicationFactor = 1
	})
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	node := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeBroker, "1", nil, true, false)
	id := fmt.Sprint(b.cfg.NodeID)
	static, dflt := kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigSourceDefaultConfig
	for _, tt := range []struct {
		name, value string
		src         kmsg.ConfigSource
	}{
		{"message.max.bytes", "2000000", static},
		{"group.initial.rebalance.delay.ms", "0", static},
		{"offsets.topic.replication.factor", "1", static},
		{"log.flush.interval.messages", "1", static},
		{"node.id", id, static},
		{"broker.id", id, static},
		{"group.coordinator.rebalance.protocols", "classic,consumer,share", static},
		{"auto.create.topics.enable", "true", dflt},
		{"socket.request.max.bytes", "104857600", dflt},
		{"default.replication.factor", "1", dflt},
		{"group.max.session.timeout.ms", "1800000", dflt},
		{"num.io.threads", "8", dflt},
		{"advertised.listeners", "<null>", dflt},
	} {
		cfgCheckEntry(t, cfgEntry(t, node, tt.name), tt.value, tt.src)
	}
	topic := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeTopic, "t", nil, false, false)
	cfgCheckEntry(t, cfgEntry(t, topic, "max.message.bytes"), "2000000", static)
	cfgCheckEntry(t, cfgEntry(t, topic, "segment.bytes"), "1073741824", dflt)
	if got := cfgSettings(t, b, "t").maxMessageBytes; got != 2000000 {
		t.Errorf("partition max.message.bytes = %d, want the static 2000000", got)
	}
}

// TestKafkaBrokerCatalogue describes the broker configs as
// kafka-configs --describe --all does: every config Kafka 4.4 reports is
// there (83 were, of 350), those Gregor does not act on with Kafka's
// default, read-only. A Kafka config Gregor did not know
// (log.cleaner.threads) used to be accepted and then shown as null and
// sensitive; now it is refused as read-only, as Kafka refuses a static
// config.
func TestKafkaBrokerCatalogue(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := configsTestCtx(t)
	cl := newClient(t, b)
	all := cfgDescribe(ctx, t, b, cl, kmsg.ConfigResourceTypeBroker, "1", nil, true, true)
	if all.ErrorCode != 0 || len(all.Configs) < 350 {
		t.Fatalf("describe all broker configs: error %d, %d configs, want Kafka 4.4's 350 at least", all.ErrorCode, len(all.Configs))
	}
	seen := map[string]bool{}
	for _, c := range all.Configs {
		seen[c.Name] = true
	}
	for _, name := range []string{"log.cleaner.threads", "num.replica.fetchers", "controller.quorum.voters",
		"sasl.enabled.mechanisms", "ssl.keystore.password", "transaction.state.log.replication.factor"} {
		if !seen[name] {
			t.Errorf("Kafka broker config %s not described", name)
		}
	}
	threads := cfgEntry(t, all, "log.cleaner.threads")
	if threads.Value == nil || *threads.Value != "1" || threads.IsSensitive || !threads.ReadOnly ||
		threads.Source != kmsg.ConfigSourceDefaultConfig || threads.ConfigType != kmsg.ConfigTypeInt ||
		threads.Documentation == nil || *threads.Documentation == "" {
		t.Errorf("log.cleaner.threads: %+v", threads)
	}
	if pw := cfgEntry(t, all, "ssl.keystore.password"); pw.Value != nil || !pw.IsSensitive {
		t.Errorf("ssl.keystore.password: value %v, sensitive %v", pw.Value, pw.IsSensitive)
	}

	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "log.cleaner.threads", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("2")}}
	req.Resources = append(req.Resources, rr)
	res := cfgNodeRequest[*kmsg.IncrementalAlterConfigsResponse](ctx, t, b, cl, req).Resources[0]
	cfgCheckErr(t, "set log.cleaner.threads", res.ErrorCode, res.ErrorMessage, kerr.InvalidRequest,
		"Cannot update these configs dynamically: [log.cleaner.threads]")
	if got := b.cluster.Snapshot().BrokerConfigs[-1]["log.cleaner.threads"]; got != "" {
		t.Errorf("log.cleaner.threads stored as %q", got)
	}
}
