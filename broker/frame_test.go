package broker

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

// TestFetchZeroCopy fetches three partitions (one of them empty) over TCP at
// every Fetch version, so the records go out with sendfile, and checks that
// each partition's records are byte for byte what the log holds, and that
// the frame around them decodes (its size and length prefixes rewritten).
func TestFetchZeroCopy(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	id := w.createTopic("zc", 3, nil)
	for p := range int32(2) {
		for i := range 5 {
			rp := w.producePartition(-1, "zc", p, buildBatch(t, plainHeader(), fmt.Sprintf("p%d-%d", p, i), 10+i))
			checkCode(t, "produce", rp.ErrorCode, protocol.None)
		}
	}
	want := map[int32][]byte{}
	for p := range int32(3) {
		part, code := b.lookupPartition("zc", id, false, p)
		if code != protocol.None {
			t.Fatalf("partition %d: %v", p, code)
		}
		rr, err := part.log().Read(storage.ReadOptions{Offset: 0, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		want[p], err = rr.AppendTo(nil)
		rr.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	for v := int16(4); v <= 18; v++ {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		req.ReplicaID, req.ReplicaState.ID = -1, -1
		req.MaxBytes, req.SessionEpoch = 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "zc", id
		for p := range int32(3) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := w.mustRoundTrip(req).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
			t.Fatalf("v%d: response with %d topics", v, len(resp.Topics))
		}
		for _, rp := range resp.Topics[0].Partitions {
			if rp.ErrorCode != 0 || !bytes.Equal(rp.RecordBatches, want[rp.Partition]) {
				t.Errorf("v%d partition %d: error %d, %d record bytes, want %d identical to the log's",
					v, rp.Partition, rp.ErrorCode, len(rp.RecordBatches), len(want[rp.Partition]))
			}
			if rp.HighWatermark != map[int32]int64{0: 60, 1: 60, 2: 0}[rp.Partition] {
				t.Errorf("v%d partition %d: high watermark %d", v, rp.Partition, rp.HighWatermark)
			}
		}
	}
}

// TestFetchFrame builds the frame of a two-partition fetch response at
// every version both ways, with the records left in the file and with the
// fallback that copies them, and compares each with kmsg's encoding of the
// response holding the records.
func TestFetchFrame(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	w := dialWire(t, b)
	// Nine partitions: the markers' buffer grows twice on the way.
	const parts = 9
	id := w.createTopic("fb", parts, nil)
	for p := range int32(parts) {
		rp := w.producePartition(-1, "fb", p, buildBatch(t, plainHeader(), "fb", 5+int(p)))
		checkCode(t, "produce", rp.ErrorCode, protocol.None)
	}
	read := func(p int32) storage.ReadResult {
		part, _ := b.lookupPartition("fb", id, false, p)
		rr, err := part.log().Read(storage.ReadOptions{Offset: 0, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return rr
	}
	for v := int16(4); v <= 18; v++ {
		hdr := protocol.RequestHeader{APIKey: 1, APIVersion: v, CorrelationID: 7}
		build := func() (*fetchResponse, []byte) {
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(v)
			ft := kmsg.NewFetchResponseTopic()
			ft.Topic, ft.TopicID = "fb", id
			zc := newFetchResponse(resp)
			plain := kmsg.NewPtrFetchResponse()
			plain.SetVersion(v)
			pt := ft
			for p := range int32(parts) {
				fp := kmsg.NewFetchResponseTopicPartition()
				fp.Partition, fp.HighWatermark = p, 5+int64(p)
				rr := read(p)
				recs, err := rr.AppendTo(nil)
				if err != nil {
					t.Fatal(err)
				}
				plainP := fp
				plainP.RecordBatches = recs
				pt.Partitions = append(pt.Partitions, plainP)
				fp.RecordBatches = zc.add(rr)
				ft.Partitions = append(ft.Partitions, fp)
			}
			resp.Topics = append(resp.Topics, ft)
			plain.Topics = append(plain.Topics, pt)
			return zc, encodeResponse(hdr, plain)
		}
		zc, want := build()
		f := encodeFetchFrame(hdr, zc)
		// The head, then each partition's prefix, file slice and the bytes
		// up to the next (or the tail).
		if len(f.pieces) != 3*parts+1 {
			t.Errorf("v%d: frame of %d pieces, want %d", v, len(f.pieces), 3*parts+1)
		}
		got, err := f.bytes()
		f.release()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("v%d: zero-copy frame differs from the copied encoding (%v)", v, err)
		}
		zc, want = build()
		held := &outFrame{reads: zc.reads}
		zc.reads = nil
		got, err = copyFetchFrame(hdr, zc, held).bytes()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("v%d: fallback frame differs from the copied encoding (%v)", v, err)
		}
	}
}
