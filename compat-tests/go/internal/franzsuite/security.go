package franzsuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// securityOff asks the security APIs of a broker that has no authorizer,
// no SCRAM users and no client quotas configured, as the lab's brokers
// are: ACL requests get SECURITY_DISABLED, quota and SCRAM descriptions an
// empty answer or the error for what is wrong with the request. A broker
// that closed the connection instead would read as EOF to every client.
func (s *suite) securityOff(ctx context.Context, t *compat.T) (string, error) {
	cl, err := s.client(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	ask := func(name string, req kmsg.Request) (kmsg.Response, error) {
		sctx, cancel := t.Step(ctx, name)
		defer cancel()
		resp, err := cl.Request(sctx, req)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return resp, nil
	}
	code := func(name string, got int16, want error) error {
		if err := kerr.ErrorForCode(got); !errors.Is(err, want) {
			return fmt.Errorf("%s: error %v, want %v", name, err, want)
		}
		return nil
	}

	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType, describe.Operation, describe.PermissionType = 1, 1, 1, 1 // ANY
	resp, err := ask("describe acls", describe)
	if err != nil {
		return "", err
	}
	if err := code("describe acls", resp.(*kmsg.DescribeACLsResponse).ErrorCode, kerr.SecurityDisabled); err != nil {
		return "", err
	}

	create := kmsg.NewPtrCreateACLsRequest()
	for _, topic := range []string{t.Name("a"), t.Name("b")} {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = 2, topic, 3           // TOPIC, LITERAL
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:compat", "*", 3, 3 // READ, ALLOW
		create.Creations = append(create.Creations, c)
	}
	if resp, err = ask("create acls", create); err != nil {
		return "", err
	}
	results := resp.(*kmsg.CreateACLsResponse).Results
	if len(results) != 2 {
		return "", fmt.Errorf("create acls: %d results for 2 creations", len(results))
	}
	for _, r := range results {
		if err := code("create acls", r.ErrorCode, kerr.SecurityDisabled); err != nil {
			return "", err
		}
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = 1, 1, 1, 1
	del.Filters = append(del.Filters, f)
	if resp, err = ask("delete acls", del); err != nil {
		return "", err
	}
	if rs := resp.(*kmsg.DeleteACLsResponse).Results; len(rs) != 1 {
		return "", fmt.Errorf("delete acls: %d results for 1 filter", len(rs))
	} else if err := code("delete acls", rs[0].ErrorCode, kerr.SecurityDisabled); err != nil {
		return "", err
	}

	quotas := []struct {
		name  string
		comps []kmsg.DescribeClientQuotasRequestComponent
		want  error // nil: no error and no entries
	}{
		{"every quota", nil, nil},
		{"quotas of any user", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 2}}, nil},
		{"quotas of one client id", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "client-id", MatchType: 0, Match: kmsg.StringPtr(t.Name(""))}}, nil},
		{"an exact match with no string", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 0}}, kerr.InvalidRequest},
		{"a default match with a string", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 1, Match: kmsg.StringPtr("x")}}, kerr.InvalidRequest},
		{"an unknown entity type", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "team", MatchType: 2}}, kerr.UnsupportedVersion},
		{"one entity type twice", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 2}, {EntityType: "user", MatchType: 1}}, kerr.InvalidRequest},
		{"ip with user", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "ip", MatchType: 2}, {EntityType: "user", MatchType: 2}}, kerr.InvalidRequest},
	}
	for _, q := range quotas {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components = q.comps
		resp, err := ask("describe client quotas: "+q.name, req)
		if err != nil {
			return "", err
		}
		r := resp.(*kmsg.DescribeClientQuotasResponse)
		if q.want == nil {
			if r.ErrorCode != 0 || len(r.Entries) != 0 {
				return "", fmt.Errorf("describe client quotas, %s: error %v, %d entries; want none of either", q.name, kerr.ErrorForCode(r.ErrorCode), len(r.Entries))
			}
		} else if err := code("describe client quotas, "+q.name, r.ErrorCode, q.want); err != nil {
			return "", err
		}
	}

	scram := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	if resp, err = ask("describe scram credentials of every user", scram); err != nil {
		return "", err
	}
	if r := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse); r.ErrorCode != 0 || len(r.Results) != 0 {
		return "", fmt.Errorf("describe scram credentials of every user: error %v, %d results; want none", kerr.ErrorForCode(r.ErrorCode), len(r.Results))
	}
	a, b := t.Name("alice"), t.Name("bob")
	scram = kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range []string{a, b, a} {
		scram.Users = append(scram.Users, kmsg.DescribeUserSCRAMCredentialsRequestUser{Name: u})
	}
	if resp, err = ask("describe scram credentials of named users", scram); err != nil {
		return "", err
	}
	var got []string
	for _, r := range resp.(*kmsg.DescribeUserSCRAMCredentialsResponse).Results {
		got = append(got, fmt.Sprintf("%s:%v", r.User, kerr.ErrorForCode(r.ErrorCode)))
	}
	want := []string{fmt.Sprintf("%s:%v", a, kerr.DuplicateResource), fmt.Sprintf("%s:%v", b, kerr.ResourceNotFound)}
	slices.Sort(got) // the order of the results is not defined
	if !slices.Equal(got, want) {
		return "", fmt.Errorf("describe scram credentials of %s, %s, %s: %v, want %v", a, b, a, got, want)
	}
	return "acls, 8 quota filters and scram users answered", nil
}

