// Package txn is Gregor's transaction coordinator: InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions and
// ListTransactions, with the transaction markers, timeouts and
// transactional id expiration behind them, as Apache Kafka 4.x's
// transaction coordinator answers them.
//
// A Coordinator owns the transactional ids of one __transaction_state
// partition. It is a state machine with no clock, no goroutines and no I/O,
// in the style of coordinator/group: requests go in through Step, time
// through Tick, and each call returns an Output with the records to append
// to the partition, the responses to send, the markers to write and when to
// call Tick next. PartitionFor says which partition, hence which
// coordinator, a transactional id belongs to.
//
// Unlike the group coordinator, a change takes effect only once its record
// is durable, as in Kafka: until then the id has a pending transition, and
// requests that would change it get CONCURRENT_TRANSACTIONS. So the
// coordinator must be told when each append is durable (Appended), and the
// responses in an Output never wait for anything.
//
// # Driver
//
// The broker runs one driver loop per __transaction_state partition it
// leads, and it alone touches that partition's Coordinator:
//
//  1. Load. New(cfg, coordinatorEpoch) returns a loading Coordinator; the
//     coordinator epoch is the partition's leader epoch. Pass every record
//     of the partition, from the log start to its end and in order, to
//     Replay (skip control batches), then call Loaded and act on its
//     Output like any other: it holds the markers of the transactions the
//     previous coordinator left in PrepareCommit or PrepareAbort. Until
//     Loaded, Step answers COORDINATOR_LOAD_IN_PROGRESS.
//  2. Serve. Give each request to Step, and call Tick when the time reaches
//     Output.NextTick. Step also fires due timers first.
//  3. Act on every Output, in the order they were returned. Send its
//     Responses now. Append its Records to the partition as one batch,
//     acks=all (Kafka appends with required acks -1, no compression), and
//     once the batch is durable call Appended with Output.Append; appends
//     may be pipelined, reported durable in log order. Write its Markers
//     (step 4). Appended and MarkerWritten return Outputs too: act on them
//     the same way.
//  4. Markers. Each Marker is one partition whose transaction ends: send
//     WriteTxnMarkers (API 27) to the partition's leader, grouping markers
//     by broker as Kafka does (or append the control record directly when
//     this broker leads it). The control record's value carries the
//     coordinator epoch. When the marker is written, or the partition's
//     topic no longer exists, call MarkerWritten with the Marker; when the
//     last partition of a transaction is marked, its Output holds the
//     CompleteCommit or CompleteAbort record. Retriable errors
//     (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
//     REQUEST_TIMED_OUT, UNKNOWN_TOPIC_OR_PARTITION while the topic exists,
//     KAFKA_STORAGE_ERROR) are the driver's to retry, against the
//     partition's current leader. On INVALID_PRODUCER_EPOCH or
//     TRANSACTION_COORDINATOR_FENCED stop writing that transaction's
//     markers, as Kafka does: the transaction stays in its Prepare state
//     until the partition is loaded again. UNSUPPORTED_FOR_MESSAGE_FORMAT
//     and UNSUPPORTED_VERSION count as written (Kafka drops the
//     partition).
//  5. Failed appends. If a batch cannot be appended, call AppendFailed
//     with the append's error code and send the responses it returns (for
//     every request still waiting on any append). The Coordinator is then
//     fenced (every request gets NOT_COORDINATOR); drop it and, if the
//     broker still leads the partition, load a new one from the log (step
//     1): an append whose outcome is unknown may still become durable, and
//     only a coordinator loaded from the log is sure to agree with it.
//  6. Leadership lost. Call Unload, send the responses it returns and stop
//     writing the markers of this coordinator.
//
// A Response's Token is the Input's, so the driver can route it to its
// connection; a response for a connection that closed meanwhile is dropped
// by the driver.
//
// The broker's part, outside the coordinator:
//
//   - FindCoordinator for key type 1 (transaction) by PartitionFor over
//     __transaction_state's partition count, and NOT_COORDINATOR for ids of
//     partitions it does not lead. __transaction_state is created like
//     Kafka's: transaction.state.log.num.partitions (50),
//     replication factor 3, min.insync.replicas 2, cleanup.policy compact.
//   - Authorization: TRANSACTIONAL_ID_AUTHORIZATION_FAILED (WRITE on the id)
//     before Step; GROUP_AUTHORIZATION_FAILED for AddOffsetsToTxn; CLUSTER
//     ACTION for AddPartitionsToTxn v4+, which only brokers send;
//     Input.TopicAuthorized for the topics of AddPartitionsToTxn v0-v3;
//     DESCRIBE filtering of DescribeTransactions' topics and
//     ListTransactions' ids.
//   - Requests for several ids (AddPartitionsToTxn v4+,
//     DescribeTransactions) are split by PartitionFor before Step and the
//     answers merged; ListTransactions goes to every coordinator of the
//     broker and the lists are concatenated (any error code wins).
//   - InitProducerId without a transactional id needs no coordinator: any
//     broker answers it with a producer id of its own ProducerIDs (Step
//     answers it too, without writing anything).
//   - Config.ProducerIDs: producer ids come from blocks the broker takes
//     from the cluster metadata (etcd) ahead of need; the coordinator
//     asks without blocking and answers COORDINATOR_LOAD_IN_PROGRESS when
//     none is at hand.
//   - The partition leaders' half of transactions: verifying transactional
//     writes (Produce, and TxnOffsetCommit on the group coordinator's
//     offsets partition) with AddPartitionsToTxn v5 verify-only (KIP-890
//     part 1), adding the partitions for transaction version 2 producers
//     with verify-only unset (part 2), holding a version 2 producer's next
//     transaction until the previous one's marker is in the partition,
//     WriteTxnMarkers, the last stable offset and aborted transaction
//     index; advertising EndTxn v5 and the finalized transaction.version
//     feature in ApiVersions.
//
// Step keeps strings of requests (ids, topics): decode requests with
// kmsg's ReadFrom, not UnsafeReadFrom over a buffer that is reused.
//
// # Behaviour
//
// The states, transitions, error codes and their mapping per API version
// follow Kafka's TransactionCoordinator and TransactionMetadata: epoch
// bumps on InitProducerId, a new producer id once the epoch is exhausted
// (32766 and up), KIP-360 recovery with the producer id and epoch in the
// request, an ongoing transaction aborted with a bumped epoch when a new
// producer initializes the id or the transaction times out, PRODUCER_FENCED
// answered as INVALID_PRODUCER_EPOCH to clients too old to know it
// (InitProducerId v0-v3, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
// v0-v1), and KIP-890 part 2 for EndTxn v5+: every end bumps the epoch,
// the response carries the producer id and epoch to use next, an end at
// the last epoch moves to a new producer id when its markers are written,
// a retry of a completed end (its epoch one below, or the old producer
// id at the last epoch) is answered as the end was, an abort with no
// transaction open (Empty, CompleteCommit, CompleteAbort at the current
// epoch) bumps the epoch and completes with no markers, and the next
// transaction's end at the current epoch while this one's markers are
// written is CONCURRENT_TRANSACTIONS. Where Gregor chose
// differently, or follows a Kafka fix newer than the 3.9 code the rest
// follows, the code says so; in short:
//
//   - The abort of a fenced or timed-out transaction is one PrepareAbort
//     record with the bumped epoch, Kafka's PrepareEpochFence and
//     PrepareAbort in one step. It keeps the transaction's version: with
//     version 2 the producer's own abort at the old epoch is answered as a
//     retry of it, with the new epoch, so a producer whose transaction
//     timed out carries on (its commit gets INVALID_TXN_STATE), and an
//     abort at the last epoch moves to a new producer id, as Kafka does
//     since KAFKA-20090. Version 0 producers are fenced by it.
//   - AddPartitionsToTxn answers CONCURRENT_TRANSACTIONS while an end is
//     in progress before it checks the producer id (KAFKA-18660): a
//     version 2 producer learns its new producer id before the
//     transaction completes with it.
//   - A failed append fences the coordinator (see Driver) where Kafka
//     drops the pending transition and keeps serving.
//   - The previous producer id changes only when the producer id does;
//     Kafka's records also carry it on other transitions.
//   - ListTransactions' id pattern (v2+) is Go's RE2 syntax, not Java's.
//
// Records written before a change is durable are the only source of
// truth: the epoch before the last bump (used to answer a retried KIP-360
// InitProducerId) is kept in memory only, as Kafka keeps it, so such a
// retry across a coordinator change is fenced.
//
// # Records
//
// Records use the key and value schemas Kafka writes to __transaction_state
// (kmsg's TxnMetadataKey and TxnMetadataValue), so log compaction keeps the
// last record of each id, and tools that read the topic read Gregor's.
// Integers are big-endian. A tombstone (an expired id) has the key and a
// null value.
//
// Key, version 0 (the only one; Replay skips keys of other versions):
//
//	int16   version = 0
//	int16   transactional id length, then its UTF-8 bytes
//
// Value, version 1 (Kafka 4.x; Replay also reads version 0, below):
//
//	int16   version = 1
//	int64   producer id
//	int16   producer epoch
//	int32   transaction timeout, ms
//	int8    state: 0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort,
//	        4 CompleteCommit, 5 CompleteAbort (6 Dead and 7
//	        PrepareEpochFence are never written; Replay refuses them)
//	uvarint topic count + 1 (0: null, written for Empty; Complete states
//	        write 1, no topics), then per topic, by name:
//	  uvarint name length + 1, then its UTF-8 bytes
//	  uvarint partition count + 1, then each partition as int32, ascending
//	  uvarint 0 (no tagged fields)
//	int64   last update timestamp, Unix ms
//	int64   transaction start timestamp, Unix ms (-1: none since the last
//	        InitProducerId)
//	uvarint tagged field count, then each field as uvarint tag, uvarint
//	        size and the data, in tag order, when not the default:
//	  tag 0: int64 previous producer id (default -1)
//	  tag 1: int64 next producer id, of a PrepareCommit or PrepareAbort at
//	         the last epoch of transaction version 2 (default -1)
//	  tag 2: int16 client transaction version: 2 when the last EndTxn or
//	         AddPartitionsToTxn was v5+ (default 0)
//	  tag 3: int16 next producer epoch (Kafka 4.1+; never written, ignored)
//
// Value version 0 (Kafka before 4.0) has the same fields up to the start
// timestamp, with int32 counts (-1: null topics), int16 string lengths and
// no tagged fields.
//
// Replay also refuses what Kafka never writes: a negative producer id or
// epoch, a timeout of zero or less. Partitions listed for Empty or Complete
// states are dropped.
package txn
