package broker

// Kafka's error codes for bad requests, one test per case, checked on the
// wire: requests are encoded by kmsg and sent over a plain connection
// (wireConn), so the version, acks and record bytes are exactly what the
// test says. Record batches are built with protocol/record.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/protocol/record"
)

// checkCode fails the test unless got is want.
func checkCode(t *testing.T, what string, got int16, want protocol.ErrorCode) {
	t.Helper()
	if protocol.ErrorCode(got) != want {
		t.Errorf("%s: error %d (%s), want %d (%s)", what, got, protocol.ErrorCode(got), want, want)
	}
}

// listOffset asks for one partition's offset at ts (v8 unless v says).
func (w *wireConn) listOffset(v int16, topic string, partition int32, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	w.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(v)
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := w.mustRoundTrip(req).(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		w.t.Fatalf("list offsets response: %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// logEnd is a partition's latest offset.
func (w *wireConn) logEnd(topic string, partition int32) int64 {
	w.t.Helper()
	p := w.listOffset(8, topic, partition, -1)
	if p.ErrorCode != 0 {
		w.t.Fatalf("list latest offset of %s/%d: error %d", topic, partition, p.ErrorCode)
	}
	return p.Offset
}

// fetchPartition fetches one partition once, without waiting.
func (w *wireConn) fetchPartition(v int16, topic string, id [16]byte, partition int32, offset int64) (kmsg.FetchResponse, kmsg.FetchResponseTopicPartition) {
	w.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID = -1
	req.ReplicaState.ID = -1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := w.mustRoundTrip(req).(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		w.t.Fatalf("fetch response has %d topics, want 1 with 1 partition (error %d)", len(resp.Topics), resp.ErrorCode)
	}
	return *resp, resp.Topics[0].Partitions[0]
}

// metadataTopic asks for one topic's metadata at v12.
func (w *wireConn) metadataTopic(name *string, id [16]byte, allowAutoCreate bool) kmsg.MetadataResponseTopic {
	w.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.AllowAutoTopicCreation = allowAutoCreate
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic, rt.TopicID = name, id
	req.Topics = append(req.Topics, rt)
	resp := w.mustRoundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 {
		w.t.Fatalf("metadata response has %d topics, want 1", len(resp.Topics))
	}
	return resp.Topics[0]
}

// topicNames lists every topic the broker knows.
func (w *wireConn) topicNames() []string {
	w.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	resp := w.mustRoundTrip(req).(*kmsg.MetadataResponse)
	var out []string
	for _, t := range resp.Topics {
		if t.Topic != nil {
			out = append(out, *t.Topic)
		}
	}
	return out
}

func TestErrorUnknownTopicOrPartition(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.AutoCreateTopicsEnable = false })
	w := dialWire(t, b)
	batch := buildBatch(t, plainHeader(), "v", 3)

	// Produce never creates topics.
	rp := w.producePartition(-1, "nope", 0, batch)
	checkCode(t, "produce to an unknown topic", rp.ErrorCode, protocol.UnknownTopicOrPartition)
	if rp.BaseOffset != -1 {
		t.Errorf("produce to an unknown topic: base offset %d, want -1", rp.BaseOffset)
	}
	w.createTopic("known", 2, nil)
	rp = w.producePartition(-1, "known", 2, batch)
	checkCode(t, "produce to partition 2 of a 2-partition topic", rp.ErrorCode, protocol.UnknownTopicOrPartition)
	rp = w.producePartition(-1, "known", -1, batch)
	checkCode(t, "produce to partition -1", rp.ErrorCode, protocol.UnknownTopicOrPartition)

	mt := w.metadataTopic(kmsg.StringPtr("nope"), [16]byte{}, true)
	checkCode(t, "metadata of an unknown topic, auto-creation disabled on the broker", mt.ErrorCode, protocol.UnknownTopicOrPartition)
	_, fp := w.fetchPartition(12, "nope", [16]byte{}, 0, 0)
	checkCode(t, "fetch from an unknown topic", fp.ErrorCode, protocol.UnknownTopicOrPartition)
	lp := w.listOffset(8, "nope", 0, -1)
	checkCode(t, "list offsets of an unknown topic", lp.ErrorCode, protocol.UnknownTopicOrPartition)
	for _, name := range w.topicNames() {
		if name == "nope" {
			t.Errorf("topic %q was created", name)
		}
	}
}

func TestErrorUnknownTopicOrPartitionWithAutoCreate(t *testing.T) {
	t.Parallel()
	b := startBroker(t) // auto.create.topics.enable=true
	w := dialWire(t, b)
	// allow_auto_topic_creation=false (v4+) wins over the broker setting.
	mt := w.metadataTopic(kmsg.StringPtr("nope"), [16]byte{}, false)
	checkCode(t, "metadata with allow_auto_topic_creation=false", mt.ErrorCode, protocol.UnknownTopicOrPartition)
	// Produce does not create topics even when the broker would for Metadata.
	rp := w.producePartition(-1, "nope2", 0, buildBatch(t, plainHeader(), "v", 1))
	checkCode(t, "produce to an unknown topic with auto-creation on", rp.ErrorCode, protocol.UnknownTopicOrPartition)
	for _, name := range w.topicNames() {
		if name == "nope" || name == "nope2" {
			t.Errorf("topic %q was created", name)
		}
	}
	// And Metadata does create a valid one when allowed.
	mt = w.metadataTopic(kmsg.StringPtr("auto"), [16]byte{}, true)
	checkCode(t, "metadata with auto-creation", mt.ErrorCode, protocol.None)
	if len(mt.Partitions) != int(b.cfg.NumPartitions) {
		t.Errorf("auto-created topic has %d partitions, want num.partitions %d", len(mt.Partitions), b.cfg.NumPartitions)
	}
}

func TestErrorTopicAlreadyExists(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	id := w.createTopic("twice", 3, nil)
	rt := w.createTopicResult("twice", 3, 1, nil)
	checkCode(t, "second CreateTopics of a topic", rt.ErrorCode, protocol.TopicAlreadyExists)
	rt = w.createTopicResult("twice", 5, 1, nil)
	checkCode(t, "CreateTopics of an existing topic with other partitions", rt.ErrorCode, protocol.TopicAlreadyExists)
	mt := w.metadataTopic(kmsg.StringPtr("twice"), [16]byte{}, false)
	if mt.TopicID != id || len(mt.Partitions) != 3 {
		t.Errorf("topic after failed re-creation: id %x, %d partitions; want id %x, 3 partitions", mt.TopicID, len(mt.Partitions), id)
	}
}

func TestErrorInvalidTopicName(t *testing.T) {
	t.Parallel()
	b := startBroker(t) // auto-creation on: Metadata must still refuse these
	w := dialWire(t, b)
	names := []string{"", ".", "..", strings.Repeat("a", 250), "bad/name", "with space", "ümlaut", "a\x00b"}
	for _, name := range names {
		rt := w.createTopicResult(name, 1, 1, nil)
		checkCode(t, fmt.Sprintf("CreateTopics %q", name), rt.ErrorCode, protocol.InvalidTopicException)
		mt := w.metadataTopic(kmsg.StringPtr(name), [16]byte{}, true)
		checkCode(t, fmt.Sprintf("Metadata with auto-creation of %q", name), mt.ErrorCode, protocol.InvalidTopicException)
	}
	// 249 characters is the longest legal name.
	long := strings.Repeat("b", 249)
	rt := w.createTopicResult(long, 1, 1, nil)
	checkCode(t, "CreateTopics with a 249-character name", rt.ErrorCode, protocol.None)
	// '.' and '_' collide (they map to the same metric name).
	w.createTopic("a.b", 1, nil)
	rt = w.createTopicResult("a_b", 1, 1, nil)
	checkCode(t, `CreateTopics "a_b" next to "a.b"`, rt.ErrorCode, protocol.InvalidTopicException)

	have := map[string]bool{}
	for _, n := range w.topicNames() {
		have[n] = true
	}
	for _, name := range append(names, "a_b") {
		if have[name] {
			t.Errorf("topic %q exists", name)
		}
	}
}

func TestErrorInvalidPartitionsAndReplicationFactor(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	for _, tc := range []struct {
		partitions int32
		rf         int16
		want       protocol.ErrorCode
	}{
		{0, 1, protocol.InvalidPartitions},
		{-5, 1, protocol.InvalidPartitions},
		{1, 0, protocol.InvalidReplicationFactor},
		{1, -5, protocol.InvalidReplicationFactor},
		{1, 3, protocol.InvalidReplicationFactor}, // one broker
		{1, 2, protocol.InvalidReplicationFactor},
		{-1, -1, protocol.None}, // the broker defaults
	} {
		name := fmt.Sprintf("p%d-rf%d", tc.partitions, tc.rf)
		rt := w.createTopicResult(name, tc.partitions, tc.rf, nil)
		checkCode(t, fmt.Sprintf("CreateTopics with %d partitions, replication factor %d", tc.partitions, tc.rf), rt.ErrorCode, tc.want)
		if tc.want != protocol.None && (rt.NumPartitions != -1 || rt.ReplicationFactor != -1) {
			t.Errorf("%s: failed creation reports %d partitions, replication factor %d; want -1, -1", name, rt.NumPartitions, rt.ReplicationFactor)
		}
	}
}

func TestErrorMessageTooLarge(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.MessageMaxBytes = 8192 })
	w := dialWire(t, b)
	w.createTopic("small", 1, map[string]string{"max.message.bytes": "1024"})
	w.createTopic("brokerdefault", 1, nil)

	big := buildRecords(t, plainHeader(), []record.Record{{Value: make([]byte, 1500)}})
	rp := w.producePartition(-1, "small", 0, big)
	checkCode(t, fmt.Sprintf("%d-byte batch, max.message.bytes 1024", len(big)), rp.ErrorCode, protocol.MessageTooLarge)
	fits := buildRecords(t, plainHeader(), []record.Record{{Value: make([]byte, 900)}})
	rp = w.producePartition(-1, "small", 0, fits)
	checkCode(t, fmt.Sprintf("%d-byte batch, max.message.bytes 1024", len(fits)), rp.ErrorCode, protocol.None)

	// message.max.bytes is the default of max.message.bytes.
	huge := buildRecords(t, plainHeader(), []record.Record{{Value: make([]byte, 9000)}})
	rp = w.producePartition(-1, "brokerdefault", 0, huge)
	checkCode(t, fmt.Sprintf("%d-byte batch, message.max.bytes 8192", len(huge)), rp.ErrorCode, protocol.MessageTooLarge)
	rp = w.producePartition(-1, "brokerdefault", 0, big)
	checkCode(t, fmt.Sprintf("%d-byte batch, message.max.bytes 8192", len(big)), rp.ErrorCode, protocol.None)

	// The limit is inclusive and counts the whole batch, header included.
	exact := exactSizeBatch(t, 1024)
	rp = w.producePartition(-1, "small", 0, exact)
	checkCode(t, "a batch of exactly max.message.bytes", rp.ErrorCode, protocol.None)
	over := exactSizeBatch(t, 1025)
	rp = w.producePartition(-1, "small", 0, over)
	checkCode(t, "a batch one byte over max.message.bytes", rp.ErrorCode, protocol.MessageTooLarge)

	// The limit applies to the batch as sent (compressed).
	comp := buildRecords(t, record.BatchHeader{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: record.CodecZstd},
		[]record.Record{{Value: make([]byte, 20000)}})
	rp = w.producePartition(-1, "small", 0, comp)
	checkCode(t, fmt.Sprintf("%d-byte zstd batch of 20000 bytes, max.message.bytes 1024", len(comp)), rp.ErrorCode, protocol.None)

	if end := w.logEnd("small", 0); end != 3 {
		t.Errorf("log end %d after three accepted records, want 3", end)
	}
}

