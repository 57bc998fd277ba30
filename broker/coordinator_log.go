package broker

// Helpers for the coordinators that keep their state in an internal,
// compacted topic (__transaction_state; __consumer_offsets works the same
// way): create the topic on first need, replay a partition into a state
// machine, and append its records as Kafka's coordinators do, acks=all.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
	"github.com/gregor-io/gregor/storage"
)

// internalTopicSpec says how to create an internal topic.
type internalTopicSpec struct {
	name              string
	partitions        int32
	replicationFactor int16 // capped at the live brokers
	configs           map[string]string
}

// ensureInternalTopic creates an internal topic when it does not exist, as
// Kafka does on the first FindCoordinator that needs it. Unlike Kafka, which
// waits for as many brokers as the replication factor, the factor is capped
// at the brokers there are, so a single node needs no setup.
func (b *Broker) ensureInternalTopic(ctx context.Context, s internalTopicSpec) error {
	md := b.cluster.Snapshot()
	if md.Topics[s.name] != nil {
		return nil
	}
	rf := min(int(s.replicationFactor), len(md.Brokers))
	if rf < 1 {
		return errors.New("no live brokers")
	}
	assignments, err := assignReplicas(md.Brokers, s.partitions, int16(rf))
	if err != nil {
		return err
	}
	_, err = b.createTopic(ctx, cluster.TopicSpec{Name: s.name, Assignments: assignments, Configs: s.configs}, topicSyncWait)
	var te *topicError
	if errors.As(err, &te) && te.code == protocol.TopicAlreadyExists {
		return nil
	}
	return err
}

// replayCoordinatorLog passes every record of a coordinator partition's log
// to fn, in order, from the log start to the log end at the call. Control
// and transactional batches are skipped: coordinators write neither. It
// returns the offset it replayed up to.
func replayCoordinatorLog(l *storage.Log, fn func(key, value []byte) error) (int64, error) {
	end := l.LogEndOffset()
	var scratch []byte
	for off := l.LogStartOffset(); off < end; {
		rr, err := l.Read(storage.ReadOptions{Offset: off, MaxBytes: 4 << 20, MaxOffset: end, MinOneBatch: true})
		if err != nil {
			return end, err
		}
		buf, err := rr.AppendTo(nil)
		rr.Release()
		if err != nil {
			return end, err
		}
		if len(buf) == 0 {
			break
		}
		it := record.NewIter(buf)
		for bt, ok := it.Next(); ok; bt, ok = it.Next() {
			off = bt.NextOffset()
			if bt.Control() || bt.Transactional() {
				continue
			}
			err := record.ForEachRecord(bt, &scratch, func(_, _ int64, r *record.Record) error {
				return fn(r.Key, r.Value)
			})
			if err != nil {
				return end, fmt.Errorf("at offset %d: %w", bt.BaseOffset(), err)
			}
		}
	}
	return end, nil
}

// coordinatorRecord is one key/value a coordinator writes; a nil value is a
// tombstone.
type coordinatorRecord struct{ key, value []byte }

// appendCoordinatorBatches appends batches (one record batch each, in
// order) to a coordinator partition this broker leads, and returns once
// they are durable here and held by every ISR member, as Kafka's
// coordinators append with acks=all. A partition whose ISR is below its
// min.insync.replicas refuses with NOT_ENOUGH_REPLICAS before anything is
// written. On any other failure the outcome is unknown: the records may
// still become durable.
func (b *Broker) appendCoordinatorBatches(topic string, partition int32, l *storage.Log, batches [][]coordinatorRecord) (protocol.ErrorCode, error) {
	var set []byte
	now := time.Now().UnixMilli()
	for _, recs := range batches {
		if len(recs) == 0 {
			continue
		}
		rs := make([]record.Record, len(recs))
		for i, r := range recs {
			rs[i] = record.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
		}
		var err error
		set, err = record.Build(set, record.BatchHeader{BaseTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, rs)
		if err != nil {
			return protocol.UnknownServerError, err
		}
	}
	if len(set) == 0 {
		return protocol.None, nil
	}
	p, code := b.lookupPartition(topic, [16]byte{}, false, partition)
	if code != protocol.None {
		return code, errors.New("partition not led here")
	}
	if int32(len(p.isr())) < p.effectiveMinISR() {
		return protocol.NotEnoughReplicas, fmt.Errorf("ISR %v below min.insync.replicas %d", p.isr(), p.effectiveMinISR())
	}
	res, epoch, committed, err := p.appendAsLeader(func(pl *storage.Log, epoch int32) (storage.AppendResult, error) {
		if pl != l {
			return storage.AppendResult{}, errLogReopened
		}
		return l.Append(set, storage.AppendOptions{AssignOffsets: true, LeaderEpoch: epoch})
	})
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err == nil && res.NeedsFlush {
		err = l.Flush(ctx, res.LastOffset+1)
	}
	if err != nil {
		return errorCode(err), err
	}
	if !committed {
		switch code := b.awaitCommitted(ctx, p, epoch, res.LastOffset+1); code {
		case protocol.NotLeaderOrFollower:
			return code, errors.New("leadership moved during the append")
		case protocol.RequestTimedOut:
			return code, errors.New("records not replicated in time")
		}
	}
	return protocol.None, nil
}

// errLogReopened is a coordinator's append to a log its partition no
// longer has (moved to another log dir, or replaced): the coordinator
// reloads from the new one.
var errLogReopened = fmt.Errorf("partition reopened: %w", errNotLeader)
