package broker

import (
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
)

// logCollector exports, at each scrape, the size and offsets of every
// partition log this broker holds. It reads the logs' atomic accessors
// then, so appends pay nothing for these metrics.
type logCollector struct {
	b                                  *Broker
	size, segments, start, end, hwDesc *prometheus.Desc
	lsoLag                             *prometheus.Desc
	dirOffline, partsOffline, strays   *prometheus.Desc
	// The size and free space of each log dir's file system, as
	// DescribeLogDirs reports them (TotalBytes, UsableBytes), for the
	// alert that a disk is filling up before it takes a dir offline.
	dirTotal, dirUsable *prometheus.Desc

	// Replication: counts over the partitions this broker leads, the lag
	// of each of their followers, and the cluster's leaderless partitions
	// as this broker's metadata shows them.
	leaders, underReplicated, underMinISR, followerLag, clusterOffline *prometheus.Desc
	reassigning                                                        *prometheus.Desc
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
		lsoLag: prometheus.NewDesc("gregor_log_last_stable_offset_lag",
			"Records between a partition log's last stable offset and its high watermark: held back from read_committed consumers by open transactions (or markers not yet replicated).", labels, nil),
		dirOffline: prometheus.NewDesc("gregor_log_dir_offline",
			"1 when a log dir failed (an I/O error took it offline until the next start), 0 while it is online.",
			[]string{"dir"}, nil),
		dirTotal: prometheus.NewDesc("gregor_log_dir_total_bytes",
			"Size of the file system a log dir is on (statfs, read at scrape).", []string{"dir"}, nil),
		dirUsable: prometheus.NewDesc("gregor_log_dir_usable_bytes",
			"Bytes of the file system a log dir is on that the broker can still write (statfs: blocks available to unprivileged users, read at scrape).",
			[]string{"dir"}, nil),
		partsOffline: prometheus.NewDesc("gregor_partitions_offline",
			"Partitions this broker holds in a log dir that failed.", nil, nil),
		strays: prometheus.NewDesc("gregor_log_strays",
			"Stray partition dirs in the log dirs: logs the metadata did not know at start-up, kept (renamed *-stray) until an operator removes them.",
			nil, nil),
		leaders: prometheus.NewDesc("gregor_partitions_led",
			"Partitions this broker leads.", nil, nil),
		underReplicated: prometheus.NewDesc("gregor_partitions_under_replicated",
			"Partitions this broker leads whose ISR is smaller than their replica set (its original replicas while a reassignment is in flight, as Kafka counts).", nil, nil),
		reassigning: prometheus.NewDesc("gregor_partitions_reassigning",
			"Partitions this broker leads with a reassignment in flight (Kafka's ReassigningPartitions).", nil, nil),
		underMinISR: prometheus.NewDesc("gregor_partitions_under_min_isr",
			"Partitions this broker leads whose ISR is below min.insync.replicas (capped at the replica count): acks=all writes to them fail.", nil, nil),
		followerLag: prometheus.NewDesc("gregor_replica_lag_records",
			"Records a follower's log lags behind the log end of a partition this broker leads, by follower.",
			[]string{"topic", "partition", "follower"}, nil),
		clusterOffline: prometheus.NewDesc("gregor_cluster_partitions_offline",
			"Partitions of the cluster with no leader, in this broker's metadata view (the same on every broker once views agree).", nil, nil),
	}
}