// exactSizeBatch builds a one-record batch of exactly size bytes.
func exactSizeBatch(t *testing.T, size int) []byte {
	t.Helper()
	n := size - 100
	for range 10 {
		b := buildRecords(t, plainHeader(), []record.Record{{Value: make([]byte, n)}})
		if len(b) == size {
			return b
		}
		n += size - len(b)
	}
	t.Fatalf("cannot build a batch of %d bytes", size)
	return nil
}

// A batch larger than segment.bytes (but within max.message.bytes) is
// Kafka's RecordBatchTooLargeException, RECORD_LIST_TOO_LARGE (18), not
// MESSAGE_TOO_LARGE: UnifiedLog.append checks "validRecords.sizeInBytes >
// config.segmentSize" after the max.message.bytes check.
func TestErrorRecordListTooLarge(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("segments", 1, map[string]string{"segment.bytes": "1048576", "max.message.bytes": "4000000"})
	batch := buildRecords(t, plainHeader(), []record.Record{{Value: make([]byte, 1536<<10)}})
	rp := w.producePartition(-1, "segments", 0, batch)
	checkCode(t, fmt.Sprintf("%d-byte batch, segment.bytes 1 MiB, max.message.bytes 4 MB", len(batch)), rp.ErrorCode, protocol.RecordListTooLarge)
	if end := w.logEnd("segments", 0); end != 0 {
		t.Errorf("log end %d after a refused batch, want 0", end)
	}
}

