package cluster

import (
	"context"
	"fmt"
	"math"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ProducerIDBlockSize is how many producer ids one allocation hands out,
// Kafka's block size (ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const ProducerIDBlockSize = 1000

// AllocateProducerIDs hands this node the next block of producer ids:
// first .. first+count-1, with count ProducerIDBlockSize. The first block
// starts at 0. prefix/producer_id_block holds the last block handed out; a
// compare-and-swap on its mod revision makes every block go to exactly one
// caller, across goroutines and processes, so no id is ever handed out twice.
// ErrProducerIDsExhausted when the next block would pass MaxInt64.
func (c *Cluster) AllocateProducerIDs(ctx context.Context) (first, count int64, err error) {
	if err := c.checkOpen(); err != nil {
		return 0, 0, err
	}
	key := c.keys.producerIDBlock()
	for range maxAttempts {
		octx, cancel := c.opCtx(ctx)
		first, modRev, err := c.nextProducerIDBlock(octx, key)
		if err != nil {
			cancel()
			return 0, 0, fmt.Errorf("allocate producer ids: %w", err)
		}
		rec := producerIDBlockRecord{Broker: c.cfg.NodeID, First: first, Count: ProducerIDBlockSize}
		resp, err := c.client.Txn(octx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).
			Then(clientv3.OpPut(key, encode(rec))).
			Commit()
		cancel()
		if err != nil {
			return 0, 0, fmt.Errorf("allocate producer ids: %w", err)
		}
		if resp.Succeeded {
			c.log.Debug("allocated producer id block", "first", first, "count", int64(ProducerIDBlockSize))
			return first, ProducerIDBlockSize, nil
		}
	}
	return 0, 0, fmt.Errorf("allocate producer ids: %w", ErrConflict)
}

// nextProducerIDBlock reads the last block and returns where the next one
// starts, with the mod revision to compare (0: no block yet).
func (c *Cluster) nextProducerIDBlock(ctx context.Context, key string) (first, modRev int64, err error) {
	resp, err := c.client.Get(ctx, key)
	if err != nil {
		return 0, 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, 0, nil
	}
	var last producerIDBlockRecord
	if err := unmarshal(resp.Kvs[0].Value, &last); err != nil {
		return 0, 0, fmt.Errorf("decode %s: %w", key, err)
	}
	if last.First < 0 || last.Count <= 0 || last.First > math.MaxInt64-last.Count {
		return 0, 0, fmt.Errorf("decode %s: bad block %+v", key, last)
	}
	first = last.First + last.Count
	if first > math.MaxInt64-ProducerIDBlockSize+1 {
		return 0, 0, ErrProducerIDsExhausted
	}
	return first, resp.Kvs[0].ModRevision, nil
}
