// Package kafkagosuite runs the suite's scenarios with segmentio/kafka-go:
// Writer, Reader (by partition and in a group), ConsumerGroup, Conn and
// Client. kafka-go has no idempotent producer, so that scenario is absent.
package kafkagosuite

import (
	"context"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
)

// Module is the module whose version the result lines carry.
const Module = "github.com/segmentio/kafka-go"

// clientID is what the broker sees as the client id of every connection.
const clientID = "gregor-compat-kafka-go"

// Scenarios returns kafka-go's scenarios; w receives its error log (and
// its chatty info log when debug is set).
func Scenarios(w io.Writer, debug bool) []compat.Scenario {
	s := &suite{errLog: log.New(w, "[kafka-go error] ", log.LstdFlags|log.Lmicroseconds)}
	if debug {
		s.infoLog = log.New(w, "[kafka-go] ", log.LstdFlags|log.Lmicroseconds)
	}
	var out []compat.Scenario
	for _, c := range codecs {
		out = append(out, compat.Scenario{Name: "produce-consume-" + c.name, Run: s.produceConsume(c)})
	}
	return append(out,
		compat.Scenario{Name: "list-offsets", Run: s.listOffsets},
		compat.Scenario{Name: "consume-from-offset", Run: s.consumeFromOffset},
		compat.Scenario{Name: "group-commit-resume", Run: s.groupCommitResume},
		compat.Scenario{Name: "group-rebalance", Run: s.groupRebalance},
		compat.Scenario{Name: "admin-topics", Run: s.adminTopics},
		compat.Scenario{Name: "admin-configs", Run: s.adminConfigs},
		compat.Scenario{Name: "admin-groups", Run: s.adminGroups},
	)
}

type suite struct {
	errLog  *log.Logger
	infoLog *log.Logger // nil unless debugging
}

func (s *suite) info() kafka.Logger {
	if s.infoLog == nil {
		return nil
	}
	return s.infoLog
}

// transport carries the Writer's and Client's requests. kafka-go answers
// Metadata requests from a cache refreshed every MetadataTTL; the admin
// scenarios watch metadata change, so it is short.
func transport() *kafka.Transport {
	return &kafka.Transport{
		ClientID:    clientID,
		DialTimeout: 10 * time.Second,
		MetadataTTL: 200 * time.Millisecond,
	}
}

func client(t *compat.T) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(t.Brokers()...), Timeout: 30 * time.Second, Transport: transport()}
}

func dialer() *kafka.Dialer {
	return &kafka.Dialer{ClientID: clientID, Timeout: 10 * time.Second, DualStack: true}
}

// createTopic creates topic with the given partitions, replication factor
// 1 and configs.
func createTopic(ctx context.Context, t *compat.T, topic string, partitions int, configs ...kafka.ConfigEntry) error {
	resp, err := client(t).CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic:             topic,
		NumPartitions:     partitions,
		ReplicationFactor: 1,
		ConfigEntries:     configs,
	}}})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

func fromCompat(r compat.Record) kafka.Message {
	m := kafka.Message{
		Partition: int(r.Partition),
		Key:       r.Key,
		Value:     r.Value,
		Time:      r.Timestamp,
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	return m
}

func toCompat(m kafka.Message) compat.Record {
	r := compat.Record{
		Partition: int32(m.Partition),
		Offset:    m.Offset,
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Time,
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, compat.Header{Key: h.Key, Value: h.Value})
	}
	return r
}

// toPartition sends each message to the partition it names.
var toPartition = kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition })

// produce writes recs to topic with one WriteMessages call (acks=all, the
// codec), and stores in recs the offsets the Writer reports to Completion.
// Keys are unique within a scenario's records, so they find the record of a
// completed message.
func (s *suite) produce(ctx context.Context, topic string, t *compat.T, codec kafka.Compression, recs []compat.Record) error {
	index := make(map[string]int, len(recs))
	for i, r := range recs {
		index[string(r.Key)] = i
	}
	var mu sync.Mutex
	acked := 0
	w := &kafka.Writer{
		Addr:         kafka.TCP(t.Brokers()...),
		Topic:        topic,
		Balancer:     toPartition,
		RequiredAcks: kafka.RequireAll,
		Compression:  codec,
		BatchSize:    len(recs),
		BatchTimeout: 20 * time.Millisecond,
		Transport:    transport(),
		Logger:       s.info(),
		ErrorLogger:  s.errLog,
		Completion: func(ms []kafka.Message, err error) {
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, m := range ms {
				if i, ok := index[string(m.Key)]; ok {
					recs[i].Offset = m.Offset
					acked++
				}
			}
		},
	}
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		msgs[i] = fromCompat(r)
	}
	err := w.WriteMessages(ctx, msgs...)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if acked != len(recs) {
		return fmt.Errorf("the writer reported %d of %d records written", acked, len(recs))
	}
	return nil
}

// setup creates the scenario's topic and writes recs to it uncompressed,
// checking the reported offsets.
func (s *suite) setup(ctx context.Context, t *compat.T, topic string, partitions int, recs []compat.Record) error {
	cctx, cancel := t.Step(ctx, "create topic")
	defer cancel()
	if err := createTopic(cctx, t, topic, partitions); err != nil {
		return err
	}
	pctx, cancel := t.Step(ctx, "produce")
	defer cancel()
	if err := s.produce(pctx, topic, t, 0, recs); err != nil {
		return err
	}
	return compat.CheckAcked(recs, 0)
}

// partitionReader returns a Reader of one partition, not in a group,
// positioned at offset.
func (s *suite) partitionReader(t *compat.T, topic string, p int32, offset int64) (*kafka.Reader, error) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:     t.Brokers(),
		Topic:       topic,
		Partition:   int(p),
		Dialer:      dialer(),
		MinBytes:    1,
		MaxBytes:    10 << 20,
		MaxWait:     500 * time.Millisecond,
		MaxAttempts: 5,
		Logger:      s.info(),
		ErrorLogger: s.errLog,
	})
	if err := r.SetOffset(offset); err != nil {
		r.Close()
		return nil, fmt.Errorf("reader of partition %d at %d: %w", p, offset, err)
	}
	return r, nil
}

// consume reads each partition from the given offset until it has want[p]
// records, and checks that the high watermark the last fetch reported is
// where the reading ended.
func (s *suite) consume(ctx context.Context, t *compat.T, topic string, from map[int32]int64, want map[int32]int) ([]compat.Record, error) {
	var got []compat.Record
	for _, p := range compat.SortedPartitions(want) {
		r, err := s.partitionReader(t, topic, p, from[p])
		if err != nil {
			return nil, err
		}
		var last kafka.Message
		for n := 0; n < want[p]; n++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("partition %d after %d of %d records: %w", p, n, want[p], err)
			}
			got = append(got, toCompat(m))
			last = m
		}
		r.Close()
		if want[p] > 0 && last.HighWaterMark != last.Offset+1 {
			return nil, fmt.Errorf("partition %d: high watermark %d after reading to offset %d, want %d", p, last.HighWaterMark, last.Offset, last.Offset+1)
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

// compare is compat.Compare for records kafka-go read: its Reader decodes
// a zero-length key, value or header value as nil, so an empty one written
// comes back null whatever the broker stored; null and empty are compared
// as equal, everything else exactly.
func compare(want, got []compat.Record) error {
	return compat.Compare(compat.EmptyAsNull(want), got)
}
