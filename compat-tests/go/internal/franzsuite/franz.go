// Package franzsuite runs the suite's scenarios with franz-go: kgo for
// producing and consuming, kadm for administration.
package franzsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// Module is the module whose version the result lines carry.
const Module = "github.com/twmb/franz-go"

// clientID is what the broker sees as the client id of every connection.
const clientID = "gregor-compat-franz-go"

// Scenarios returns franz-go's scenarios; log receives the client's own
// warnings (debug for more).
func Scenarios(log io.Writer, debug bool) []compat.Scenario {
	level := kgo.LogLevelWarn
	if debug {
		level = kgo.LogLevelDebug
	}
	s := &suite{logger: kgo.BasicLogger(log, level, nil)}
	// main has checked the environment already.
	s.security, _ = compat.SecurityFromEnv()
	var out []compat.Scenario
	for _, c := range codecs {
		out = append(out, compat.Scenario{Name: "produce-consume-" + c.name, Run: s.produceConsume(c)})
	}
	return append(out,
		compat.Scenario{Name: "idempotent-producer", Run: s.idempotentProducer},
		compat.Scenario{Name: "list-offsets", Run: s.listOffsets},
		compat.Scenario{Name: "consume-from-offset", Run: s.consumeFromOffset},
		compat.Scenario{Name: "group-commit-resume", Run: s.groupCommitResume},
		compat.Scenario{Name: "group-rebalance", Run: s.groupRebalance},
		compat.Scenario{Name: "admin-topics", Run: s.adminTopics},
		compat.Scenario{Name: "admin-configs", Run: s.adminConfigs},
		compat.Scenario{Name: "admin-groups", Run: s.adminGroups},
		compat.Scenario{Name: "delete-records", Run: s.deleteRecords},
		compat.Scenario{Name: "security-off", Run: s.securityOff},
		compat.Scenario{Name: "transaction-coordinator", Run: s.transactionCoordinator},
		compat.Scenario{Name: "broker-loggers", Run: s.brokerLoggers},
		compat.Scenario{Name: "features", Run: s.features},
		compat.Scenario{Name: "null-edges", Run: s.nullEdges},
		compat.Scenario{Name: "txn-commit-read-committed", Run: s.txnCommitReadCommitted},
		compat.Scenario{Name: "txn-abort-invisible", Run: s.txnAbortInvisible},
		compat.Scenario{Name: "txn-consume-transform-produce", Run: s.txnConsumeTransformProduce},
		compat.Scenario{Name: "txn-fencing", Run: s.txnFencing},
		compat.Scenario{Name: "consumer-protocol-group", Run: s.consumerProtocolGroup},
	)
}

type suite struct {
	logger   kgo.Logger
	security compat.Security
}

// client returns a kgo client for the scenario's broker; the caller closes
// it.
func (s *suite) client(t *compat.T, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append(s.baseOpts(t), opts...)...)
}

// baseOpts are the options every client of a scenario starts from.
func (s *suite) baseOpts(t *compat.T) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(t.Brokers()...),
		kgo.ClientID(clientID),
		kgo.WithLogger(s.logger),
		// kadm answers metadata questions from the client's cache for
		// up to this long; the admin scenarios watch changes happen.
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	return append(opts, s.securityOpts()...)
}

// securityOpts are the options of the run's security (compat.Security):
// TLS trusting the lab's CA, plus SCRAM-SHA-512 or the client certificate.
// A bad CA or key file panics, which the scenario reports as its failure.
func (s *suite) securityOpts() []kgo.Opt {
	tc, err := s.security.TLSConfig()
	if err != nil {
		panic(err)
	}
	if tc == nil {
		return nil
	}
	opts := []kgo.Opt{kgo.DialTLSConfig(tc)}
	if s.security.Mode == "sasl_ssl" {
		auth := scram.Auth{User: s.security.User, Pass: s.security.Password}
		opts = append(opts, kgo.SASL(auth.AsSha512Mechanism()))
	}
	return opts
}

// createTopic creates topic with the given partitions, replication factor
// 1 and configs, and checks the broker's answer.
func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("create topic %s: %w (%s)", topic, resp.Err, resp.ErrMessage)
	}
	return nil
}

