// Package saramasuite runs the suite's scenarios with IBM/sarama: the sync
// producer, the partition consumer, the consumer group and ClusterAdmin.
//
// Sarama calls take no context; each is bounded by the client's own network
// timeouts (set below), and the runner abandons a scenario at its timeout.
package saramasuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// Module is the module whose version the result lines carry.
const Module = "github.com/IBM/sarama"

// clientID is what the broker sees as the client id of every connection.
const clientID = "gregor-compat-sarama"

// Scenarios returns Sarama's scenarios. Sarama logs through package
// variables; they are pointed at w (its debug log only when debug is set).
func Scenarios(w io.Writer, debug bool) []compat.Scenario {
	sarama.Logger = log.New(w, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	if debug {
		sarama.DebugLogger = log.New(w, "[sarama debug] ", log.LstdFlags|log.Lmicroseconds)
	}
	// main has checked the environment already.
	security, _ = compat.SecurityFromEnv()
	var out []compat.Scenario
	for _, c := range codecs {
		out = append(out, compat.Scenario{Name: "produce-consume-" + c.name, Run: produceConsume(c)})
	}
	return append(out,
		compat.Scenario{Name: "idempotent-producer", Run: idempotentProducer},
		compat.Scenario{Name: "list-offsets", Run: listOffsets},
		compat.Scenario{Name: "consume-from-offset", Run: consumeFromOffset},
		compat.Scenario{Name: "group-commit-resume", Run: groupCommitResume},
		compat.Scenario{Name: "group-rebalance", Run: groupRebalance},
		compat.Scenario{Name: "admin-topics", Run: adminTopics},
		compat.Scenario{Name: "admin-configs", Run: adminConfigs},
		compat.Scenario{Name: "admin-groups", Run: adminGroups},
		compat.Scenario{Name: "delete-records", Run: deleteRecords},
		compat.Scenario{Name: "txn-commit-read-committed", Run: txnCommitReadCommitted},
		compat.Scenario{Name: "txn-abort-invisible", Run: txnAbortInvisible},
		compat.Scenario{Name: "txn-consume-transform-produce", Run: txnConsumeTransformProduce},
		compat.Scenario{Name: "txn-fencing", Run: txnFencing},
	)
}

// config returns the configuration every scenario starts from: Kafka 4.0's
// protocol versions, acks=all, each record to the partition it names,
// consumers from the earliest offset, no automatic commits, no topic
// created by a metadata request.
func config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V4_0_0_0
	c.ClientID = clientID
	c.Net.DialTimeout = 10 * time.Second
	c.Net.ReadTimeout = 30 * time.Second
	c.Net.WriteTimeout = 30 * time.Second
	c.Metadata.AllowAutoTopicCreation = false
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Admin.Timeout = 30 * time.Second
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Consumer.Return.Errors = true
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false
	c.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
	setSecurity(c)
	return c
}

// security is the run's client security, read once by Scenarios.
var security compat.Security

// setSecurity configures c for the run's security: TLS trusting the lab's
// CA, plus SCRAM-SHA-512 (through xdg-go/scram, as Sarama's examples do) or
// the client certificate. A bad CA or key file panics, which the scenario
// reports as its failure.
func setSecurity(c *sarama.Config) {
	tc, err := security.TLSConfig()
	if err != nil {
		panic(err)
	}
	if tc == nil {
		return
	}
	c.Net.TLS.Enable = true
	c.Net.TLS.Config = tc
	if security.Mode == "sasl_ssl" {
		c.Net.SASL.Enable = true
		c.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		c.Net.SASL.User = security.User
		c.Net.SASL.Password = security.Password
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: scram.SHA512} }
	}
}

// scramClient is the sarama.SCRAMClient of one authentication: a
// conversation of xdg-go/scram.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (sc *scramClient) Begin(user, password, authzID string) error {
	cl, err := sc.hash.NewClient(user, password, authzID)
	if err != nil {
		return fmt.Errorf("scram client: %w", err)
	}
	sc.conv = cl.NewConversation()
	return nil
}

func (sc *scramClient) Step(challenge string) (string, error) {
	return sc.conv.Step(challenge)
}

func (sc *scramClient) Done() bool {
	return sc.conv.Done()
}

// createTopic creates topic with the given partitions and replication
// factor 1.
func createTopic(t *compat.T, topic string, partitions int32) error {
	adm, err := sarama.NewClusterAdmin(t.Brokers(), config())
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

func fromCompat(topic string, r compat.Record) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{
		Topic:     topic,
		Partition: r.Partition,
		Key:       sarama.ByteEncoder(r.Key),
		Timestamp: r.Timestamp,
	}
	// A nil Value writes a null value; ByteEncoder(nil) would too, but
	// the interface left nil says so plainly.
	if r.Value != nil {
		m.Value = sarama.ByteEncoder(r.Value)
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
	}
	return m
}

func toCompat(m *sarama.ConsumerMessage) compat.Record {
	r := compat.Record{
		Partition: m.Partition,
		Offset:    m.Offset,
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Timestamp,
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, compat.Header{Key: string(h.Key), Value: h.Value})
	}
	return r
}

