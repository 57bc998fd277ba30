package txn

import "github.com/gregor-io/gregor/coordinator/group"

// PartitionFor returns the __transaction_state partition of a
// transactional id. Kafka uses the formula of groups,
// Utils.abs(transactionalId.hashCode()) % partitions, so this is
// group.PartitionFor: one function, one answer for FindCoordinator of
// either key type.
func PartitionFor(transactionalID string, partitions int32) int32 {
	return group.PartitionFor(transactionalID, partitions)
}
