// Command cfgdiff compares what two brokers report in DescribeConfigs: a
// fresh topic's configs and the answering broker's own configs, with
// synonyms and documentation. It is how Gregor's catalogue is checked
// against the reference Kafka of the compatibility lab:
//
//	go run ./broker/configs/testdata/cfgdiff -ref 127.0.0.1:27101 -test 127.0.0.1:27102
//
// It prints the names only one side reports, then, per common name, every
// field that differs: value, source, read-only, sensitive, type,
// documentation presence and synonyms. Values that depend on the machine
// (listeners, log.dirs, ...) differ by nature; they are printed all the same.
// It lives under testdata so that go build ./... and the linters skip it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	ref := flag.String("ref", "127.0.0.1:27101", "reference broker (Kafka)")
	test := flag.String("test", "127.0.0.1:27102", "broker under test (Gregor)")
	values := flag.Bool("values", true, "report value differences")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := describe(ctx, *ref)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ref:", err)
		os.Exit(1)
	}
	b, err := describe(ctx, *test)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test:", err)
		os.Exit(1)
	}
	for _, kind := range []string{"topic", "broker"} {
		diff(kind, a[kind], b[kind], *values)
	}
}

type entry = kmsg.DescribeConfigsResponseResourceConfig

// describe creates a topic on addr and returns its configs and the
// broker's, by name.
func describe(ctx context.Context, addr string) (map[string]map[string]entry, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topic := fmt.Sprintf("cfgdiff-%d", time.Now().UnixNano())
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		return nil, fmt.Errorf("create topic: %w", err)
	}
	defer func() { _, _ = adm.DeleteTopics(context.Background(), topic) }()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil || len(md.Brokers) == 0 {
		return nil, fmt.Errorf("metadata: %v", err)
	}
	id := md.Brokers[0].NodeID
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	for _, r := range []struct {
		t    kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, topic}, {kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id))}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.t, r.name
		req.Resources = append(req.Resources, rr)
	}
	var resp *kmsg.DescribeConfigsResponse
	// A fresh topic may take a moment to be known everywhere.
	for range 20 {
		resp, err = req.RequestWith(ctx, cl)
		if err == nil && resp.Resources[0].ErrorCode == 0 && resp.Resources[1].ErrorCode == 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]entry{}
	for _, r := range resp.Resources {
		kind := "topic"
		if r.ResourceType == kmsg.ConfigResourceTypeBroker {
			kind = "broker"
		}
		if r.ErrorCode != 0 {
			return nil, fmt.Errorf("describe %s: code %d %s", kind, r.ErrorCode, str(r.ErrorMessage))
		}
		m := map[string]entry{}
		for _, c := range r.Configs {
			m[c.Name] = c
		}
		out[kind] = m
	}
	return out, nil
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

func synonyms(c entry) string {
	var s []string
	for _, y := range c.ConfigSynonyms {
		s = append(s, fmt.Sprintf("%s=%s(%d)", y.Name, str(y.Value), y.Source))
	}
	return "[" + strings.Join(s, " ") + "]"
}

func sortedKeys(m map[string]entry) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func diff(kind string, ref, test map[string]entry, values bool) {
	fmt.Printf("== %s configs: ref %d, test %d\n", kind, len(ref), len(test))
	for _, n := range sortedKeys(ref) {
		if _, ok := test[n]; !ok {
			c := ref[n]
			fmt.Printf("only ref:  %s = %s src=%d ro=%v type=%d\n", n, str(c.Value), c.Source, c.ReadOnly, c.ConfigType)
		}
	}
	for _, n := range sortedKeys(test) {
		if _, ok := ref[n]; !ok {
			c := test[n]
			fmt.Printf("only test: %s = %s src=%d ro=%v type=%d\n", n, str(c.Value), c.Source, c.ReadOnly, c.ConfigType)
		}
	}
	for _, n := range sortedKeys(ref) {
		a := ref[n]
		b, ok := test[n]
		if !ok {
			continue
		}
		var d []string
		if values && str(a.Value) != str(b.Value) {
			d = append(d, fmt.Sprintf("value %s / %s", str(a.Value), str(b.Value)))
		}
		if a.Source != b.Source {
			d = append(d, fmt.Sprintf("source %d / %d", a.Source, b.Source))
		}
		if a.ReadOnly != b.ReadOnly {
			d = append(d, fmt.Sprintf("read-only %v / %v", a.ReadOnly, b.ReadOnly))
		}
		if a.IsSensitive != b.IsSensitive {
			d = append(d, fmt.Sprintf("sensitive %v / %v", a.IsSensitive, b.IsSensitive))
		}
		if a.ConfigType != b.ConfigType {
			d = append(d, fmt.Sprintf("type %d / %d", a.ConfigType, b.ConfigType))
		}
		if (a.Documentation == nil || *a.Documentation == "") != (b.Documentation == nil || *b.Documentation == "") {
			d = append(d, fmt.Sprintf("doc %v / %v", a.Documentation != nil && *a.Documentation != "", b.Documentation != nil && *b.Documentation != ""))
		}
		if sa, sb := synonyms(a), synonyms(b); sa != sb {
			d = append(d, fmt.Sprintf("synonyms %s / %s", sa, sb))
		}
		if len(d) > 0 {
			fmt.Printf("%s: %s\n", n, strings.Join(d, "; "))
		}
	}
}
