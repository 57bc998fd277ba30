package quota

import "time"

// sample is one window of a Rate.
type sample struct {
	startMs, lastMs int64
	events          int64
	value           float64
}

func (s *sample) reset(nowMs int64) { *s = sample{startMs: nowMs, lastMs: nowMs} }

// Rate measures a rate as Kafka's Rate over a WindowedSum: samples of
// windowMs each (samples+1 kept, one overlapping the start of the measured
// span), a sample nothing was recorded in for samples windows reset, and
// the span counted as at least samples-1 whole windows, so that a first
// burst is not measured over a few milliseconds. It has no clock: the
// caller passes the time, in milliseconds. MeasureSimple measures the same
// samples as Kafka's SimpleRate (a span of at least one window), which the
// replication throttles use.
type Rate struct {
	samples  int
	windowMs int64
	list     []sample
	current  int
}

// NewRate returns a rate measured over samples windows of window each.
func NewRate(samples int, window time.Duration) Rate {
	return Rate{samples: samples, windowMs: window.Milliseconds(), list: make([]sample, 0, samples+1)}
}

// Record adds v at nowMs.
func (r *Rate) Record(v float64, nowMs int64) {
	if len(r.list) == 0 {
		r.list = append(r.list, sample{startMs: nowMs, lastMs: nowMs})
	}
	s := &r.list[r.current]
	if nowMs-s.startMs >= r.windowMs {
		r.current = (r.current + 1) % (r.samples + 1)
		if r.current >= len(r.list) {
			r.list = append(r.list, sample{})
		}
		s = &r.list[r.current]
		s.reset(nowMs)
	}
	s.value += v
	s.events++
	s.lastMs = nowMs
}

// Measure returns the rate at nowMs, per second, and the span it is
// measured over: at least samples-1 whole windows, as Kafka's Rate.
func (r *Rate) Measure(nowMs int64) (float64, time.Duration) {
	total, span := r.sum(nowMs)
	if full, least := span/r.windowMs, int64(r.samples-1); full < least {
		span += (least - full) * r.windowMs
	}
	span = max(span, 1)
	return total / (float64(span) / 1000), time.Duration(span) * time.Millisecond
}

// MeasureSimple returns the rate at nowMs, per second, over the time since
// the oldest sample began and at least one window, as Kafka's SimpleRate
// (the replication throttles').
func (r *Rate) MeasureSimple(nowMs int64) float64 {
	total, span := r.sum(nowMs)
	return total / (float64(max(span, r.windowMs)) / 1000)
}

// sum resets the samples nothing was recorded in for the whole measured
// span and returns the total of the others and the time since the oldest
// began.
func (r *Rate) sum(nowMs int64) (total float64, spanMs int64) {
	expire := int64(r.samples) * r.windowMs
	if len(r.list) == 0 {
		r.list = append(r.list, sample{startMs: nowMs, lastMs: nowMs})
	}
	oldest := nowMs
	for i := range r.list {
		s := &r.list[i]
		if nowMs-s.lastMs >= expire {
			s.reset(nowMs)
		}
		total += s.value
		oldest = min(oldest, s.startMs)
	}
	return total, nowMs - oldest
}