func TestErrorCorruptMessage(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("crc", 1, nil)
	good := buildBatch(t, plainHeader(), "value", 5)

	corrupt := func(what string, mutate func([]byte) []byte) {
		t.Helper()
		bad := mutate(append([]byte(nil), good...))
		rp := w.producePartition(-1, "crc", 0, bad)
		checkCode(t, what, rp.ErrorCode, protocol.CorruptMessage)
	}
	corrupt("a flipped byte in a record", func(b []byte) []byte { b[len(b)-3] ^= 0x40; return b })
	corrupt("a flipped bit in the attributes", func(b []byte) []byte { b[22] ^= 0x80; return b })
	corrupt("a flipped byte in the producer id", func(b []byte) []byte { b[45] ^= 0x01; return b })
	corrupt("a flipped byte in the CRC", func(b []byte) []byte { b[18] ^= 0xff; return b })
	corrupt("a batch cut short", func(b []byte) []byte { return b[:len(b)-4] })
	corrupt("a batch length below the header", func(b []byte) []byte { b[11] = 10; b[8], b[9], b[10] = 0, 0, 0; return b })

	// A compressed batch whose CRC is right but whose payload does not
	// decompress is also corrupt.
	comp := buildBatch(t, record.BatchHeader{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: record.CodecGzip}, "value", 5)
	rb := record.Batch(comp)
	for i := record.HeaderSize; i < len(comp); i++ {
		comp[i] = 0xa5
	}
	rb.UpdateCRC()
	rp := w.producePartition(-1, "crc", 0, comp)
	if rp.ErrorCode == 0 {
		t.Errorf("a gzip batch with garbage records was accepted at offset %d", rp.BaseOffset)
	}

	if end := w.logEnd("crc", 0); end != 0 {
		t.Errorf("log end %d after corrupt batches only, want 0", end)
	}
	rp = w.producePartition(-1, "crc", 0, good)
	checkCode(t, "the intact batch", rp.ErrorCode, protocol.None)
}