// produce writes recs with a sync producer built from cfg, as one
// SendMessages call (Sarama batches them per partition), and stores the
// acknowledged offsets in recs.
func produce(t *compat.T, cfg *sarama.Config, topic string, rounds ...[]compat.Record) error {
	p, err := sarama.NewSyncProducer(t.Brokers(), cfg)
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	defer p.Close()
	for _, recs := range rounds {
		msgs := make([]*sarama.ProducerMessage, len(recs))
		for i, r := range recs {
			msgs[i] = fromCompat(topic, r)
		}
		if err := p.SendMessages(msgs); err != nil {
			var pes sarama.ProducerErrors
			if errors.As(err, &pes) && len(pes) > 0 {
				return fmt.Errorf("%d of %d records not acknowledged, first: %w", len(pes), len(recs), pes[0].Err)
			}
			return fmt.Errorf("send: %w", err)
		}
		for i, m := range msgs {
			if m.Partition != recs[i].Partition {
				return fmt.Errorf("record %d went to partition %d, not %d", i, m.Partition, recs[i].Partition)
			}
			recs[i].Offset = m.Offset
		}
	}
	return nil
}

// setup creates the scenario's topic and writes recs to it with a plain
// acks=all producer, checking the acknowledged offsets.
func setup(ctx context.Context, t *compat.T, topic string, partitions int32, recs []compat.Record) error {
	_, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(t, topic, partitions); err != nil {
		return err
	}
	_, cancel = t.Step(ctx, "produce")
	defer cancel()
	if err := produce(t, config(), topic, recs); err != nil {
		return err
	}
	return compat.CheckAcked(recs, 0)
}

// consume reads partitions of topic from the given offsets until it has
// want[p] records of partition p, and checks that the last fetch's high
// watermark is where the reading ended. All partitions are fetched at once;
// their channels are drained one after the other.
func consume(ctx context.Context, t *compat.T, topic string, from map[int32]int64, want map[int32]int) ([]compat.Record, error) {
	return consumeWith(ctx, t, config(), topic, from, want, true)
}

// consumeWith is consume with a consumer built from cfg; the high watermark
// is checked only when checkHW is set (a transaction's marker sits past
// its last record, so on a transactional topic it is not where reading
// ended).
func consumeWith(ctx context.Context, t *compat.T, cfg *sarama.Config, topic string, from map[int32]int64, want map[int32]int, checkHW bool) ([]compat.Record, error) {
	c, err := sarama.NewConsumer(t.Brokers(), cfg)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	defer c.Close()
	pcs := make(map[int32]sarama.PartitionConsumer)
	defer func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
	}()
	for _, p := range compat.SortedPartitions(want) {
		pc, err := c.ConsumePartition(topic, p, from[p])
		if err != nil {
			return nil, fmt.Errorf("consume partition %d from %d: %w", p, from[p], err)
		}
		pcs[p] = pc
	}
	var got []compat.Record
	for _, p := range compat.SortedPartitions(want) {
		pc := pcs[p]
		n := 0
		var last int64 = -1
		for n < want[p] {
			select {
			case m := <-pc.Messages():
				got = append(got, toCompat(m))
				last = m.Offset
				n++
			case err := <-pc.Errors():
				return nil, fmt.Errorf("partition %d: %w", p, err)
			case <-ctx.Done():
				return nil, fmt.Errorf("%w with %d of %d records of partition %d read", ctx.Err(), n, want[p], p)
			}
		}
		if hw := pc.HighWaterMarkOffset(); checkHW && n > 0 && hw != last+1 {
			return nil, fmt.Errorf("partition %d: high watermark %d after reading to offset %d, want %d", p, hw, last, last+1)
		}
	}
	return got, nil
}

// fromStart returns offset 0 for partitions 0..n-1.
func fromStart(n int32) map[int32]int64 {
	m := make(map[int32]int64)
	for p := range n {
		m[p] = 0
	}
	return m
}

// handler adapts functions to sarama.ConsumerGroupHandler.
type handler struct {
	setup   func(sarama.ConsumerGroupSession)
	cleanup func(sarama.ConsumerGroupSession)
	message func(sarama.ConsumerGroupSession, *sarama.ConsumerMessage)
}

func (h handler) Setup(s sarama.ConsumerGroupSession) error {
	if h.setup != nil {
		h.setup(s)
	}
	return nil
}

func (h handler) Cleanup(s sarama.ConsumerGroupSession) error {
	if h.cleanup != nil {
		h.cleanup(s)
	}
	return nil
}

func (h handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			h.message(s, m)
		case <-s.Context().Done():
			return nil
		}
	}
}

// groupMember is a running Sarama consumer group member and the errors it
// reported.
type groupMember struct {
	group  sarama.ConsumerGroup
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     struct {
		sync.Mutex
		errs []error
	}
}

// join starts a member of group consuming topic with h; stop ends it.
func join(ctx context.Context, t *compat.T, cfg *sarama.Config, group, topic string, h handler) (*groupMember, error) {
	g, err := sarama.NewConsumerGroup(t.Brokers(), group, cfg)
	if err != nil {
		return nil, fmt.Errorf("consumer group: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &groupMember{group: g, cancel: cancel}
	m.wg.Go(func() {
		for err := range g.Errors() {
			m.mu.Lock()
			m.mu.errs = append(m.mu.errs, err)
			m.mu.Unlock()
		}
	})
	m.wg.Go(func() {
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, h); err != nil {
				m.mu.Lock()
				m.mu.errs = append(m.mu.errs, err)
				m.mu.Unlock()
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				// Pace the retry of a failed join.
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
	})
	return m, nil
}

// stop leaves the group and closes the member.
func (m *groupMember) stop() error {
	m.cancel()
	err := m.group.Close()
	m.wg.Wait()
	return err
}

// errors returns what the member reported so far, for a failure's reason.
func (m *groupMember) errors() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.mu.errs) == 0 {
		return "no errors reported"
	}
	return fmt.Sprintf("%d errors reported, first: %v", len(m.mu.errs), m.mu.errs[0])
}
