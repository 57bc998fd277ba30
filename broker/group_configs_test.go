package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
)

// alterGroupConfig sends one IncrementalAlterConfigs GROUP resource and
// returns its error code.
func alterGroupConfig(ctx context.Context, t testing.TB, cl *kgo.Client, groupID string, op kmsg.IncrementalAlterConfigOp, name string, value *string) int16 {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, groupID
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, op, value
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("alter group config %s: %v", name, err)
	}
	return resp.Resources[0].ErrorCode
}

func setGroupConfig(ctx context.Context, t testing.TB, cl *kgo.Client, groupID, name, value string) {
	t.Helper()
	if code := alterGroupConfig(ctx, t, cl, groupID, kmsg.IncrementalAlterConfigOpSet, name, kmsg.StringPtr(value)); code != 0 {
		t.Fatalf("set group config %s=%s: error %d", name, value, code)
	}
}

// describeGroupConfig returns a group's configs: value and source by name.
func describeGroupConfig(ctx context.Context, t testing.TB, cl *kgo.Client, groupID string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, groupID
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe group configs: %v %+v", err, resp)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

// TestGroupConfigs: the GROUP config resource as kafka-configs
// --entity-type groups uses it: defaults from the broker, set and delete,
// Kafka's errors for unknown keys and bad values, and the values kept
// across a restart.
func TestGroupConfigs(t *testing.T) {
	t.Parallel()
	rb := startGrpRestartable(t, false)
	ctx := testContext(t, time.Minute)
	cl := newClient(t, rb.b)
	got := describeGroupConfig(ctx, t, cl, "no-such-group-yet")
	if c := got["share.auto.offset.reset"]; c.Value == nil || *c.Value != "latest" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("default share.auto.offset.reset: %+v", c)
	}
	if c := got["consumer.session.timeout.ms"]; c.Value == nil || *c.Value != "45000" {
		t.Fatalf("default consumer.session.timeout.ms: %+v", c)
	}
	setGroupConfig(ctx, t, cl, "g1", "share.auto.offset.reset", "earliest")
	setGroupConfig(ctx, t, cl, "g1", "share.record.lock.duration.ms", "20000")
	for _, c := range []struct {
		name, value string
		code        protocol.ErrorCode
	}{
		{"share.auto.offset.reset", "sometime", protocol.InvalidConfig},
		{"share.auto.offset.reset", "by_duration:PT1H", protocol.None},
		{"share.record.lock.duration.ms", "1000", protocol.InvalidConfig},
		{"consumer.heartbeat.interval.ms", "60000", protocol.InvalidConfig},
		{"no.such.config", "1", protocol.InvalidConfig},
	} {
		if code := alterGroupConfig(ctx, t, cl, "g2", kmsg.IncrementalAlterConfigOpSet, c.name, kmsg.StringPtr(c.value)); code != int16(c.code) {
			t.Errorf("set %s=%s: code %d, want %d", c.name, c.value, code, c.code)
		}
	}
	// Kafka 4.4's messages.
	for _, c := range []struct{ name, value, msg string }{
		{"share.record.lock.duration.ms", "10000", "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"share.record.lock.duration.ms", "10", "Invalid value 10 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{"share.isolation.level", "dirty", "Invalid value dirty for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{"consumer.session.timeout.ms", "abc", "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"},
		{"no.such", "1", "Unknown group config name: no.such"},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g2"
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		rc.Name, rc.Value = c.name, kmsg.StringPtr(c.value)
		res.Configs = append(res.Configs, rc)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.Resources[0]; r.ErrorCode != int16(protocol.InvalidConfig) || r.ErrorMessage == nil || *r.ErrorMessage != c.msg {
			t.Errorf("set %s=%s: code %d message %v, want %q", c.name, c.value, r.ErrorCode, r.ErrorMessage, c.msg)
		}
	}
	if code := alterGroupConfig(ctx, t, cl, "g2", kmsg.IncrementalAlterConfigOpAppend, "share.auto.offset.reset", kmsg.StringPtr("x")); code != int16(protocol.InvalidConfig) {
		t.Errorf("APPEND: code %d", code)
	}
	if code := alterGroupConfig(ctx, t, cl, "g2", kmsg.IncrementalAlterConfigOpSet, "share.auto.offset.reset", nil); code != int16(protocol.InvalidRequest) {
		t.Errorf("null value: code %d", code)
	}
	if code := alterGroupConfig(ctx, t, cl, "g2", kmsg.IncrementalAlterConfigOpDelete, "share.auto.offset.reset", nil); code != 0 {
		t.Errorf("delete: code %d", code)
	}
	if c := describeGroupConfig(ctx, t, cl, "g2")["share.auto.offset.reset"]; *c.Value != "latest" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("after delete: %+v", c)
	}

	rb.restart(t)
	cl = newClient(t, rb.b)
	got = describeGroupConfig(ctx, t, cl, "g1")
	if c := got["share.auto.offset.reset"]; *c.Value != "earliest" || c.Source != sourceDynamicGroupConfig {
		t.Fatalf("after restart share.auto.offset.reset: %+v", c)
	}
	if c := got["share.record.lock.duration.ms"]; *c.Value != "20000" {
		t.Fatalf("after restart share.record.lock.duration.ms: %+v", c)
	}
	if s := rb.b.shareSettings("g1"); s.lockDuration != 20*time.Second || s.autoOffsetReset != "earliest" {
		t.Fatalf("share settings of g1: %+v", s)
	}
}

// replaceGroupConfigs sends one AlterConfigs (legacy) GROUP resource, its
// configs in the order given as name, value pairs, and returns the
// resource's error code and message.
func replaceGroupConfigs(ctx context.Context, t testing.TB, cl *kgo.Client, groupID string, validateOnly bool, kv ...string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, groupID
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("AlterConfigs of group %q: %v", groupID, err)
	}
	r := resp.Resources[0]
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	return r.ErrorCode, msg
}