func TestErrorInvalidRequiredAcks(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("acks", 1, nil)
	for _, acks := range []int16{2, 3, -2, 100} {
		rp := w.producePartition(acks, "acks", 0, buildBatch(t, plainHeader(), "v", 1))
		checkCode(t, fmt.Sprintf("acks=%d", acks), rp.ErrorCode, protocol.InvalidRequiredAcks)
	}
	if end := w.logEnd("acks", 0); end != 0 {
		t.Errorf("log end %d after refused produces, want 0", end)
	}
	for _, acks := range []int16{1, -1} {
		rp := w.producePartition(acks, "acks", 0, buildBatch(t, plainHeader(), "v", 1))
		checkCode(t, fmt.Sprintf("acks=%d", acks), rp.ErrorCode, protocol.None)
	}
}

// The idempotent producer's checks. A retry of one of the producer's last
// five batches gets the original offsets and no error: Kafka's
// UnifiedLog.append finds it with ProducerStateManager's duplicate lookup
// and answers with the duplicate's first and last offset, appending
// nothing. DUPLICATE_SEQUENCE_NUMBER (46) is still in Kafka's error table,
// but no code path of a modern Kafka broker returns it for a produce
// (DuplicateSequenceException is never thrown; see franz-go #846), so a
// broker must not either: clients would see an error for a write that
// succeeded.
func TestErrorIdempotentSequence(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("idem", 1, nil)
	pid, epoch := w.initProducerID()

	produce := func(what string, e int16, seq int32, n int, want protocol.ErrorCode, wantOffset int64) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		rp := w.producePartition(-1, "idem", 0, buildBatch(t, idempotentHeader(pid, e, seq), fmt.Sprintf("e%d-s%d", e, seq), n))
		checkCode(t, what, rp.ErrorCode, want)
		if rp.BaseOffset != wantOffset {
			t.Errorf("%s: base offset %d, want %d", what, rp.BaseOffset, wantOffset)
		}
		return rp
	}
	produce("first batch, sequence 0-2", epoch, 0, 3, protocol.None, 0)
	produce("second batch, sequence 3-4", epoch, 3, 2, protocol.None, 3)
	produce("a gap: sequence 10 after 4", epoch, 10, 1, protocol.OutOfOrderSequenceNumber, -1)
	produce("sequence 4 again, one record", epoch, 4, 1, protocol.OutOfOrderSequenceNumber, -1)
	produce("sequence 3-5: overlaps the last batch", epoch, 3, 3, protocol.OutOfOrderSequenceNumber, -1)

	// Exact retries: the original offsets, nothing appended.
	produce("retry of the last batch", epoch, 3, 2, protocol.None, 3)
	produce("retry of the batch before", epoch, 0, 3, protocol.None, 0)
	if end := w.logEnd("idem", 0); end != 5 {
		t.Errorf("log end %d after retries, want 5", end)
	}
	produce("third batch, sequence 5", epoch, 5, 1, protocol.None, 5)

	// Only the last five batches are remembered: a retry of an older one
	// is out of order.
	for i := int32(0); i < 5; i++ {
		produce(fmt.Sprintf("filler batch %d", i), epoch, 6+i, 1, protocol.None, 6+int64(i))
	}
	produce("retry of a batch six batches back", epoch, 5, 1, protocol.OutOfOrderSequenceNumber, -1)
	produce("retry of the batch five batches back", epoch, 6, 1, protocol.None, 6)

	// A new epoch starts at sequence 0 and fences the old one.
	produce("new epoch starting at sequence 3", epoch+1, 3, 1, protocol.OutOfOrderSequenceNumber, -1)
	produce("new epoch at sequence 0", epoch+1, 0, 2, protocol.None, 11)
	produce("the stale epoch", epoch, 11, 1, protocol.InvalidProducerEpoch, -1)
	produce("a retry in the stale epoch", epoch, 10, 1, protocol.InvalidProducerEpoch, -1)
	produce("new epoch continues", epoch+1, 2, 1, protocol.None, 13)

	// Another producer id has its own sequence, from anywhere (a producer
	// whose state expired may go on from any sequence).
	pid2, _ := w.initProducerID()
	if pid2 == pid {
		t.Fatalf("InitProducerId returned producer id %d twice", pid)
	}
	rp := w.producePartition(-1, "idem", 0, buildBatch(t, idempotentHeader(pid2, 0, 42), "other", 1))
	checkCode(t, "a second producer id starting at sequence 42", rp.ErrorCode, protocol.None)

	// Every accepted record is stored once.
	if end := w.logEnd("idem", 0); end != 15 {
		t.Errorf("log end %d, want 15", end)
	}
}

