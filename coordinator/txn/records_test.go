package txn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRecordFormat builds the records byte by byte, as the package
// documentation lays them out.
func TestRecordFormat(t *testing.T) {
	be16 := func(v int16) []byte { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
	be32 := func(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
	be64 := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	wantKey := cat(be16(0), be16(3), []byte("txn"))
	m := meta{producerID: 1000, prevProducerID: 900, nextProducerID: 1001, epoch: 5, timeoutMs: 60000,
		state: StatePrepareCommit, partitions: []topicPartition{{"t", 0}, {"t", 2}, {"u", 1}},
		startMs: 1700000000000, lastUpdateMs: 1700000001000, clientTV: 2}
	wantValue := cat(
		be16(1), be64(1000), be16(5), be32(60000), []byte{2},
		[]byte{3},                                              // 2 topics, compact
		[]byte{2, 't'}, []byte{3}, be32(0), be32(2), []byte{0}, // "t": [0 2], no tags
		[]byte{2, 'u'}, []byte{2}, be32(1), []byte{0}, // "u": [1]
		be64(1700000001000), be64(1700000000000),
		[]byte{3},               // 3 tagged fields
		[]byte{0, 8}, be64(900), // previous producer id
		[]byte{1, 8}, be64(1001), // next producer id
		[]byte{2, 2}, be16(2), // client transaction version
	)
	r := txnRecord("txn", m)
	if !bytes.Equal(r.Key, wantKey) {
		t.Fatalf("key\n got %x\nwant %x", r.Key, wantKey)
	}
	if !bytes.Equal(r.Value, wantValue) {
		t.Fatalf("value\n got %x\nwant %x", r.Value, wantValue)
	}

	// Empty: null partitions, defaults not written.
	m = meta{producerID: 7, prevProducerID: -1, nextProducerID: -1, epoch: 0, timeoutMs: 100, state: StateEmpty, startMs: -1, lastUpdateMs: 5}
	wantValue = cat(be16(1), be64(7), be16(0), be32(100), []byte{0}, []byte{0}, be64(5), be64(-1), []byte{0})
	if r := txnRecord("txn", m); !bytes.Equal(r.Value, wantValue) {
		t.Fatalf("empty value\n got %x\nwant %x", r.Value, wantValue)
	}
	if got, err := decodeValue(wantValue); err != nil || got.state != StateEmpty || got.producerID != 7 || got.nextProducerID != -1 {
		t.Fatalf("decode: %+v, %v", got, err)
	}
}

// TestReplayVersion0 reads the value version Kafka 2.x-3.x write (no
// tagged fields), and skips keys of other versions.
func TestReplayVersion0(t *testing.T) {
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = 42, 3, 60000, kmsg.TransactionStateOngoing
	v.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "t", Partitions: []int32{1, 0, 1}}}
	v.StartTimestamp, v.LastUpdateTimestamp = 10, 20
	c, err := New(testConfig(&counter{}), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Replay(txnKey("x"), v.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if err := c.Replay([]byte{0, 9, 1, 2}, []byte{1}); err != nil {
		t.Fatalf("an unknown key version is skipped: %v", err)
	}
	got := c.txns["x"].meta
	deepEqual(t, "version 0", got, meta{producerID: 42, prevProducerID: -1, nextProducerID: -1, epoch: 3, lastEpoch: -1,
		timeoutMs: 60000, state: StateOngoing, partitions: []topicPartition{{"t", 0}, {"t", 1}}, startMs: 10, lastUpdateMs: 20})
	if err := c.Replay(txnKey("x"), nil); err != nil || len(c.txns) != 0 {
		t.Fatalf("tombstone: %v, %d ids", err, len(c.txns))
	}
}

func TestReplayRejects(t *testing.T) {
	good := meta{producerID: 1, prevProducerID: -1, nextProducerID: -1, epoch: 0, timeoutMs: 100, state: StateOngoing, startMs: 1, lastUpdateMs: 1}
	with := func(f func(v *kmsg.TxnMetadataValue)) []byte {
		var v kmsg.TxnMetadataValue
		if err := v.ReadFrom(txnRecord("x", good).Value); err != nil {
			t.Fatal(err)
		}
		f(&v)
		return v.AppendTo(nil)
	}
	for name, tc := range map[string]struct{ key, value []byte }{
		"short key":       {[]byte{0}, nil},
		"truncated key":   {[]byte{0, 0, 0, 5, 'a'}, nil},
		"short value":     {txnKey("x"), []byte{0}},
		"value version 2": {txnKey("x"), with(func(v *kmsg.TxnMetadataValue) { v.Version = 2 })},
		"truncated value": {txnKey("x"), txnRecord("x", good).Value[:12]},
		"state Dead":      {txnKey("x"), with(func(v *kmsg.TxnMetadataValue) { v.State = 6 })},
		"state fence":     {txnKey("x"), with(func(v *kmsg.TxnMetadataValue) { v.State = 7 })},
		"state 9":         {txnKey("x"), with(func(v *kmsg.TxnMetadataValue) { v.State = 9 })},
		"negative id":     {txnKey("x"), with(func(v *kmsg.TxnMetadataValue) { v.ProducerID = -1 })},
		"negative epoch":  {txnKey("x"), with(func(v *kmsg.TxnMetadataValue) { v.ProducerEpoch = -1 })},
		"zero timeout":    {txnKey("x"), with(func(v *kmsg.TxnMetadataValue) { v.TimeoutMillis = 0 })},
	} {
		c, err := New(testConfig(&counter{}), 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Replay(tc.key, tc.value); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("%s: %v, want ErrCorruptRecord", name, err)
		}
	}
}

func TestPartitionFor(t *testing.T) {
	// Java's hashCode: "a" is 97; "txn" is 116*31*31 + 120*31 + 110 =
	// 115306.
	for id, want := range map[string]int32{"": 0, "a": 47, "txn": 6} {
		if got := PartitionFor(id, 50); got != want {
			t.Errorf("PartitionFor(%q) = %d, want %d", id, got, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("no producer id source: %v", err)
	}
	cfg := testConfig(&counter{})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.MaxTimeout = 0
	if _, err := New(cfg, 0); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("zero max timeout: %v", err)
	}
}
