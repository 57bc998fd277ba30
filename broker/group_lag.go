package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gregor-io/gregor/coordinator/group"
	"github.com/gregor-io/gregor/protocol"
)

// groupLagCollector exports, at each scrape, every committed offset of the
// groups this broker coordinates and its lag: the partition's high
// watermark minus the committed offset (only for partitions this broker
// holds; their high watermark is local). The offsets are read by each
// coordinator's driver, which owns the coordinator.
type groupLagCollector struct {
	b         *Broker
	committed *prometheus.Desc
	lag       *prometheus.Desc
}

func newGroupLagCollector(b *Broker) *groupLagCollector {
	labels := []string{"group", "topic", "partition"}
	return &groupLagCollector{
		b: b,
		committed: prometheus.NewDesc("gregor_consumer_group_committed_offset",
			"Committed offset of a consumer group on a partition.", labels, nil),
		lag: prometheus.NewDesc("gregor_consumer_group_lag",
			"Records between a consumer group's committed offset and the partition's high watermark.", labels, nil),
	}
}

func (gc *groupLagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- gc.committed
	ch <- gc.lag
}

type committedOffset struct {
	group, topic string
	partition    int32
	offset       int64
}

func (gc *groupLagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, d := range gc.b.groups.all() {
		done := make(chan []committedOffset, 1)
		req := groupRequest{inspect: func(c *group.Coordinator) {
			var out []committedOffset
			c.RangeOffsets(func(g, t string, p int32, off int64) bool {
				out = append(out, committedOffset{g, t, p, off})
				return true
			})
			done <- out
		}}
		select {
		case d.reqs <- req:
		case <-ctx.Done():
			return
		}
		var offsets []committedOffset
		select {
		case offsets = <-done:
		case <-d.done:
			continue
		case <-ctx.Done():
			return
		}
		for _, o := range offsets {
			p := strconv.Itoa(int(o.partition))
			ch <- prometheus.MustNewConstMetric(gc.committed, prometheus.GaugeValue, float64(o.offset), o.group, o.topic, p)
			if part, code := gc.b.lookupPartition(o.topic, [16]byte{}, false, o.partition); code == protocol.None && o.offset >= 0 {
				lag := max(part.log().HighWatermark()-o.offset, 0)
				ch <- prometheus.MustNewConstMetric(gc.lag, prometheus.GaugeValue, float64(lag), o.group, o.topic, p)
			}
		}
	}
}