// A duplicate's response carries the original batch's timestamp as its
// log append time, as Kafka's UnifiedLog.append sets it
// (appendInfo.setLogAppendTime(duplicate.timestamp)). On a LogAppendTime
// topic that is the time the batch was appended, which the producer
// reports as the record's timestamp.
func TestErrorDuplicateKeepsLogAppendTime(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("lat", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	pid, epoch := w.initProducerID()
	batch := buildBatch(t, idempotentHeader(pid, epoch, 0), "v", 2)
	first := w.producePartition(-1, "lat", 0, append([]byte(nil), batch...))
	checkCode(t, "first send", first.ErrorCode, protocol.None)
	if first.LogAppendTime <= 0 {
		t.Fatalf("first send: log append time %d on a LogAppendTime topic", first.LogAppendTime)
	}
	// Let the clock move on so a fresh append time would differ.
	waitFor(t, 5*time.Second, "clock tick", func() error {
		if time.Now().UnixMilli() <= first.LogAppendTime {
			return fmt.Errorf("still at %d", first.LogAppendTime)
		}
		return nil
	})
	retry := w.producePartition(-1, "lat", 0, batch)
	checkCode(t, "retry", retry.ErrorCode, protocol.None)
	if retry.BaseOffset != first.BaseOffset {
		t.Errorf("retry: base offset %d, want the original %d", retry.BaseOffset, first.BaseOffset)
	}
	if retry.LogAppendTime != first.LogAppendTime {
		t.Errorf("retry: log append time %d, want the original batch's %d", retry.LogAppendTime, first.LogAppendTime)
	}
}

func TestErrorInvalidRecord(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("inv", 1, nil)

	h := plainHeader()
	h.BaseOffset = 7
	rp := w.producePartition(-1, "inv", 0, buildBatch(t, h, "v", 2))
	checkCode(t, "a batch with base offset 7", rp.ErrorCode, protocol.InvalidRecord)

	two := append(buildBatch(t, plainHeader(), "a", 2), buildBatch(t, plainHeader(), "b", 2)...)
	rp = w.producePartition(-1, "inv", 0, two)
	checkCode(t, "two batches in one partition's records (v11)", rp.ErrorCode, protocol.InvalidRecord)
	rp = w.produceV(3, -1, "inv", 0, two)
	checkCode(t, "two batches in one partition's records (v3)", rp.ErrorCode, protocol.InvalidRecord)

	// Record count that does not match the offset range.
	bad := buildBatch(t, plainHeader(), "c", 3)
	rb := record.Batch(bad)
	bad[60]-- // record count 3 -> 2, last offset delta still 2
	rb.UpdateCRC()
	rp = w.producePartition(-1, "inv", 0, bad)
	checkCode(t, "record count 2 for offset deltas 0-2", rp.ErrorCode, protocol.InvalidRecord)

	// A control batch from a client.
	ch := plainHeader()
	ch.Control = true
	rp = w.producePartition(-1, "inv", 0, buildBatch(t, ch, "ctl", 1))
	checkCode(t, "a control batch", rp.ErrorCode, protocol.InvalidRecord)

	// Magic 1 is not a v2 batch (the magic byte is outside the CRC).
	old := buildBatch(t, plainHeader(), "m", 1)
	old[16] = 1
	rp = w.producePartition(-1, "inv", 0, old)
	checkCode(t, "a batch with magic 1 in produce v11", rp.ErrorCode, protocol.InvalidRecord)

	// v3+ needs exactly one batch: none is invalid too.
	rp = w.producePartition(-1, "inv", 0, []byte{})
	checkCode(t, "a partition with empty records", rp.ErrorCode, protocol.InvalidRecord)

	if end := w.logEnd("inv", 0); end != 0 {
		t.Errorf("log end %d after invalid batches only, want 0", end)
	}
}

// Kafka 4 advertises Produce v0-2 (librdkafka needs that, KAFKA-18659)
// and closes the connection on any request of those versions; other
// connections go on.
func TestErrorProduceOldVersions(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("old", 1, nil)
	if !b.apis.Supports(0, 0) {
		t.Fatal("produce v0 is not advertised")
	}
	for v := int16(0); v <= 2; v++ {
		for _, withData := range []bool{true, false} {
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(v)
			if withData {
				req = produceReq(v, -1, "old", 0, buildBatch(t, plainHeader(), "v", 1))
			}
			c := dialWire(t, b)
			if err := c.writeRaw(c.fmt.AppendRequest(nil, req, 7)); err != nil {
				t.Fatal(err)
			}
			if err := c.expectClosed(10 * time.Second); err != nil {
				t.Errorf("produce v%d (records %v): %v", v, withData, err)
			}
		}
	}
	if end := w.logEnd("old", 0); end != 0 {
		t.Errorf("log end %d after old-version produces, want 0", end)
	}
	// The connection is still good.
	rp := w.produceV(3, -1, "old", 0, buildBatch(t, plainHeader(), "v", 1))
	checkCode(t, "produce v3 afterwards", rp.ErrorCode, protocol.None)
}

func TestErrorFetchOffsetOutOfRange(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	id := w.createTopic("range", 1, nil)
	rp := w.producePartition(-1, "range", 0, buildBatch(t, plainHeader(), "v", 5))
	checkCode(t, "produce", rp.ErrorCode, protocol.None)

	for _, v := range []int16{4, 11, 12, 13, 16, 18} {
		for _, off := range []int64{6, 100, -1, -5} {
			_, fp := w.fetchPartition(v, "range", id, 0, off)
			checkCode(t, fmt.Sprintf("fetch v%d at offset %d of [0, 5)", v, off), fp.ErrorCode, protocol.OffsetOutOfRange)
			if len(fp.RecordBatches) != 0 {
				t.Errorf("fetch v%d at offset %d: %d bytes of records with an error", v, off, len(fp.RecordBatches))
			}
		}
		// At the end there is nothing yet, but no error.
		_, fp := w.fetchPartition(v, "range", id, 0, 5)
		checkCode(t, fmt.Sprintf("fetch v%d at the log end", v), fp.ErrorCode, protocol.None)
		if fp.HighWatermark != 5 || len(fp.RecordBatches) != 0 {
			t.Errorf("fetch v%d at the log end: high watermark %d, %d bytes; want 5, 0", v, fp.HighWatermark, len(fp.RecordBatches))
		}
		_, fp = w.fetchPartition(v, "range", id, 0, 2)
		checkCode(t, fmt.Sprintf("fetch v%d at offset 2", v), fp.ErrorCode, protocol.None)
		if len(fp.RecordBatches) == 0 {
			t.Errorf("fetch v%d at offset 2: no records", v)
		}
	}
}

func TestErrorUnknownTopicID(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	id := w.createTopic("byid", 1, nil)
	unknown := [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}

	resp, fp := w.fetchPartition(13, "", unknown, 0, 0)
	checkCode(t, "fetch v13 of an unknown topic id", fp.ErrorCode, protocol.UnknownTopicID)
	if resp.Topics[0].TopicID != unknown {
		t.Errorf("fetch v13: response names topic id %x, want %x", resp.Topics[0].TopicID, unknown)
	}
	_, fp = w.fetchPartition(13, "", id, 0, 0)
	checkCode(t, "fetch v13 of the topic's id", fp.ErrorCode, protocol.None)

	mt := w.metadataTopic(nil, unknown, false)
	checkCode(t, "metadata v12 of an unknown topic id", mt.ErrorCode, protocol.UnknownTopicID)
	// The Java client asks by id with an empty name, not a null one.
	empty := ""
	mt = w.metadataTopic(&empty, unknown, false)
	checkCode(t, "metadata v12 of an unknown topic id, empty name", mt.ErrorCode, protocol.UnknownTopicID)
	mt = w.metadataTopic(&empty, id, false)
	checkCode(t, "metadata v12 of the topic's id, empty name", mt.ErrorCode, protocol.None)
	if mt.Topic == nil || *mt.Topic != "byid" || len(mt.Partitions) != 1 {
		t.Errorf("metadata v12 by id with an empty name: topic %v, %d partitions; want byid, 1", mt.Topic, len(mt.Partitions))
	}

	// A topic with no name: before v12 (names only) the whole request is
	// invalid, as is one naming an id; from v12, with no id either, Kafka
	// fails it with UNKNOWN_SERVER_ERROR.
	for _, c := range []struct {
		v    int16
		id   [16]byte
		want protocol.ErrorCode
	}{{10, [16]byte{}, protocol.InvalidRequest}, {11, id, protocol.InvalidRequest}, {12, [16]byte{}, protocol.UnknownServerError}, {13, [16]byte{}, protocol.UnknownServerError}} {
		mreq := kmsg.NewPtrMetadataRequest()
		mreq.SetVersion(c.v)
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = c.id
		named := kmsg.NewMetadataRequestTopic()
		named.Topic = kmsg.StringPtr("byid")
		mreq.Topics = append(mreq.Topics, named, rt)
		mresp := w.mustRoundTrip(mreq).(*kmsg.MetadataResponse)
		if len(mresp.Topics) != 2 || len(mresp.Brokers) != 0 {
			t.Fatalf("metadata v%d with a nameless topic: %d topics, %d brokers; want 2, 0", c.v, len(mresp.Topics), len(mresp.Brokers))
		}
		for _, mt := range mresp.Topics {
			checkCode(t, fmt.Sprintf("metadata v%d with a nameless topic", c.v), mt.ErrorCode, c.want)
		}
	}

	req := produceReq(13, -1, "", 0, buildBatch(t, plainHeader(), "v", 1))
	req.Topics[0].TopicID = unknown
	presp := w.mustRoundTrip(req).(*kmsg.ProduceResponse)
	checkCode(t, "produce v13 to an unknown topic id", presp.Topics[0].Partitions[0].ErrorCode, protocol.UnknownTopicID)
	req = produceReq(13, -1, "", 0, buildBatch(t, plainHeader(), "v", 1))
	req.Topics[0].TopicID = id
	presp = w.mustRoundTrip(req).(*kmsg.ProduceResponse)
	checkCode(t, "produce v13 to the topic's id", presp.Topics[0].Partitions[0].ErrorCode, protocol.None)
}

// ListOffsets' special timestamps and searches by time.
func TestListOffsetsValues(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("times", 3, nil)

	// Three batches: offsets 0-2 at t0..t0+2; 3-4 at t0+100, t0+50;
	// 5-6 at t0+20, t0+30. The largest timestamp is at offset 3.
	t0 := time.Now().Add(-time.Minute).UnixMilli()
	send := func(ts ...int64) {
		recs := make([]record.Record, len(ts))
		for i, x := range ts {
			recs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: x - ts[0], Value: []byte("v")}
		}
		h := plainHeader()
		h.BaseTimestamp = ts[0]
		rp := w.producePartition(-1, "times", 0, buildRecords(t, h, recs))
		checkCode(t, "produce", rp.ErrorCode, protocol.None)
	}
	send(t0, t0+1, t0+2)
	send(t0+100, t0+50)
	send(t0+20, t0+30)

	type want struct{ offset, ts int64 }
	for _, tc := range []struct {
		what  string
		v     int16
		ts    int64
		want  want
		epoch bool
	}{
		{"latest", 8, -1, want{7, -1}, true},
		{"earliest", 8, -2, want{0, -1}, true},
		{"latest v1", 1, -1, want{7, -1}, false},
		{"earliest v1", 1, -2, want{0, -1}, false},
		{"max timestamp", 8, -3, want{3, t0 + 100}, true},
		{"earliest local", 8, -4, want{0, -1}, true},
		{"latest tiered (nothing is tiered)", 9, -5, want{-1, -1}, false},
		{"timestamp t0", 8, t0, want{0, t0}, true},
		{"timestamp t0+1", 8, t0 + 1, want{1, t0 + 1}, true},
		{"timestamp t0+1 v1", 1, t0 + 1, want{1, t0 + 1}, false},
		{"timestamp before everything", 8, t0 - 1000, want{0, t0}, true},
		{"timestamp t0+3: first record at or after it in offset order", 8, t0 + 3, want{3, t0 + 100}, true},
		{"timestamp t0+25", 8, t0 + 25, want{3, t0 + 100}, true},
		{"timestamp t0+100", 8, t0 + 100, want{3, t0 + 100}, true},
		{"timestamp after everything", 8, t0 + 101, want{-1, -1}, false},
	} {
		p := w.listOffset(tc.v, "times", 0, tc.ts)
		checkCode(t, tc.what, p.ErrorCode, protocol.None)
		if p.Offset != tc.want.offset || p.Timestamp != tc.want.ts {
			t.Errorf("%s: offset %d timestamp %d, want offset %d timestamp %d", tc.what, p.Offset, p.Timestamp, tc.want.offset, tc.want.ts)
		}
		switch {
		case tc.v < 4 && p.LeaderEpoch != -1:
			t.Errorf("%s: leader epoch %d in a v%d response", tc.what, p.LeaderEpoch, tc.v)
		case tc.epoch && tc.v >= 4 && p.LeaderEpoch < 0:
			t.Errorf("%s: no leader epoch", tc.what)
		}
	}

	// Two records share the largest timestamp: the earliest offset holding
	// it (Kafka since KAFKA-16310; before, the batch's last offset).
	h := plainHeader()
	h.BaseTimestamp = t0
	rp := w.producePartition(-1, "times", 2, buildRecords(t, h, []record.Record{
		{OffsetDelta: 0, TimestampDelta: 0, Value: []byte("a")},
		{OffsetDelta: 1, TimestampDelta: 9, Value: []byte("b")},
		{OffsetDelta: 2, TimestampDelta: 9, Value: []byte("c")},
		{OffsetDelta: 3, TimestampDelta: 1, Value: []byte("d")},
	}))
	checkCode(t, "produce", rp.ErrorCode, protocol.None)
	if p := w.listOffset(8, "times", 2, -3); p.Offset != 1 || p.Timestamp != t0+9 {
		t.Errorf("max timestamp with a tie: offset %d timestamp %d, want offset 1 timestamp %d", p.Offset, p.Timestamp, t0+9)
	}

	// The empty partition.
	for _, tc := range []struct {
		ts   int64
		want int64
	}{{-1, 0}, {-2, 0}, {-3, -1}, {t0, -1}} {
		p := w.listOffset(8, "times", 1, tc.ts)
		checkCode(t, fmt.Sprintf("empty partition, timestamp %d", tc.ts), p.ErrorCode, protocol.None)
		if p.Offset != tc.want {
			t.Errorf("empty partition, timestamp %d: offset %d, want %d", tc.ts, p.Offset, tc.want)
		}
	}
}