func (lc *logCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lc.size
	ch <- lc.segments
	ch <- lc.start
	ch <- lc.end
	ch <- lc.hwDesc
	ch <- lc.lsoLag
	ch <- lc.dirOffline
	ch <- lc.dirTotal
	ch <- lc.dirUsable
	ch <- lc.partsOffline
	ch <- lc.strays
	ch <- lc.leaders
	ch <- lc.underReplicated
	ch <- lc.underMinISR
	ch <- lc.reassigning
	ch <- lc.followerLag
	ch <- lc.clusterOffline
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
			lc.collectDirSpace(ch, d)
		}
		ch <- prometheus.MustNewConstMetric(lc.strays, prometheus.GaugeValue, float64(len(lc.b.logs.Strays())))
	}
	t := lc.b.parts.Load()
	if t == nil {
		return
	}
	offline, led, under, underMin, reassigning := 0, 0, 0, 0, 0
	defer func() {
		ch <- prometheus.MustNewConstMetric(lc.reassigning, prometheus.GaugeValue, float64(reassigning))
		ch <- prometheus.MustNewConstMetric(lc.partsOffline, prometheus.GaugeValue, float64(offline))
		ch <- prometheus.MustNewConstMetric(lc.leaders, prometheus.GaugeValue, float64(led))
		ch <- prometheus.MustNewConstMetric(lc.underReplicated, prometheus.GaugeValue, float64(under))
		ch <- prometheus.MustNewConstMetric(lc.underMinISR, prometheus.GaugeValue, float64(underMin))
	}()
	if lc.b.cluster != nil && lc.b.ready.Load() {
		leaderless := 0
		for _, tp := range lc.b.cluster.Snapshot().Topics {
			for _, st := range tp.Partitions {
				if st.Leader < 0 {
					leaderless++
				}
			}
		}
		ch <- prometheus.MustNewConstMetric(lc.clusterOffline, prometheus.GaugeValue, float64(leaderless))
	}
	for name, ps := range t.byName {
		for _, p := range ps {
			if p == nil {
				continue
			}
			l := p.log()
			if l.Err() != nil {
				offline++
			}
			part := strconv.Itoa(int(p.tp.Partition))
			ch <- prometheus.MustNewConstMetric(lc.size, prometheus.GaugeValue, float64(l.Size()), name, part)
			ch <- prometheus.MustNewConstMetric(lc.segments, prometheus.GaugeValue, float64(l.SegmentCount()), name, part)
			ch <- prometheus.MustNewConstMetric(lc.start, prometheus.GaugeValue, float64(l.LogStartOffset()), name, part)
			ch <- prometheus.MustNewConstMetric(lc.end, prometheus.GaugeValue, float64(l.LogEndOffset()), name, part)
			hw := l.HighWatermark()
			ch <- prometheus.MustNewConstMetric(lc.hwDesc, prometheus.GaugeValue, float64(hw), name, part)
			ch <- prometheus.MustNewConstMetric(lc.lsoLag, prometheus.GaugeValue, float64(max(hw-l.LastStableOffset(), 0)), name, part)
			lr := p.lead.Load()
			if lr == nil {
				continue
			}
			led++
			st := p.state.Load()
			if len(st.ISR) < len(st.OriginalReplicas()) {
				under++
			}
			if st.Reassigning() {
				reassigning++
			}
			if int32(len(st.ISR)) < p.effectiveMinISR() {
				underMin++
			}
			lr.mu.Lock()
			lag := lr.mu.st.Lag(l.LogEndOffset())
			lr.mu.Unlock()
			for follower, n := range lag {
				ch <- prometheus.MustNewConstMetric(lc.followerLag, prometheus.GaugeValue, float64(n), name, part, strconv.Itoa(int(follower)))
			}
		}
	}
}

// collectDirSpace exports the size and usable space of dir's file system,
// labelled with dir as configured (as gregor_log_dir_offline is). A dir
// statfs fails on exports neither: gregor_log_dir_offline tells of it.
func (lc *logCollector) collectDirSpace(ch chan<- prometheus.Metric, dir string) {
	var st syscall.Statfs_t
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	if err := syscall.Statfs(abs, &st); err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(lc.dirTotal, prometheus.GaugeValue, float64(st.Blocks)*float64(st.Bsize), dir)
	ch <- prometheus.MustNewConstMetric(lc.dirUsable, prometheus.GaugeValue, float64(st.Bavail)*float64(st.Bsize), dir)
}
