// Package storage is Gregor's partition log: Kafka's on-disk layout of
// segments and indexes, appends with offset assignment, zero-copy reads,
// lookups by offset and timestamp, truncation, crash recovery and durable
// group commit.
//
// # Layout
//
// A Manager owns one or more log dirs (log.dirs). Each holds:
//
//	<log.dir>/
//	  .lock                                 flock'ed while a broker uses the dir
//	  .kafka_cleanshutdown                  present only between a clean Close and the next open
//	  meta.properties                       the dir's stamp: cluster.id, node.id, directory.id (see meta.go)
//	  recovery-point-offset-checkpoint      per partition: recovery starts at this offset's segment
//	  log-start-offset-checkpoint           per partition: first offset readers may fetch
//	  replication-offset-checkpoint         per partition: high watermark
//	  cleaner-offset-checkpoint             per compacted partition: its first dirty offset
//	  <topic>-<partition>/                  one directory per partition log
//	    00000000000000000000.log            segment: batches from offset 0
//	    00000000000000000000.index          its sparse offset index
//	    00000000000000000000.timeindex      its sparse time index
//	    00000000000000000000.txnindex       its aborted transactions (only when it has some)
//	    00000000000000004711.log            next segment, base offset 4711 ...
//	    00000000000000004711.snapshot       producer state at offset 4711 (the two newest are kept)
//	    00000000000000000000.log.deleted    a deleted segment's files, until file.delete.delay.ms passes
//	    00000000000000000000.log.cleaned    a cleaned segment being written (also .index.cleaned, .timeindex.cleaned, .txnindex.cleaned)
//	    00000000000000000000.log.swap       a cleaned segment being swapped in (also .index.swap, .timeindex.swap, .txnindex.swap)
//	    leader-epoch-checkpoint             leader epoch history
//	    partition.metadata                  topic id
//	  <topic>-<partition>.<id>-delete/      a partition being deleted (removed at open)
//	  <topic>-<partition>.<id>-stray/       a log the metadata did not know at start-up: kept, never opened
//
// <id> is 32 hex digits; the topic is cut short so that the name fits in
// 255 bytes. The broker never removes a stray dir: an operator does, once
// the data in it is not needed.
//
// Segment files are named by their base offset, the offset of their first
// batch or lower, as 20 decimal digits. Files ending .deleted, .cleaned
// or .tmp are leftovers of interrupted operations and are removed when the
// log opens; a <base>.log.swap completes its replacement first (see Log
// compaction).
//
// # Log compaction
//
// Logs with cleanup.policy "compact" are cleaned in the background (see
// cleaner.go for the rules: dirty ratio, compaction lags, the offset map,
// which records stay, tombstone delete horizons). A cleaning rewrites a
// group of consecutive segments into one, named by the group's first base
// offset, keeping every kept record at its offset: offsets in a compacted
// log are sparse, and a batch keeps its base offset and last offset delta
// even when records at its ends are gone, so it may hold fewer records
// than its offset range (none at all for an empty batch). A batch that
// keeps a tombstone gets a delete horizon: attribute bit 6 set and its
// base timestamp the time (ms) after which a cleaning drops its
// tombstones (KIP-534). The cleaned segment is written as .cleaned files
// and fsynced; under the log's lock they are renamed .swap (the .log
// last), the directory fsynced, the old segments renamed .deleted, and the
// .swap files renamed to their final names. At open, a <base>.log.swap
// deletes every segment whose base lies in [base, the swap's last offset]
// (a cleaned segment always ends inside the last segment it replaces) and
// takes its final name with its index .swap files; other .swap files and
// all .cleaned files are removed. cleaner-offset-checkpoint has the
// format of the other per-dir checkpoints, with lines
// "<topic> <partition> <first dirty offset>".
//
// # Retention and deleted segments
//
// Segments leave a log from the oldest on, whole: by retention (see
// Log.DeleteOldSegments: retention.ms against a segment's largest
// timestamp, retention.bytes against the log's size, under cleanup.policy
// "delete"), or when DeleteRecords moves the log start offset past them.
// The active segment never goes. The log start offset moves first, to the
// base of the first segment kept; the segment then leaves the list readers
// see, and its three files are renamed in place with ".deleted" appended
// (00000000000000000000.log.deleted, .index.deleted, .timeindex.deleted).
// A reader that holds the segment file keeps reading it. The Manager
// removes the renamed files file.delete.delay.ms later; files still
// pending at shutdown or a crash are removed at the next open. The new log
// start offset is written to log-start-offset-checkpoint after every
// retention pass that moved one. Retention runs every
// log.retention.check.interval.ms.
//
// # Segment file (.log)
//
// RecordBatch v2 batches back to back, exactly as producers and leaders sent
// them, with the base offset and partition leader epoch patched at append.
// The batch format is documented byte by byte in package record; a reader
// needs only its first 12 bytes (base offset int64, batch length int32, both
// big-endian) to step from batch to batch: the next batch starts
// batch-length + 12 bytes later. Base offsets increase from batch to batch;
// in a log that was never compacted they are dense (each batch starts at the
// previous batch's last offset + 1).
//
// # Offset index (.index)
//
// 8-byte entries, no header, big-endian:
//
//	offset  size  field
//	     0     4  relative offset  uint32: a batch's last offset - segment base offset
//	     4     4  position         uint32: byte position of that batch in the .log
//
// Both fields strictly increase. An entry is written for a batch once more
// than index.interval.bytes (4096) of batches were appended since the
// previous entry (Kafka's rule; the first batch of a segment gets none). To
// find offset o: take the last entry whose offset is at most o (or position
// 0), then step through batch headers from its position to the first batch
// whose last offset is at least o.
//
// # Time index (.timeindex)
//
// 12-byte entries, no header, big-endian:
//
//	offset  size  field
//	     0     8  timestamp        int64: the largest batch max timestamp so far (ms)
//	     8     4  relative offset  uint32: last offset of the batch that carried it - base
//
// An entry is written with each offset index entry when its timestamp is
// above the last time entry's, and once more when the segment is rolled or
// the log is closed, so the last entry holds the segment's max timestamp.
// An entry (t, o) says: no record at an offset up to o has a timestamp
// above t. To find the first record with timestamp at least ts: skip
// segments whose max timestamp is below ts; in the first other segment take
// the last entry with timestamp below ts, start at its offset + 1, and
// decode batches whose max timestamp is at least ts.
//
// # Transactions
//
// A transactional producer's batches have the transactional attribute
// bit; its first batch on a partition opens its transaction there, at
// that batch's base offset. The leader ends it with a control batch (see
// package record: one COMMIT or ABORT record, with the coordinator's
// epoch), appended by Log.AppendTxnMarker. The last stable offset is the
// high watermark, or the first offset of the earliest transaction that is
// open or whose marker is not yet below the high watermark, if lower; a
// read_committed fetch reads below it and drops the records of the
// aborted transactions Log.AbortedTransactions lists, from the .txnindex
// files (format in txnindex.go). Open transactions and each producer's
// last coordinator epoch are part of the producer state snapshots (format
// in producer.go), so that a restart restores the last stable offset.
//
// Index files hold only whole entries. Entries are kept in memory and
// written out when a segment is rolled (then fsynced), and at Close; after a
// crash, recovery rebuilds the indexes of every segment it scans, and an
// index that is missing or fails its checks (size, order, positions inside
// the segment) is rebuilt from the log when first used.
//
// # Checkpoint files
//
// Text, in Kafka's format: a version line "0", a line with the entry count
// n, then n lines. The three per-dir files have lines
// "<topic> <partition> <offset>"; leader-epoch-checkpoint has lines
// "<epoch> <start offset>", both strictly increasing. For example:
//
//	0
//	2
//	orders 0 1042
//	orders 1 977
//
// partition.metadata has two lines, "version: 0" and
// "topic_id: <id>", the id being 16 bytes in unpadded base64url, as Kafka
// prints topic ids. Every checkpoint is replaced atomically: written to
// <name>.tmp, fsynced, renamed over <name>, then the directory fsynced.
//
// # Durability
//
// flush.messages keeps Kafka's meaning: the number of appended records
// after which the log is fsynced before the append is acknowledged. Its
// default here is 1, so every acknowledged append is on stable storage;
// concurrent appends, to one or many partitions, share fsyncs (group
// commit: Flush queues the log, and one syncer fsyncs every queued log per
// round, in parallel). Setting it high gives Kafka's page-cache mode, with
// flush.ms fsyncing in the background. A rolled segment is fsynced with its
// indexes in the background; the recovery point then moves past it.
//
// # Recovery
//
// Close fsyncs everything, writes the checkpoints and then the
// clean-shutdown marker; the next open skips recovery and reads only the
// active segment's tail past its last index entry. Without the marker each
// log scans its segments from the one holding its recovery point: every
// batch must be whole, of magic 2, match its CRC-32C, start above the
// previous batch's end and end below the next segment's base. Each segment
// file is cut at its first batch that fails, and only there: no segment is
// deleted, since what a later segment holds passed its own checks and
// nothing proves it unacknowledged. Offsets between segments may have gaps
// (a cleaned segment ends where its last kept batch does; a rolled
// segment's unsynced tail may be lost while a later segment's data
// survived): a gap is no damage. An empty last segment stays too: its base
// is the log end a roll reached, and those offsets are not handed out
// again. Nothing but zeros after the last batch is no damage either, only
// where batches were not written yet (a segment file extended ahead of its
// end, see prefault.go): it is cut. Recovery fsyncs every segment it
// scanned and their rebuilt indexes, so the recovery point moves to the
// log end at once (the cleaner cleans only below it). Every batch that was
// fsynced before the crash remains: fsynced bytes lie before any torn or
// lost write. The producer state is then loaded from the newest snapshot
// at or below the log end and the batches after it (below the log start
// too, where the first segment still holds them), and the txn indexes of
// the scanned segments are refilled by a replay from the newest snapshot
// at or below the first scanned segment, or from the first segment when
// there is none.
//
// # Disk errors
//
// The first failed write or fsync of a log, of a checkpoint or of a log's
// creation takes the whole log dir offline, as Kafka does: every log in it
// fails (appends, flushes and reads return ErrLogFailed; the broker answers
// KAFKA_STORAGE_ERROR), its checkpoints and clean-shutdown marker are no
// longer written, and new logs go to the other dirs. A failed fsync is
// never retried (the kernel may have dropped the dirty pages): what it
// covered was not acknowledged, and the next start recovers the dir.
package storage