// acks=0 gets no response; when it fails, the broker closes the
// connection (as Kafka does), which is the only way the client learns of
// it and refreshes its metadata.
func TestErrorAcksZero(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("fire", 1, nil)

	w.corr++
	if err := w.writeRaw(w.fmt.AppendRequest(nil, produceReq(11, 0, "fire", 0, buildBatch(t, plainHeader(), "v", 3)), w.corr)); err != nil {
		t.Fatal(err)
	}
	// The next response on the connection is the next request's. Nobody
	// waits for an acks=0 append's fsync, so the records become visible
	// (the high watermark passes them) once the background flush is done.
	waitFor(t, 10*time.Second, "acks=0 records visible", func() error {
		if end := w.logEnd("fire", 0); end != 3 {
			return fmt.Errorf("log end %d after an acks=0 produce of 3 records, want 3", end)
		}
		return nil
	})

	w.corr++
	if err := w.writeRaw(w.fmt.AppendRequest(nil, produceReq(11, 0, "nope", 0, buildBatch(t, plainHeader(), "v", 1)), w.corr)); err != nil {
		t.Fatal(err)
	}
	if err := w.expectClosed(10 * time.Second); err != nil {
		t.Errorf("failed acks=0 produce: %v", err)
	}
	w2 := dialWire(t, b)
	if end := w2.logEnd("fire", 0); end != 3 {
		t.Errorf("log end %d, want 3", end)
	}
}