// transactionCoordinator asks for the coordinator of a transactional id:
// within a few seconds the broker must name one or say, with an error a
// client does not retry, why not. A retriable answer that never turns
// into one of those leaves a transactional producer waiting out its
// timeout (a minute by default).
func (s *suite) transactionCoordinator(ctx context.Context, t *compat.T) (string, error) {
	cl, err := s.client(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	sctx, cancel := t.Step(ctx, "find the coordinator of a transactional id")
	defer cancel()
	deadline := time.Now().Add(15 * time.Second)
	for tries := 1; ; tries++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1
		req.CoordinatorKey = t.Name("txn")
		req.CoordinatorKeys = []string{req.CoordinatorKey}
		resp, err := req.RequestWith(sctx, cl)
		if err != nil {
			return "", fmt.Errorf("find coordinator: %w", err)
		}
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		if len(resp.Coordinators) > 0 {
			c = resp.Coordinators[0]
		} else {
			c.ErrorCode, c.NodeID = resp.ErrorCode, resp.NodeID
		}
		cerr := kerr.ErrorForCode(c.ErrorCode)
		switch {
		case cerr == nil:
			return fmt.Sprintf("coordinator %d after %d tries", c.NodeID, tries), nil
		case !kerr.IsRetriable(cerr):
			msg := ""
			if c.ErrorMessage != nil {
				msg = ": " + *c.ErrorMessage
			}
			return fmt.Sprintf("refused after %d tries, not retriable: %s%s", tries, cerr.(*kerr.Error).Message, msg), nil
		case time.Now().After(deadline):
			return "", fmt.Errorf("find coordinator: still %v after %d tries in 15s", cerr, tries)
		}
		select {
		case <-sctx.Done():
			return "", sctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// brokerLoggers reads the broker's loggers (BROKER_LOGGER configs), raises
// one to DEBUG, reads it back, and removes its level again, which leaves it
// at root's, as kafka-configs --entity-type broker-loggers does.
func (s *suite) brokerLoggers(ctx context.Context, t *compat.T) (string, error) {
	cl, err := s.client(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	sctx, cancel := t.Step(ctx, "find the broker's node id")
	defer cancel()
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(sctx, cl)
	if err != nil || len(md.Brokers) == 0 {
		return "", fmt.Errorf("metadata: %v, %d brokers", err, len(md.Brokers))
	}
	node := md.Brokers[0].NodeID
	id := fmt.Sprint(node)
	levels := func(step string) (map[string]string, error) {
		sctx, cancel := t.Step(ctx, step)
		defer cancel()
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, id
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(sctx, cl.Broker(int(node)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", step, err)
		}
		if len(resp.Resources) != 1 {
			return nil, fmt.Errorf("%s: %d resources", step, len(resp.Resources))
		}
		r := resp.Resources[0]
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, fmt.Errorf("%s: %w", step, err)
		}
		out := map[string]string{}
		for _, c := range r.Configs {
			if c.Value == nil || c.ReadOnly || c.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig {
				return nil, fmt.Errorf("%s: logger %s: value %v, read-only %v, source %v", step, c.Name, c.Value, c.ReadOnly, c.Source)
			}
			out[c.Name] = *c.Value
		}
		return out, nil
	}
	alter := func(step string, op kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
		sctx, cancel := t.Step(ctx, step)
		defer cancel()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, id
		rr.Configs = append(rr.Configs, op)
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(sctx, cl.Broker(int(node)))
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		if len(resp.Resources) != 1 {
			return fmt.Errorf("%s: %d resources", step, len(resp.Resources))
		}
		if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		return nil
	}

	before, err := levels("describe the loggers")
	if err != nil {
		return "", err
	}
	root, ok := before["root"]
	if !ok {
		return "", fmt.Errorf("no root logger among %d", len(before))
	}
	var name string
	for n, l := range before {
		if n != "root" && l == root && (name == "" || n < name) {
			name = n
		}
	}
	if name == "" {
		return "", fmt.Errorf("no logger at root's level %s among %d", root, len(before))
	}
	level := "DEBUG"
	if root == "DEBUG" {
		level = "TRACE"
	}
	if err := alter("set "+name+"="+level, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: &level}); err != nil {
		return "", err
	}
	during, err := levels("describe after the change")
	if err != nil {
		return "", err
	}
	if during[name] != level {
		return "", fmt.Errorf("logger %s is %s after it was set to %s", name, during[name], level)
	}
	if err := alter("delete "+name, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpDelete}); err != nil {
		return "", err
	}
	after, err := levels("describe after the delete")
	if err != nil {
		return "", err
	}
	if after[name] != root {
		return "", fmt.Errorf("logger %s is %s after its level was deleted, want root's %s", name, after[name], root)
	}
	bad := "LOUDLY"
	if err := alter("set a level that does not exist", kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: &bad}); !errors.Is(err, kerr.InvalidConfig) {
		return "", fmt.Errorf("set %s=%s: %v, want INVALID_CONFIG", name, bad, err)
	}
	return fmt.Sprintf("%d loggers; %s set to %s and back to root's %s", len(before), name, level, root), nil
}

// features reads the broker's features from ApiVersions, as kafka-features
// describe does: every finalized level lies in its supported range; then,
// validate-only, it asks to keep each supported feature at its finalized
// level (0 when none is), which must be accepted, and to raise one past
// its supported maximum and to set a feature no broker has, which must be
// refused with INVALID_UPDATE_VERSION.
func (s *suite) features(ctx context.Context, t *compat.T) (string, error) {
	cl, err := s.client(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	sctx, cancel := t.Step(ctx, "api versions")
	defer cancel()
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "gregor-compat", "1"
	resp, err := av.RequestWith(sctx, cl)
	if err != nil {
		return "", fmt.Errorf("api versions: %w", err)
	}
	if len(resp.SupportedFeatures) == 0 {
		return "", errors.New("api versions reports no supported features")
	}
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	var keep []kmsg.UpdateFeaturesRequestFeatureUpdate
	var over kmsg.UpdateFeaturesRequestFeatureUpdate
	for _, f := range resp.SupportedFeatures {
		level := finalized[f.Name]
		if (level != 0 || f.MinVersion > 0) && (level < f.MinVersion || level > f.MaxVersion) {
			return "", fmt.Errorf("feature %s finalized at %d, outside its supported %d-%d", f.Name, level, f.MinVersion, f.MaxVersion)
		}
		if f.Name == "metadata.version" || f.Name == "kraft.version" {
			continue // levels of the KRaft quorum, not for a client to change
		}
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = f.Name, level, 1
		keep = append(keep, u)
		if over.Feature == "" {
			over = u
			over.MaxVersionLevel = f.MaxVersion + 1
		}
	}
	update := func(step string, ups ...kmsg.UpdateFeaturesRequestFeatureUpdate) (error, error) {
		sctx, cancel := t.Step(ctx, step)
		defer cancel()
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.TimeoutMillis, req.ValidateOnly, req.FeatureUpdates = 30000, true, ups
		resp, err := req.RequestWith(sctx, cl)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", step, err)
		}
		return kerr.ErrorForCode(resp.ErrorCode), nil
	}
	if got, err := update("keep every feature at its level", keep...); err != nil {
		return "", err
	} else if got != nil {
		return "", fmt.Errorf("keep every feature at its level: %v", got)
	}
	if over.Feature != "" {
		if got, err := update("raise "+over.Feature+" past its maximum", over); err != nil {
			return "", err
		} else if !errors.Is(got, kerr.InvalidUpdateVersion) {
			return "", fmt.Errorf("raise %s to %d: %v, want INVALID_UPDATE_VERSION", over.Feature, over.MaxVersionLevel, got)
		}
	}
	none := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	none.Feature, none.MaxVersionLevel, none.UpgradeType = t.Name("feature"), 1, 1
	if got, err := update("set a feature no broker has", none); err != nil {
		return "", err
	} else if !errors.Is(got, kerr.InvalidUpdateVersion) {
		return "", fmt.Errorf("set feature %s: %v, want INVALID_UPDATE_VERSION", none.Feature, got)
	}
	return fmt.Sprintf("%d features supported, %d finalized", len(resp.SupportedFeatures), len(resp.FinalizedFeatures)), nil
}
