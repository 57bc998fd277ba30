package txn

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestInitProducerIDValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *kmsg.InitProducerIDRequest
		want int16
	}{
		{"empty id", initReq(4, strp(""), 1000, -1, -1), errInvalidRequest},
		{"zero timeout", initReq(4, strp("a"), 0, -1, -1), errInvalidTransactionTimeout},
		{"negative timeout", initReq(4, strp("a"), -5, -1, -1), errInvalidTransactionTimeout},
		{"timeout above max", initReq(4, strp("a"), 900001, -1, -1), errInvalidTransactionTimeout},
		{"id without epoch", initReq(4, strp("a"), 1000, 5, -1), errInvalidRequest},
		{"epoch without id", initReq(4, strp("a"), 1000, -1, 3), errInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tok := h.send(tc.req)
			r := response[*kmsg.InitProducerIDResponse](h, tok)
			wantCode(t, tc.name, r.ErrorCode, tc.want)
			if r.ProducerID != -1 || r.ProducerEpoch != -1 {
				t.Fatalf("an error carries producer id -1 and epoch -1, got %d/%d", r.ProducerID, r.ProducerEpoch)
			}
			if len(h.records) != 0 || len(h.c.txns) != 0 {
				t.Fatal("a refused InitProducerId changes nothing")
			}
		})
	}
}

func TestInitProducerIDIdempotent(t *testing.T) {
	h := newHarness(t)
	r := response[*kmsg.InitProducerIDResponse](h, h.send(initReq(4, nil, 0, -1, -1)))
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("idempotent producer: %+v", r)
	}
	if len(h.records) != 0 {
		t.Fatal("an idempotent producer id is not recorded")
	}
	h.ids.empty = true
	r = response[*kmsg.InitProducerIDResponse](h, h.send(initReq(4, nil, 0, -1, -1)))
	wantCode(t, "no producer id at hand", r.ErrorCode, errCoordinatorLoadInProgress)
	r = response[*kmsg.InitProducerIDResponse](h, h.send(initReq(4, strp("new"), 1000, -1, -1)))
	wantCode(t, "no producer id at hand for a new transactional id", r.ErrorCode, errCoordinatorLoadInProgress)
}

func TestInitProducerIDBumpsEpoch(t *testing.T) {
	h := newHarness(t)
	p := h.producerV0("a")
	p.mustInit()
	if p.pid != 1000 || p.epoch != 0 {
		t.Fatalf("first init: %d/%d", p.pid, p.epoch)
	}
	p.mustInit()
	if p.pid != 1000 || p.epoch != 1 {
		t.Fatalf("second init: %d/%d", p.pid, p.epoch)
	}
	if got := h.state("a"); got.state != StateEmpty || got.timeoutMs != 60000 {
		t.Fatalf("state after init: %+v", got)
	}
	if len(h.records) != 2 {
		t.Fatalf("each init writes a record: %d", len(h.records))
	}
}

func TestInitProducerIDEpochExhausted(t *testing.T) {
	h := newHarness(t)
	p := h.producerV0("a")
	p.mustInit()
	h.c.txns["a"].epoch = math.MaxInt16 - 2
	p.mustInit()
	if p.pid != 1000 || p.epoch != math.MaxInt16-1 {
		t.Fatalf("bump to the last epoch: %d/%d", p.pid, p.epoch)
	}
	p.mustInit()
	if p.pid != 1001 || p.epoch != 0 {
		t.Fatalf("an exhausted epoch rotates the producer id: %d/%d", p.pid, p.epoch)
	}
	if got := h.state("a"); got.prevProducerID != 1000 {
		t.Fatalf("previous producer id: %d", got.prevProducerID)
	}
}

// TestInitProducerIDRecovery is KIP-360: a producer that gives its id and
// epoch gets the next epoch, a retry of that gets the same again, and a
// producer whose epoch was taken by another is fenced.
func TestInitProducerIDRecovery(t *testing.T) {
	h := newHarness(t)
	p := h.producerV2("a")
	p.mustInit() // 1000/0
	p.mustInit() // recovering: 1000/1, last epoch 0
	if p.epoch != 1 || h.state("a").lastEpoch != 0 {
		t.Fatalf("recovery bump: epoch %d, last %d", p.epoch, h.state("a").lastEpoch)
	}
	// The answer was lost: the retry gives epoch 0 again.
	r := response[*kmsg.InitProducerIDResponse](h, h.send(initReq(5, strp("a"), 60000, 1000, 0)))
	if r.ErrorCode != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("retry of a recovery: %+v", r)
	}
	// A new producer without id and epoch takes over; the old one, at
	// epoch 1, is fenced.
	r = response[*kmsg.InitProducerIDResponse](h, h.send(initReq(5, strp("a"), 60000, -1, -1)))
	if r.ErrorCode != 0 || r.ProducerEpoch != 2 {
		t.Fatalf("new producer: %+v", r)
	}
	r = response[*kmsg.InitProducerIDResponse](h, h.send(initReq(5, strp("a"), 60000, 1000, 0)))
	wantCode(t, "stale epoch", r.ErrorCode, errProducerFenced)
	r = response[*kmsg.InitProducerIDResponse](h, h.send(initReq(3, strp("a"), 60000, 1000, 0)))
	wantCode(t, "stale epoch, v3", r.ErrorCode, errInvalidProducerEpoch)
	r = response[*kmsg.InitProducerIDResponse](h, h.send(initReq(5, strp("a"), 60000, 77, 2)))
	wantCode(t, "other producer id", r.ErrorCode, errProducerFenced)
	// A producer id the coordinator does not know (the id expired) gets
	// a new one.
	r = response[*kmsg.InitProducerIDResponse](h, h.send(initReq(5, strp("gone"), 60000, 555, 3)))
	if r.ErrorCode != 0 || r.ProducerID != 1001 || r.ProducerEpoch != 0 {
		t.Fatalf("unknown id recovering: %+v", r)
	}
}

// TestInitProducerIDRotationRetry: the answer to an InitProducerId that
// rotated the producer id was lost; the retry with the old id at its
// exhausted epoch gets the new id.
func TestInitProducerIDRotationRetry(t *testing.T) {
	h := newHarness(t)
	p := h.producerV2("a")
	p.mustInit()
	h.c.txns["a"].epoch = math.MaxInt16 - 1
	p.epoch = math.MaxInt16 - 1
	p.mustInit()
	if p.pid != 1001 || p.epoch != 0 {
		t.Fatalf("rotation: %d/%d", p.pid, p.epoch)
	}
	r := response[*kmsg.InitProducerIDResponse](h, h.send(initReq(5, strp("a"), 60000, 1000, math.MaxInt16-1)))
	if r.ErrorCode != 0 || r.ProducerID != 1001 || r.ProducerEpoch != 0 {
		t.Fatalf("retry of the rotation: %+v", r)
	}
}