// Kafka's ProduceRequest.validateRecords refuses zstd batches in Produce
// v3-v6 (zstd came with v7, KIP-110): "Produce requests with version N
// are not allowed to use ZStandard compression",
// UNSUPPORTED_COMPRESSION_TYPE (76).
func TestErrorZstdBeforeProduceV7(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	w.createTopic("zstd", 1, nil)
	zh := plainHeader()
	zh.Codec = record.CodecZstd
	for v := int16(3); v <= 6; v++ {
		rp := w.produceV(v, -1, "zstd", 0, buildBatch(t, zh, "z", 3))
		checkCode(t, fmt.Sprintf("a zstd batch in produce v%d", v), rp.ErrorCode, protocol.UnsupportedCompressionType)
		// Other codecs are fine there.
		lh := plainHeader()
		lh.Codec = record.CodecLZ4
		rp = w.produceV(v, -1, "zstd", 0, buildBatch(t, lh, "l", 1))
		checkCode(t, fmt.Sprintf("an lz4 batch in produce v%d", v), rp.ErrorCode, protocol.None)
	}
	rp := w.produceV(7, -1, "zstd", 0, buildBatch(t, zh, "z", 3))
	checkCode(t, "a zstd batch in produce v7", rp.ErrorCode, protocol.None)
	if end := w.logEnd("zstd", 0); end != 7 {
		t.Errorf("log end %d, want 7 (4 lz4 records and one zstd batch of 3)", end)
	}
}

