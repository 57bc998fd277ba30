// Package group is Gregor's group coordinator: the classic consumer group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
// OffsetFetch, OffsetDelete, DescribeGroups, ListGroups, DeleteGroups and
// TxnOffsetCommit) and the next-generation consumer group protocol of
// KIP-848 (ConsumerGroupHeartbeat, ConsumerGroupDescribe: consumer.go,
// reconcile.go, assignor.go), as Apache Kafka 4.x's group coordinator
// answers them.
//
// A Coordinator owns the groups of one __consumer_offsets partition. It is a
// state machine with no clock, no goroutines and no I/O (etcd-io/raft's
// style): requests go in through Step, time through Tick, and each call
// returns an Output with the records to append to the partition, the
// responses to send, and when to call Tick next. PartitionFor says which
// partition, hence which coordinator, a group belongs to.
//
// # Driver
//
// The broker runs one driver loop per partition it leads, and it alone
// touches that partition's Coordinator:
//
//  1. Load. New returns a loading Coordinator. Pass every record of the
//     partition, from the log start to its end and in order: records of
//     transactional batches to ReplayTransactional with the batch's
//     producer id, other records to Replay, and the COMMIT or ABORT marker
//     of each control batch to ReplayTxnMarker (other control records are
//     skipped). Then call Loaded. Until then Step answers
//     COORDINATOR_LOAD_IN_PROGRESS.
//  2. Serve. Give each request to Step, and call Tick when the time reaches
//     Output.NextTick (zero: no timer). Step also fires due timers first.
//  3. Persist, then answer. For each Output, in the order they were
//     returned: append its Records to the partition as one batch (they must
//     be applied atomically: a group deletion is offset tombstones plus the
//     group tombstone), wait until the batch is durable (committed like an
//     acks=all produce), and only then send its Responses. Responses of an
//     Output with no Records still wait for the Records of earlier Outputs.
//     The coordinator applies every change in memory when it returns it, so
//     later Outputs already build on earlier ones; appends may be pipelined
//     as long as responses go out in order. An Output with Txn (a
//     TxnOffsetCommit) is the exception: append its Records, then its Txn
//     records as one transactional batch of Txn.ProducerID and
//     Txn.ProducerEpoch (acks=all as well), before stepping anything else.
//     If the partition refuses that producer (a stale or fenced epoch),
//     send what TxnAppendFailed returns instead of its Responses; the
//     coordinator stays in service.
//  4. Failed appends. If a batch cannot be appended, call AppendFailed with
//     the Output's Responses and the append's error code, send what it
//     returns, and do the same for every later Output not yet answered.
//     The Coordinator is then fenced (every request gets NOT_COORDINATOR);
//     drop it and, if the broker still leads the partition, load a new one
//     from the log (step 1). Kafka instead reverts its in-memory state to
//     the last committed offset; reloading reaches the same state.
//  5. Leadership lost. Call Unload and send the responses it returns.
//  6. Transaction markers. When a COMMIT or ABORT marker is appended to the
//     partition after loading (the broker writes it for WriteTxnMarkers),
//     call TxnCompleted with its producer id and result, in log order with
//     the driver's own appends.
//
// Responses to a JoinGroup or SyncGroup that waits for the rest of its group
// come out of a later Step or Tick. A Response's Token is the Input's, so
// the driver can route it to its connection; a response for a connection
// that closed meanwhile is dropped by the driver. Kafka answers each
// connection's requests in order, one at a time, so a parked request holds
// its connection until it is answered.
//
// Requests for several groups (DescribeGroups, DeleteGroups, OffsetFetch v8+)
// must be split by PartitionFor before Step and the answers merged;
// ListGroups goes to every coordinator of the broker and the lists are
// concatenated. FindCoordinator, authorization (GROUP_AUTHORIZATION_FAILED,
// TOPIC_AUTHORIZATION_FAILED) and NOT_COORDINATOR for groups of partitions
// the broker does not lead are the broker's. Step keeps parts of requests
// (strings, protocol metadata): decode them with kmsg's ReadFrom, not
// UnsafeReadFrom over a buffer that is reused.
//
// # Behaviour
//
// The rebalance protocol follows Kafka 4.x's GroupMetadataManager and
// ClassicGroup: MEMBER_ID_REQUIRED for new members (KIP-394, JoinGroup v4+),
// static membership (KIP-345; a restarted static member takes over its old
// member id and assignment without a rebalance when the group is stable and
// its protocols leave the selected protocol unchanged), protocol selection
// by votes among the protocols all members support, the initial rebalance
// delay, rebalance and session timeouts, the sync timeout, group.max.size,
// and the error codes of each API version. Where Gregor chose differently,
// the code says so; in short:
//
//   - SyncGroup: when the leader gives a member of a "consumer" group no
//     assignment (or a zero-length one), the member gets an encoded
//     ConsumerMemberAssignment with no topics (version 0, no topics, null
//     user data: 0000 00000000 ffffffff) instead of Kafka's zero-length
//     bytes. franz-go's consumers fail to parse zero-length bytes ("sync
//     assignment parse failed") and never finish joining; Java and
//     librdkafka read the encoded empty assignment as "no partitions".
//     Other protocol types get Kafka's zero-length bytes.
//   - A parked JoinGroup or SyncGroup replaced by a newer one of the same
//     member is answered REBALANCE_IN_PROGRESS, and a removed member's
//     parked SyncGroup UNKNOWN_MEMBER_ID, where Kafka drops them and lets
//     the client time out.
//   - A group becomes Dead only to be removed at once: Dead is what
//     DescribeGroups reports for a group that does not exist.
//   - Ties in protocol votes go to the earliest joined member's preference.
//   - TxnOffsetCommit with a negative producer id fails with
//     INVALID_PRODUCER_ID_MAPPING, where Kafka writes a plain commit.
//   - Transaction verification (KIP-890: asking the transaction
//     coordinator whether the producer added the offsets partition to its
//     transaction) is not done.
//
// # Transactional offsets
//
// TxnOffsetCommit writes offset commit records, as OffsetCommit does, in a
// transactional batch of the producer, and keeps the offsets pending under
// the producer id. OffsetFetch does not return them; with require_stable
// (v7+, KIP-447) it answers UNSTABLE_OFFSET_COMMIT for a partition with a
// pending offset, so a consumer that takes over does not start from an
// offset about to change. The transaction's COMMIT marker makes the
// producer's pending offsets committed, except where a plain commit was
// written after them; an ABORT marker drops them. A tombstone (OffsetDelete,
// DeleteGroups, topic deletion) deletes the pending offsets of its
// partition too. Offset expiration skips partitions with pending offsets
// and keeps groups with open transactions.
//
// # Offset expiration
//
// Every OffsetsRetentionCheckInterval the coordinator deletes, with
// tombstones, the offsets that expired (Kafka 2.1+, KIP-211):
//
//   - in an empty group with a protocol type: all offsets, retention after
//     the group became empty;
//   - in a stable consumer group whose subscriptions are known: offsets of
//     topics no member subscribes to, retention after their commit;
//   - in a group without protocol type (offsets committed with generation
//     -1 by consumers that assign partitions themselves): retention after
//     each commit;
//   - a commit that set its own retention (OffsetCommit v2-v4) expires at
//     commit time plus that retention, in the cases above.
//
// An empty group left without offsets is then deleted: a group metadata
// tombstone follows the offset tombstones.
//
// # Records
//
// Records use the key and value schemas Kafka writes to __consumer_offsets
// (kmsg's GroupMetadataKey/Value and OffsetCommitKey/Value), so log
// compaction keeps the last record of each key, and tools that read the
// topic read Gregor's. Integers are big-endian; a string is an int16 length
// and UTF-8 bytes (nullable: length -1 is null); bytes are an int32 length
// and the bytes. A tombstone has the key and a null value.
//
// Group metadata key, version 2:
//
//	int16   version = 2
//	string  group id
//
// Group metadata value, version 3 (Kafka 4.x writes 3; Replay reads 0-4):
//
//	int16   version = 3
//	string  protocol type ("consumer"; "" for a group without members ever)
//	int32   generation
//	string  protocol (nullable: null when the group is empty)
//	string  leader member id (nullable)
//	int64   current state timestamp, Unix ms (-1 unknown)
//	int32   member count, then per member in join order:
//	  string  member id
//	  string  group instance id (nullable)
//	  string  client id
//	  string  client host
//	  int32   rebalance timeout, ms
//	  int32   session timeout, ms
//	  bytes   subscription: the member's metadata for the selected protocol
//	  bytes   assignment
//
// Offset commit key, version 1 (Replay reads 0 and 1, which are the same):
//
//	int16   version = 1
//	string  group id
//	string  topic
//	int32   partition
//
// Offset commit value, version 4 (Kafka 4.1+; 4.0 wrote 3, the same up to
// the metadata but with an int16 string length and no tagged fields):
//
//	int16   version = 4
//	int64   committed offset
//	int32   leader epoch (-1 none)
//	uvarint metadata length + 1, then its UTF-8 bytes
//	int64   commit timestamp, Unix ms
//	uvarint tagged field count (0 or 1), then for tag 0, the topic id, when
//	        known (from OffsetCommit v10, or Config.Topics by name):
//	        uvarint 0, uvarint 16, 16 bytes
//
// Offset commit value, version 1, for a commit that carries its own
// retention (OffsetCommit v2-v4 with a retention time):
//
//	int16   version = 1
//	int64   committed offset
//	string  metadata
//	int64   commit timestamp, Unix ms
//	int64   expire timestamp, Unix ms
//
// Consumer group records (key versions 3 to 8, and 16) are in
// consumer_records.go. Records with other key versions (share groups) are
// skipped by Replay.
//
// # Consumer groups (KIP-848)
//
// A member joins with epoch 0 and its subscription; the coordinator bumps
// the group epoch whenever a member joins, leaves or changes what it
// subscribes to, or the subscribed topics change (checked at every
// heartbeat), computes a new target assignment with the group's assignor
// (uniform or range; the one most members ask for, else the first of
// ConsumerAssignors) and moves each member towards its target through its
// heartbeats: partitions to give up first, new ones once nobody holds them
// (reconcile.go). A member is fenced when its session runs out
// (ConsumerSessionTimeout) or it does not revoke within its rebalance
// timeout. Static members (an instance id) that leave with epoch -2 keep
// their partitions for their return under a new member id. Offsets are
// committed with the member's epoch (OffsetCommit v9+; an older epoch is
// STALE_MEMBER_EPOCH). An empty classic group (offsets only) becomes a
// consumer group on a member's join, and an empty consumer group a classic
// one on a JoinGroup; a classic member cannot join a consumer group that
// has members (INCONSISTENT_GROUP_PROTOCOL): online migration between the
// protocols is not served. Where Gregor differs from Kafka:
//
//   - Regular expression subscriptions are resolved at every heartbeat
//     against the topics that exist (Kafka resolves them in the background
//     and records the result); the records of Kafka's resolution are read
//     and skipped.
//   - A known member that joins again with epoch 0 starts over (it is
//     fenced and joins as new), where Kafka accepts it when its previous
//     epoch is 0.
//   - The group's assignor is the one most members ask for, ties to the
//     first name in order.
package group
