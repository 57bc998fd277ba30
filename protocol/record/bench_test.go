package record

import (
	"fmt"
	"testing"
)

// benchRecords returns 16 records of 1 KiB of text-like values: 16 KiB of
// records, a typical producer batch.
func benchRecords() []Record {
	recs := make([]Record, 16)
	for i := range recs {
		recs[i] = Record{
			OffsetDelta:    int32(i),
			TimestampDelta: int64(i),
			Key:            fmt.Appendf(nil, "key-%04d", i),
			Value:          testPayload(1024, uint64(i)),
		}
	}
	return recs
}

// benchRaw is the uncompressed records section of benchRecords.
func benchRaw() []byte {
	var raw []byte
	recs := benchRecords()
	for i := range recs {
		raw = AppendRecord(raw, &recs[i])
	}
	return raw
}

func benchBatch(b *testing.B, c Codec) Batch {
	out, err := Build(nil, BatchHeader{Codec: c, BaseTimestamp: 1700000000000, ProducerID: -1, BaseSequence: -1}, benchRecords())
	if err != nil {
		b.Fatal(err)
	}
	return Batch(out)
}

// BenchmarkValidateHeader is the check on every produced batch: lengths,
// magic, CRC-32C over the whole batch, header fields. MB/s is of batch bytes.
func BenchmarkValidateHeader(b *testing.B) {
	batch := benchBatch(b, CodecNone)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if err := ValidateHeader(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateRecords walks every record as well, decompressing first.
// MB/s is of uncompressed record bytes, the same for every codec.
func BenchmarkValidateRecords(b *testing.B) {
	raw := len(benchRaw())
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			batch := benchBatch(b, c)
			scratch := make([]byte, 0, 2*raw)
			opts := ValidateOptions{Records: true, RequireKeys: true, Scratch: &scratch}
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Validate(batch, opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(batch)), "batch-bytes")
		})
	}
}

// BenchmarkValidateSmallRecords walks a batch of 1,000 keyless 100-byte
// records, the shape where per-record decoding, not bytes, is the cost.
// MB/s is of record bytes.
func BenchmarkValidateSmallRecords(b *testing.B) {
	recs := make([]Record, 1000)
	for i := range recs {
		recs[i] = Record{OffsetDelta: int32(i), TimestampDelta: int64(i / 100), Value: testPayload(100, uint64(i))}
	}
	out, err := Build(nil, BatchHeader{BaseTimestamp: 1700000000000, ProducerID: -1, BaseSequence: -1}, recs)
	if err != nil {
		b.Fatal(err)
	}
	batch := Batch(out)
	b.SetBytes(int64(len(batch.Records())))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Validate(batch, ValidateOptions{Records: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
}

// BenchmarkCompress compresses 16 KiB of 1 KiB records. MB/s is of input.
func BenchmarkCompress(b *testing.B) {
	raw := benchRaw()
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			dst := make([]byte, 0, 2*len(raw))
			var out []byte
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if out, err = Compress(dst[:0], c, raw); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(out))/float64(len(raw)), "ratio")
		})
	}
}

// BenchmarkDecompress decompresses the same. MB/s is of output.
func BenchmarkDecompress(b *testing.B) {
	raw := benchRaw()
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			comp, err := Compress(nil, c, raw)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, 2*len(raw))
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decompress(dst[:0], c, comp, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecompressXerialLarge decodes 16 MiB of snappy in 512 xerial
// blocks: the output must grow geometrically, not block by block.
func BenchmarkDecompressXerialLarge(b *testing.B) {
	src := testPayload(16<<20, 7)
	comp, err := Compress(nil, CodecSnappy, src)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Decompress(nil, CodecSnappy, comp, len(src)); err != nil {
			b.Fatal(err)
		}
	}
}