// fromCompat builds the kgo record that writes r to topic.
func fromCompat(topic string, r compat.Record) *kgo.Record {
	kr := &kgo.Record{
		Topic:     topic,
		Partition: r.Partition,
		Key:       r.Key,
		Value:     r.Value,
		Timestamp: r.Timestamp,
	}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return kr
}

// toCompat converts a record kgo consumed.
func toCompat(kr *kgo.Record) compat.Record {
	r := compat.Record{
		Partition: kr.Partition,
		Offset:    kr.Offset,
		Key:       kr.Key,
		Value:     kr.Value,
		Timestamp: kr.Timestamp,
	}
	for _, h := range kr.Headers {
		r.Headers = append(r.Headers, compat.Header{Key: h.Key, Value: h.Value})
	}
	return r
}

// produce writes recs to topic, each to its own partition (the client must
// be built with kgo.ManualPartitioner), waits for every acknowledgement and
// stores the acknowledged offsets in recs.
func produce(ctx context.Context, cl *kgo.Client, topic string, recs []compat.Record) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	for i := range recs {
		cl.Produce(ctx, fromCompat(topic, recs[i]), func(kr *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("record %d: %w", i, err))
				return
			}
			recs[i].Offset = kr.Offset
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d records not acknowledged, first: %w", len(errs), len(recs), errs[0])
	}
	return nil
}

// producer returns a non-idempotent acks=all client that writes each record
// to the partition it names.
func (s *suite) producer(t *compat.T, opts ...kgo.Opt) (*kgo.Client, error) {
	return s.client(t, append([]kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DisableIdempotentWrite(),
	}, opts...)...)
}

// setup creates the scenario's topic and writes recs to it with a
// non-idempotent acks=all producer, checking that the acknowledged offsets
// are dense from 0.
func (s *suite) setup(ctx context.Context, t *compat.T, topic string, partitions int32, recs []compat.Record) error {
	cl, err := s.producer(t)
	if err != nil {
		return err
	}
	defer cl.Close()
	sctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(sctx, kadm.NewClient(cl), topic, partitions, nil); err != nil {
		return err
	}
	pctx, cancel := t.Step(ctx, "produce")
	defer cancel()
	if err := produce(pctx, cl, topic, recs); err != nil {
		return err
	}
	return compat.CheckAcked(recs, 0)
}

// earliest, as a starting offset of consume, is the partition's log start
// offset, whatever it is.
const earliest = -2

// consume reads the given partitions of topic from the given offsets until
// it has want[p] records of every partition p, and returns them in the order
// read. Records past the wanted count that arrive in the same fetch are kept,
// so that the comparison sees them.
func (s *suite) consume(ctx context.Context, t *compat.T, topic string, from map[int32]int64, want map[int32]int, opts ...kgo.Opt) ([]compat.Record, []*kgo.Record, error) {
	offsets := make(map[int32]kgo.Offset)
	for p, o := range from {
		offsets[p] = kgo.NewOffset().At(o)
		if o == earliest {
			offsets[p] = kgo.NewOffset().AtStart()
		}
	}
	cl, err := s.client(t, append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
	}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	var (
		got []compat.Record
		raw []*kgo.Record
	)
	have := make(map[int32]int)
	err = compat.Poll(ctx, 0, func(ctx context.Context) (bool, string, error) {
		fs := cl.PollFetches(ctx)
		if err := fetchErr(fs); err != nil {
			return false, "", err
		}
		fs.EachRecord(func(kr *kgo.Record) {
			got = append(got, toCompat(kr))
			raw = append(raw, kr)
			have[kr.Partition]++
		})
		for p, n := range want {
			if have[p] < n {
				return false, fmt.Sprintf("read %v records per partition, want %v", have, want), nil
			}
		}
		return true, "", nil
	})
	return got, raw, err
}

// fetchErr returns the first error in fs other than the end of the poll's
// context, which the caller's Poll reports with its reason.
func fetchErr(fs kgo.Fetches) error {
	for _, e := range fs.Errors() {
		if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
			continue
		}
		return fmt.Errorf("fetch %s/%d: %w", e.Topic, e.Partition, e.Err)
	}
	return nil
}

// fromStart returns offset 0 for partitions 0..n-1.
func fromStart(n int32) map[int32]int64 {
	m := make(map[int32]int64)
	for p := range n {
		m[p] = 0
	}
	return m
}