// TestGroupConfigsAlterConfigs: AlterConfigs (33) on the GROUP resource
// replaces the group's whole config set, as in Kafka 4.4: keys it does not
// name go back to the broker's values, an empty set clears the group, the
// set is checked as a whole with Kafka's messages, and validate_only
// writes nothing.
func TestGroupConfigsAlterConfigs(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := testContext(t, time.Minute)
	cl := newClient(t, b)
	setGroupConfig(ctx, t, cl, "g", "share.auto.offset.reset", "earliest")
	setGroupConfig(ctx, t, cl, "g", "consumer.heartbeat.interval.ms", "6000")

	if code, msg := replaceGroupConfigs(ctx, t, cl, "g", false,
		"share.isolation.level", "read_committed", "share.record.lock.duration.ms", "20000"); code != 0 {
		t.Fatalf("replace: code %d %q", code, msg)
	}
	got := describeGroupConfig(ctx, t, cl, "g")
	for name, want := range map[string]struct {
		value string
		src   kmsg.ConfigSource
	}{
		"share.isolation.level":          {"read_committed", sourceDynamicGroupConfig},
		"share.record.lock.duration.ms":  {"20000", sourceDynamicGroupConfig},
		"share.auto.offset.reset":        {"latest", kmsg.ConfigSourceDefaultConfig},
		"consumer.heartbeat.interval.ms": {"5000", kmsg.ConfigSourceDefaultConfig},
	} {
		if c := got[name]; c.Value == nil || *c.Value != want.value || c.Source != want.src {
			t.Errorf("after replace, %s: %+v, want %s from source %d", name, c, want.value, want.src)
		}
	}

	for _, c := range []struct {
		validateOnly bool
		group        string
		kv           []string
		code         protocol.ErrorCode
		msg          string
	}{
		{false, "g", []string{"share.record.lock.duration.ms", "10000"}, protocol.InvalidConfig,
			"share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{true, "g", []string{"share.isolation.level", "read_committed", "no.such", "1"}, protocol.InvalidConfig,
			"Unknown group config name: no.such"},
		{false, "g", []string{"share.auto.offset.reset", "sometime"}, protocol.InvalidConfig,
			"Invalid value sometime for configuration share.auto.offset.reset: Invalid value `sometime` for configuration " +
				"share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{false, "g", []string{"share.isolation.level", "a", "share.isolation.level", "b"}, protocol.InvalidRequest,
			"Error due to duplicate config keys"},
		{false, "", []string{"share.isolation.level", "read_committed"}, protocol.InvalidRequest,
			"Group name must not be empty"},
		// Valid, but validate_only: nothing changes.
		{true, "g", []string{"share.auto.offset.reset", "earliest"}, protocol.None, ""},
	} {
		if code, msg := replaceGroupConfigs(ctx, t, cl, c.group, c.validateOnly, c.kv...); code != int16(c.code) || msg != c.msg {
			t.Errorf("replace %q with %v (validate only %v): code %d %q, want %d %q", c.group, c.kv, c.validateOnly, code, msg, c.code, c.msg)
		}
	}
	if s := b.shareSettings("g"); s.lockDuration != 20*time.Second || s.autoOffsetReset != "latest" || !s.readCommitted {
		t.Errorf("share settings of g after refused and validate-only changes: %+v", s)
	}

	// An empty set gives the group the broker's values again.
	if code, msg := replaceGroupConfigs(ctx, t, cl, "g", false); code != 0 {
		t.Fatalf("replace with nothing: code %d %q", code, msg)
	}
	for name, c := range describeGroupConfig(ctx, t, cl, "g") {
		if c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("after replace with nothing, %s: %+v", name, c)
		}
	}
	if set := b.cluster.Snapshot().GroupConfigs["g"]; len(set) != 0 {
		t.Errorf("registry still holds %v for g", set)
	}
}

