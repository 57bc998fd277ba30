package txn

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record versions, as Kafka 4.x writes them: key version 0 (the only one),
// value version 1 (flexible, with the producer ids of KIP-890 part 2 and
// the client transaction version as tagged fields).
const (
	txnKeyVersion   int16 = 0
	txnValueVersion int16 = 1
)

// Record is a record for the coordinator's __transaction_state partition. A
// nil Value is a tombstone. The formats are in the package documentation.
type Record struct {
	Key   []byte
	Value []byte
}

func txnKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: txnKeyVersion, TransactionalID: id}
	return k.AppendTo(nil)
}

// txnRecord is the record of id's state m.
func txnRecord(id string, m meta) Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = txnValueVersion
	v.ProducerID = m.producerID
	v.ProducerEpoch = m.epoch
	v.TimeoutMillis = m.timeoutMs
	v.State = kmsg.TransactionState(m.state)
	if m.state != StateEmpty {
		// Kafka writes null for Empty, and a (possibly empty) list
		// otherwise, one entry per topic.
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range m.partitions {
			if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
				v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
		}
	}
	v.LastUpdateTimestamp = m.lastUpdateMs
	v.StartTimestamp = m.startMs
	v.PreviousProducerID = m.prevProducerID
	v.NextProducerID = m.nextProducerID
	v.ClientTransactionVersion = m.clientTV
	return Record{Key: txnKey(id), Value: v.AppendTo(nil)}
}

func txnTombstone(id string) Record { return Record{Key: txnKey(id)} }

// Replay applies one record of the partition, in log order, while the
// coordinator is loading: the last record of an id is its state, a
// tombstone removes it. Records with a key version other than 0 are
// skipped, as Kafka skips unknown keys. Replay keeps no reference to key or
// value.
func (c *Coordinator) Replay(key, value []byte) error {
	if c.phase != phaseLoading {
		return ErrLoaded
	}
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	if int16(binary.BigEndian.Uint16(key)) != txnKeyVersion {
		return nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("%w: transaction key: %w", ErrCorruptRecord, err)
	}
	if value == nil {
		delete(c.txns, k.TransactionalID)
		return nil
	}
	m, err := decodeValue(value)
	if err != nil {
		return fmt.Errorf("%w: transactional id %q: %w", ErrCorruptRecord, k.TransactionalID, err)
	}
	c.txns[k.TransactionalID] = &txn{id: k.TransactionalID, meta: m}
	return nil
}

// decodeValue reads a transaction value and checks what Kafka guarantees
// of the records it writes, so a loaded id holds the invariants the
// coordinator's transitions rely on.
func decodeValue(value []byte) (meta, error) {
	if len(value) < 2 {
		return meta{}, fmt.Errorf("value of %d bytes", len(value))
	}
	var v kmsg.TxnMetadataValue
	v.Default()
	if ver := int16(binary.BigEndian.Uint16(value)); ver < 0 || ver > txnValueVersion {
		return meta{}, fmt.Errorf("unknown value version %d", ver)
	}
	if err := v.ReadFrom(value); err != nil {
		return meta{}, err
	}
	s := State(v.State)
	switch {
	case s < StateEmpty || s > StateCompleteAbort:
		// Dead and PrepareEpochFence are never written.
		return meta{}, fmt.Errorf("state %d", v.State)
	case v.ProducerID < 0:
		return meta{}, fmt.Errorf("producer id %d", v.ProducerID)
	case v.ProducerEpoch < 0:
		return meta{}, fmt.Errorf("producer epoch %d", v.ProducerEpoch)
	case v.TimeoutMillis <= 0:
		return meta{}, fmt.Errorf("transaction timeout %d ms", v.TimeoutMillis)
	}
	m := meta{
		producerID:     v.ProducerID,
		prevProducerID: max(v.PreviousProducerID, noProducerID),
		nextProducerID: noProducerID,
		epoch:          v.ProducerEpoch,
		lastEpoch:      noProducerEpoch,
		timeoutMs:      v.TimeoutMillis,
		state:          s,
		startMs:        v.StartTimestamp,
		lastUpdateMs:   v.LastUpdateTimestamp,
		clientTV:       v.ClientTransactionVersion,
	}
	if s.preparing() && v.NextProducerID >= 0 {
		m.nextProducerID = v.NextProducerID
	}
	if s == StateOngoing || s.preparing() {
		// Completed states hold no partitions, whatever the record lists.
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				m.partitions = append(m.partitions, topicPartition{Topic: t.Topic, Partition: p})
			}
		}
		slices.SortFunc(m.partitions, comparePartitions)
		m.partitions = slices.Compact(m.partitions)
	}
	return m, nil
}