// acks=all needs min.insync.replicas in sync, capped at the replica count
// as Kafka caps it (measured on Kafka 4.4: min.insync.replicas 2 on a
// topic of one replica takes acks=all); acks=1 does not.
func TestErrorNotEnoughReplicas(t *testing.T) {
	t.Parallel()
	bs := startCluster(t, 2)
	w := dialWire(t, bs[0])
	capped := w.createTopicResultAssigned("capped", [][]int32{{1}}, map[string]string{"min.insync.replicas": "2"})
	checkCode(t, "create capped", capped.ErrorCode, protocol.None)
	rp := w.producePartition(-1, "capped", 0, buildBatch(t, plainHeader(), "v", 1))
	checkCode(t, "acks=all, one replica, min.insync.replicas 2", rp.ErrorCode, protocol.None)

	create := w.createTopicResultAssigned("isr", [][]int32{{1, 2}}, map[string]string{"min.insync.replicas": "2"})
	checkCode(t, "create isr", create.ErrorCode, protocol.None)
	if err := bs[1].Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "broker 2 out of the ISR", func() error {
		p := bs[0].parts.Load().byName["isr"]
		if len(p) != 1 || p[0] == nil || len(p[0].isr()) != 1 {
			return fmt.Errorf("partitions %v", p)
		}
		return nil
	})
	rp = w.producePartition(-1, "isr", 0, buildBatch(t, plainHeader(), "v", 1))
	checkCode(t, "acks=all with 1 of min.insync.replicas 2 in sync", rp.ErrorCode, protocol.NotEnoughReplicas)
	rp = w.producePartition(1, "isr", 0, buildBatch(t, plainHeader(), "v", 1))
	checkCode(t, "acks=1 with 1 of min.insync.replicas 2 in sync", rp.ErrorCode, protocol.None)
	if end := w.logEnd("isr", 0); end != 1 {
		t.Errorf("log end %d, want 1", end)
	}
}