// TestGroupConfigBounds: the broker settings that bound group configs
// (group.consumer.min/max.*, group.share.min/max.*, with Kafka 4.4's names
// and defaults): the defaults must lie within them, a group config is
// checked against them with Kafka's range message, and DescribeConfigs of
// the broker reports them.
func TestGroupConfigBounds(t *testing.T) {
	t.Parallel()
	def := DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for name, mutate := range map[string]func(*Config){
		"consumer session above its max": func(c *Config) { c.Groups.ConsumerSessionTimeout = 61 * time.Second },
		"share heartbeat below its min":  func(c *Config) { c.Groups.ShareHeartbeatInterval = time.Second },
		"lock duration below its min":    func(c *Config) { c.ShareRecordLockDuration = 10 * time.Second },
		"delivery limit above its max":   func(c *Config) { c.ShareMaxDeliveryCountLimit = 4 },
		"record locks above their max":   func(c *Config) { c.SharePartitionMaxRecordLocks = 5000 },
		"min record locks below 100":     func(c *Config) { c.ShareMinPartitionMaxRecordLocks = 50 },
	} {
		c := DefaultConfig()
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}

	b := startBroker(t, func(c *Config) {
		c.Groups.ConsumerMaxSessionTimeout = 90 * time.Second
		c.ShareMinRecordLockDuration = 5 * time.Second
	})
	ctx := testContext(t, time.Minute)
	cl := newClient(t, b)
	setGroupConfig(ctx, t, cl, "g", "consumer.session.timeout.ms", "80000")
	if code, msg := replaceGroupConfigs(ctx, t, cl, "g", true, "share.record.lock.duration.ms", "4000"); code != int16(protocol.InvalidConfig) ||
		msg != "share.record.lock.duration.ms must be in the range 5000 to 60000 inclusive." {
		t.Errorf("lock duration 4000: code %d %q", code, msg)
	}
	rcs, err := kadm.NewClient(cl).DescribeBrokerConfigs(ctx, b.cfg.NodeID)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(fmt.Sprint(b.cfg.NodeID), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range rc.Configs {
		got[c.Key] = c.MaybeValue()
	}
	for name, want := range map[string]string{
		"group.consumer.min.session.timeout.ms":      "45000",
		"group.consumer.max.session.timeout.ms":      "90000",
		"group.consumer.min.heartbeat.interval.ms":   "5000",
		"group.consumer.max.heartbeat.interval.ms":   "15000",
		"group.share.min.session.timeout.ms":         "45000",
		"group.share.max.session.timeout.ms":         "60000",
		"group.share.min.heartbeat.interval.ms":      "5000",
		"group.share.max.heartbeat.interval.ms":      "15000",
		"group.share.min.record.lock.duration.ms":    "5000",
		"group.share.max.record.lock.duration.ms":    "60000",
		"group.share.min.delivery.count.limit":       "2",
		"group.share.max.delivery.count.limit":       "10",
		"group.share.min.partition.max.record.locks": "100",
		"group.share.max.partition.max.record.locks": "4000",
	} {
		if got[name] != want {
			t.Errorf("broker config %s = %q, want %q", name, got[name], want)
		}
	}
}

// TestGroupConfigsShareLimits: a share group's share.delivery.count.limit
// and share.partition.max.record.locks (Kafka 4.4 group configs) reach its
// share partitions: with a window of 100 records only 100 of 300 are
// acquired at once, and with a limit of 2 deliveries a record released
// twice is archived instead of offered a third time. Both keys report the
// broker's settings as their defaults and are checked against its bounds.
func TestGroupConfigsShareLimits(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := testContext(t, time.Minute)
	cl := newClient(t, b)

	other := describeGroupConfig(ctx, t, cl, "other")
	for name, want := range map[string]string{"share.delivery.count.limit": "5", "share.partition.max.record.locks": "2000"} {
		c := other[name]
		if c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("default %s: %+v, want %s", name, c, want)
		}
	}
	for _, c := range []struct{ name, value, msg string }{
		{"share.delivery.count.limit", "11", "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
		{"share.delivery.count.limit", "1", "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{"share.partition.max.record.locks", "5000", "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."},
		{"share.partition.max.record.locks", "99", "Invalid value 99 for configuration share.partition.max.record.locks: Value must be at least 100"},
	} {
		if code, msg := replaceGroupConfigs(ctx, t, cl, "g", true, c.name, c.value); code != int16(protocol.InvalidConfig) || msg != c.msg {
			t.Errorf("%s=%s: code %d %q, want %q", c.name, c.value, code, msg, c.msg)
		}
	}

	topicID := grpCreateTopic(ctx, t, kadm.NewClient(cl), "limits", 1)
	if code, msg := replaceGroupConfigs(ctx, t, cl, "g", false, "share.auto.offset.reset", "earliest",
		"share.delivery.count.limit", "2", "share.partition.max.record.locks", "100"); code != 0 {
		t.Fatalf("set group configs: code %d %q", code, msg)
	}
	// Synonyms: the group's value, then the broker's under its name.
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dreq.IncludeSynonyms = true
	dres := kmsg.NewDescribeConfigsRequestResource()
	dres.ResourceType, dres.ResourceName, dres.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "g", []string{"share.delivery.count.limit"}
	dreq.Resources = append(dreq.Resources, dres)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if cs := dresp.Resources[0].Configs; len(cs) != 1 || len(cs[0].ConfigSynonyms) != 2 ||
		cs[0].ConfigSynonyms[0].Name != "share.delivery.count.limit" || cfgStr(cs[0].ConfigSynonyms[0].Value) != "2" ||
		cs[0].ConfigSynonyms[1].Name != "group.share.delivery.count.limit" || cfgStr(cs[0].ConfigSynonyms[1].Value) != "5" {
		t.Errorf("share.delivery.count.limit with synonyms: %+v", cs)
	}
	prod := newClient(t, b, kgo.DefaultProduceTopic("limits"))
	recs := make([]*kgo.Record, 300)
	for i := range recs {
		recs[i] = kgo.StringRecord(fmt.Sprint(i))
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	w := dialWire(t, b)
	epoch := int32(0)
	// fetch sends one ShareFetch, releasing offsets from..to first when
	// to >= from, and returns the acquired offsets' range, how many there
	// are and their delivery counts.
	fetch := func(from, to int64) (first, last, n int64, counts map[int16]bool) {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(1)
		req.GroupID, req.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr("m1")
		req.ShareSessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = epoch, 3000, 1, 1<<20, 1000
		epoch++
		tp := kmsg.NewShareFetchRequestTopicPartition()
		if to >= from {
			ack := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			ack.FirstOffset, ack.LastOffset, ack.AcknowledgeTypes = from, to, []int8{2}
			tp.AcknowledgementBatches = append(tp.AcknowledgementBatches, ack)
		}
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = [16]byte(topicID)
		rt.Partitions = append(rt.Partitions, tp)
		req.Topics = append(req.Topics, rt)
		resp := w.mustRoundTrip(req).(*kmsg.ShareFetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("share fetch: %+v", resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 {
			t.Fatalf("share fetch: error %d, acknowledge error %d", p.ErrorCode, p.AcknowledgeErrorCode)
		}
		first, counts = -1, map[int16]bool{}
		for _, a := range p.AcquiredRecords {
			if first < 0 || a.FirstOffset < first {
				first = a.FirstOffset
			}
			last = max(last, a.LastOffset)
			n += a.LastOffset - a.FirstOffset + 1
			counts[a.DeliveryCount] = true
		}
		return first, last, n, counts
	}
	check := func(what string, wantFirst int64, wantCount int16, first, last, n int64, counts map[int16]bool) {
		t.Helper()
		if first != wantFirst || last != wantFirst+99 || n != 100 || len(counts) != 1 || !counts[wantCount] {
			t.Fatalf("%s: acquired %d records, offsets %d-%d, delivery counts %v; want the 100 from %d with count %d",
				what, n, first, last, counts, wantFirst, wantCount)
		}
	}
	first, last, n, counts := fetch(0, -1)
	check("first fetch", 0, 1, first, last, n, counts)
	first, last, n, counts = fetch(0, 99)
	check("after the first release", 0, 2, first, last, n, counts)
	// The second release reaches the limit: the records are archived and
	// the window moves on.
	first, last, n, counts = fetch(0, 99)
	check("after the second release", 100, 1, first, last, n, counts)
}

// TestGroupConfigsConsumerHeartbeat: a consumer group's
// consumer.heartbeat.interval.ms reaches its members through
// ConsumerGroupHeartbeat, even written with spaces around it (Kafka trims
// a value where it parses it), and other groups keep the broker's.
func TestGroupConfigsConsumerHeartbeat(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx := testContext(t, time.Minute)
	cl := newClient(t, b)
	grpCreateTopic(ctx, t, kadm.NewClient(cl), "hb", 1)
	setGroupConfig(ctx, t, cl, "cg", "consumer.heartbeat.interval.ms", " 6000 ")
	for group, want := range map[string]int32{"cg": 6000, "other": 5000} {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, "member-"+group, 30000
		req.SubscribedTopicNames, req.Topics = []string{"hb"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		var got int32
		waitFor(t, 30*time.Second, "heartbeat of group "+group, func() error {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			if resp.ErrorCode != 0 {
				return fmt.Errorf("error %d %q", resp.ErrorCode, cfgStr(resp.ErrorMessage))
			}
			got = resp.HeartbeatIntervalMillis
			return nil
		})
		if got != want {
			t.Errorf("group %s: heartbeat interval %d, want %d", group, got, want)
		}
	}
}
