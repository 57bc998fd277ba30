package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// logCollector exports, at each scrape, the size and offsets of every
// partition log this broker holds. It reads the logs' atomic accessors
// then, so appends pay nothing for these metrics.
type logCollector struct {
	b                                  *Broker
	size, segments, start, end, hwDesc *prometheus.Desc
	dirOffline, partsOffline, strays   *prometheus.Desc
}

func newLogCollector(b *Broker) *logCollector {
	labels := []string{"topic", "partition"}
	return &logCollector{
		b: b,
		size: prometheus.NewDesc("gregor_log_size_bytes",
			"Total size of a partition log's segment files.", labels, nil),
		segments: prometheus.NewDesc("gregor_log_segments",
			"Segments of a partition log.", labels, nil),
		start: prometheus.NewDesc("gregor_log_start_offset",
			"First offset a partition log holds.", labels, nil),
		end: prometheus.NewDesc("gregor_log_end_offset",
			"Offset the next record appended to a partition log gets.", labels, nil),
		hwDesc: prometheus.NewDesc("gregor_log_high_watermark",
			"High watermark of a partition log: consumers read below it.", labels, nil),
		dirOffline: prometheus.NewDesc("gregor_log_dir_offline",
			"1 when a log dir failed (an I/O error took it offline until the next start), 0 while it is online.",
			[]string{"dir"}, nil),
		partsOffline: prometheus.NewDesc("gregor_partitions_offline",
			"Partitions this broker holds in a log dir that failed.", nil, nil),
		strays: prometheus.NewDesc("gregor_log_strays",
			"Stray partition dirs in the log dirs: logs the metadata did not know at start-up, kept (renamed *-stray) until an operator removes them.",
			nil, nil),
	}
}

func (lc *logCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lc.size
	ch <- lc.segments
	ch <- lc.start
	ch <- lc.end
	ch <- lc.hwDesc
	ch <- lc.dirOffline
	ch <- lc.partsOffline
	ch <- lc.strays
}

func (lc *logCollector) Collect(ch chan<- prometheus.Metric) {
	// ready is set after the logs are open (and orders the read of
	// b.logs after its write).
	if lc.b.ready.Load() {
		for _, d := range lc.b.cfg.LogDirs {
			v := 0.0
			if lc.b.logs.DirError(d) != nil {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(lc.dirOffline, prometheus.GaugeValue, v, d)
		}
		ch <- prometheus.MustNewConstMetric(lc.strays, prometheus.GaugeValue, float64(len(lc.b.logs.Strays())))
	}
	t := lc.b.parts.Load()
	if t == nil {
		return
	}
	offline := 0
	defer func() {
		ch <- prometheus.MustNewConstMetric(lc.partsOffline, prometheus.GaugeValue, float64(offline))
	}()
	for name, ps := range t.byName {
		for _, p := range ps {
			if p == nil {
				continue
			}
			l := p.log
			if l.Err() != nil {
				offline++
			}
			part := strconv.Itoa(int(p.tp.Partition))
			ch <- prometheus.MustNewConstMetric(lc.size, prometheus.GaugeValue, float64(l.Size()), name, part)
			ch <- prometheus.MustNewConstMetric(lc.segments, prometheus.GaugeValue, float64(l.SegmentCount()), name, part)
			ch <- prometheus.MustNewConstMetric(lc.start, prometheus.GaugeValue, float64(l.LogStartOffset()), name, part)
			ch <- prometheus.MustNewConstMetric(lc.end, prometheus.GaugeValue, float64(l.LogEndOffset()), name, part)
			ch <- prometheus.MustNewConstMetric(lc.hwDesc, prometheus.GaugeValue, float64(l.HighWatermark()), name, part)
		}
	}
}
