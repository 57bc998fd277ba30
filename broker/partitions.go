package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-io/gregor/broker/configs"
	"github.com/gregor-io/gregor/coordinator/cluster"
	"github.com/gregor-io/gregor/protocol"
	"github.com/gregor-io/gregor/storage"
)

// partition is a partition this broker holds a replica of, with the
// settings its topic's configs resolve to.
type partition struct {
	tp       storage.TopicPartition
	topicID  cluster.TopicID
	internal bool
	// logp is the partition's log; a move to another log dir puts a new
	// one in place (under the role lock), so it is read anew each time.
	logp atomic.Pointer[storage.Log]
	// metrics are the topic's traffic counters, resolved when the
	// partition is opened so produce and fetch need no label lookup.
	metrics *topicMetrics

	leaderEpoch atomic.Int32
	state       atomic.Pointer[cluster.PartitionState]
	settings    atomic.Pointer[topicSettings]

	// role is held while the replica's role changes (applyRole) and while
	// the follower fetcher writes to the log, so that a fetch answered by
	// a former leader is never appended after this broker took over; the
	// leader's own appends hold it shared (appendAsLeader), so that none
	// lands under a leadership already given up.
	role sync.RWMutex
	// lead is the replication state while this broker leads the partition.
	lead atomic.Pointer[leaderRepl]
}

func (p *partition) isr() []int32 { return p.state.Load().ISR }

// log returns the partition's log as of now.
func (p *partition) log() *storage.Log { return p.logp.Load() }

// effectiveMinISR is min.insync.replicas, capped at the replication factor
// as Kafka caps it: a topic whose setting exceeds its replica count takes
// acks=all writes once every replica is in sync.
func (p *partition) effectiveMinISR() int32 {
	return min(p.settings.Load().minInsyncReplicas, int32(len(p.state.Load().Replicas)))
}

// topicSettings are the resolved topic configs the produce path and the log
// use.
type topicSettings struct {
	maxMessageBytes      int32
	logAppendTime        bool
	timestampBeforeMaxMs int64
	timestampAfterMaxMs  int64
	compacted            bool
	deletable            bool // cleanup.policy has "delete": DeleteRecords and retention apply
	minInsyncReplicas    int32
	// uncleanLeaderElection: a replica outside the ISR may have been
	// elected, so a follower may have to cut records below its high
	// watermark.
	uncleanLeaderElection bool
	// leaderThrottled and followerThrottled are the topic's partitions
	// whose replication this broker throttles as leader and as follower
	// (leader.replication.throttled.replicas and
	// follower.replication.throttled.replicas; replication_quota.go).
	leaderThrottled, followerThrottled configs.ThrottledReplicas
	log                                storage.Config
}

// partitionTable is an immutable index of the local partitions, replaced
// as a whole when metadata changes.
type partitionTable struct {
	byName map[string][]*partition // index = partition number; nil = not here
	names  map[cluster.TopicID]string
}

// internalTopics are the topics clients may not produce to directly.
var internalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true, "__share_group_state": true}

// lookupPartition finds a partition this broker leads, by topic name, or by
// id when byID. Kafka's codes: an unknown topic or partition number is
// UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id); a partition held
// elsewhere, or held here but led by another broker (or by none), is
// NOT_LEADER_OR_FOLLOWER: leaderHint tells the client where to go. A
// partition the metadata has but this broker has not made yet (a topic or
// partitions just created, its log still being made) is
// NOT_LEADER_OR_FOLLOWER too, as Kafka answers for a partition its
// metadata cache knows and its replica manager does not host yet: clients
// retry that without a limit, where they give up on an unknown topic after
// a few tries.
func (b *Broker) lookupPartition(topic string, id [16]byte, byID bool, num int32) (*partition, protocol.ErrorCode) {
	return b.lookupReplica(topic, id, byID, num, false)
}

// lookupReplica is lookupPartition, also finding a partition this broker
// follows when follower is set: a consumer's fetch may be served by a
// follower (KIP-392), up to the follower's high watermark.
func (b *Broker) lookupReplica(topic string, id [16]byte, byID bool, num int32, follower bool) (*partition, protocol.ErrorCode) {
	t := b.parts.Load()
	if byID {
		name, ok := t.names[id]
		if !ok {
			return nil, b.notMadeYet(topic, id, byID, num, protocol.UnknownTopicID)
		}
		topic = name
	}
	ps, ok := t.byName[topic]
	if !ok || num < 0 || int(num) >= len(ps) {
		return nil, b.notMadeYet(topic, id, byID, num, protocol.UnknownTopicOrPartition)
	}
	p := ps[num]
	if p == nil {
		return nil, protocol.NotLeaderOrFollower
	}
	st := p.state.Load()
	switch {
	case st == nil:
		return nil, protocol.NotLeaderOrFollower
	case st.Leader == b.cfg.NodeID:
		return p, protocol.None
	case follower && st.Leader >= 0 && p.log().Err() == nil:
		return p, protocol.None
	}
	return nil, protocol.NotLeaderOrFollower
}

// lookupLeader is lookupPartition for requests only a leader serves
// (produce, list offsets): when this broker's view of the registry makes it
// the partition's leader but it has not applied that view yet (a topic
// just created, a leadership just moved here), it waits for that, at most
// leaderApplyWait, rather than send the client away. Clients retry
// NOT_LEADER_OR_FOLLOWER only a few times (three, 100 ms apart, for some),
// and applying a view that creates many logs takes longer than that on a
// slow disk.
func (b *Broker) lookupLeader(ctx context.Context, topic string, id [16]byte, byID bool, num int32) (*partition, protocol.ErrorCode) {
	p, code := b.lookupPartition(topic, id, byID, num)
	if code != protocol.NotLeaderOrFollower {
		return p, code
	}
	md := b.cluster.Snapshot()
	var t *cluster.Topic
	if byID {
		t = md.TopicsByID[cluster.TopicID(id)]
	} else {
		t = md.Topics[topic]
	}
	if t == nil || num < 0 || int(num) >= len(t.Partitions) || t.Partitions[num].Leader != b.cfg.NodeID {
		return p, code
	}
	timer := time.NewTimer(leaderApplyWait)
	defer timer.Stop()
	for {
		rev, ch := b.appliedRevision()
		if rev >= md.Revision {
			return b.lookupPartition(topic, id, byID, num)
		}
		select {
		case <-ch:
		case <-timer.C:
			return p, code
		case <-ctx.Done():
			return p, code
		}
	}
}

// waitApplied waits, at most d, until this broker has applied the
// metadata of revision rev (its partitions, quotas and throttles follow
// it), so that a change a request made here holds for the next request.
func (b *Broker) waitApplied(ctx context.Context, rev int64, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		applied, ch := b.appliedRevision()
		if applied >= rev {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// leaderApplyWait bounds lookupLeader's wait for the metadata to apply.
const leaderApplyWait = 5 * time.Second

// markApplied records that the metadata of revision rev is applied.
func (b *Broker) markApplied(rev int64) {
	b.applied.Lock()
	defer b.applied.Unlock()
	if rev <= b.applied.rev {
		return
	}
	b.applied.rev = rev
	if b.applied.ch != nil {
		close(b.applied.ch)
		b.applied.ch = nil
	}
}

// appliedRevision returns the revision of the metadata applied last, and
// a channel closed when a newer one is.
func (b *Broker) appliedRevision() (int64, <-chan struct{}) {
	b.applied.Lock()
	defer b.applied.Unlock()
	if b.applied.ch == nil {
		b.applied.ch = make(chan struct{})
	}
	return b.applied.rev, b.applied.ch
}

// notMadeYet is the code for a partition missing from the partition table:
// NOT_LEADER_OR_FOLLOWER when the metadata has it, else unknown.
func (b *Broker) notMadeYet(topic string, id [16]byte, byID bool, num int32, unknown protocol.ErrorCode) protocol.ErrorCode {
	md := b.cluster.Snapshot()
	var t *cluster.Topic
	if byID {
		t = md.TopicsByID[cluster.TopicID(id)]
	} else {
		t = md.Topics[topic]
	}
	if t != nil && num >= 0 && int(num) < len(t.Partitions) {
		return protocol.NotLeaderOrFollower
	}
	return unknown
}

// leaderHint is where a client told NOT_LEADER_OR_FOLLOWER should go
// (KIP-951): the partition's leader and leader epoch in this broker's
// metadata, and the leader's registration; ok is false when the partition
// has no live leader known here.
func (b *Broker) leaderHint(md *cluster.Metadata, topic string, id [16]byte, byID bool, num int32) (leader, epoch int32, at cluster.BrokerInfo, ok bool) {
	var t *cluster.Topic
	if byID {
		t = md.TopicsByID[cluster.TopicID(id)]
	} else {
		t = md.Topics[topic]
	}
	if t == nil || num < 0 || int(num) >= len(t.Partitions) {
		return -1, -1, at, false
	}
	st := t.Partitions[num]
	at, ok = md.Broker(st.Leader)
	if !ok {
		return -1, -1, at, false
	}
	return st.Leader, st.LeaderEpoch, at, true
}

// resolveSettings turns a topic's configs, with the broker levels under
// them, into the settings the broker runs the topic with.
func (b *Broker) resolveSettings(t *cluster.Topic, md *cluster.Metadata) (*topicSettings, error) {
	v := configs.TopicValues(t.Configs, md.BrokerConfigs[b.cfg.NodeID], md.BrokerConfigs[-1], b.staticConfigs())
	var s topicSettings
	var errs []error
	get64 := func(name string) int64 {
		n, err := v.Int64(name)
		errs = append(errs, err)
		return n
	}
	s.maxMessageBytes = int32(get64("max.message.bytes"))
	s.timestampBeforeMaxMs = get64("message.timestamp.before.max.ms")
	s.timestampAfterMaxMs = get64("message.timestamp.after.max.ms")
	s.minInsyncReplicas = int32(get64("min.insync.replicas"))
	unclean, err := v.Bool("unclean.leader.election.enable")
	errs = append(errs, err)
	s.uncleanLeaderElection = unclean
	ts, err := v.String("message.timestamp.type")
	errs = append(errs, err)
	s.logAppendTime = ts == "LogAppendTime"
	s.leaderThrottled, err = configs.ParseThrottledReplicas("leader.replication.throttled.replicas",
		v["leader.replication.throttled.replicas"], b.cfg.NodeID)
	errs = append(errs, err)
	s.followerThrottled, err = configs.ParseThrottledReplicas("follower.replication.throttled.replicas",
		v["follower.replication.throttled.replicas"], b.cfg.NodeID)
	errs = append(errs, err)
	policy, err := v.List("cleanup.policy")
	errs = append(errs, err)
	s.compacted = slices.Contains(policy, "compact")
	s.deletable = slices.Contains(policy, "delete")
	s.log = storage.Config{
		SegmentBytes:       get64("segment.bytes"),
		SegmentMs:          get64("segment.ms"),
		SegmentIndexBytes:  get64("segment.index.bytes"),
		IndexIntervalBytes: get64("index.interval.bytes"),
		FlushMessages:      get64("flush.messages"),
		FlushMs:            get64("flush.ms"),
		CleanupDelete:      s.deletable,
		RetentionMs:        get64("retention.ms"),
		RetentionBytes:     get64("retention.bytes"),
		FileDeleteDelayMs:  get64("file.delete.delay.ms"),

		Compact:            s.compacted,
		MinCompactionLagMs: get64("min.compaction.lag.ms"),
		MaxCompactionLagMs: get64("max.compaction.lag.ms"),
		DeleteRetentionMs:  get64("delete.retention.ms"),
	}
	s.log.MinCleanableDirtyRatio, err = v.Float64("min.cleanable.dirty.ratio")
	errs = append(errs, err)
	if s.log.RetentionMs < 0 {
		// A negative log.retention.hours or .minutes converts to a
		// negative count of milliseconds; Kafka's broker takes any
		// negative retention time as -1, no limit.
		s.log.RetentionMs = -1
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("topic %s configs: %w", t.Name, err)
	}
	if err := s.log.Validate(); err != nil {
		return nil, fmt.Errorf("topic %s configs: %w", t.Name, err)
	}
	return &s, nil
}

// staticConfigs are the broker configs given at start-up, by Kafka name,
// that topic configs fall back to.
func (b *Broker) staticConfigs() map[string]string {
	out := map[string]string{
		"node.id":                    fmt.Sprint(b.cfg.NodeID),
		"listeners":                  strings.Join(b.cfg.Listeners, ","),
		"log.dirs":                   strings.Join(b.cfg.LogDirs, ","),
		"message.max.bytes":          fmt.Sprint(b.cfg.MessageMaxBytes),
		"num.partitions":             fmt.Sprint(b.cfg.NumPartitions),
		"default.replication.factor": fmt.Sprint(b.cfg.DefaultReplicationFactor),
		"auto.create.topics.enable":  fmt.Sprint(b.cfg.AutoCreateTopicsEnable),
		"socket.request.max.bytes":   fmt.Sprint(b.cfg.SocketRequestMaxBytes),
		"fetch.max.bytes":            fmt.Sprint(b.cfg.FetchMaxBytes),
		"broker.session.timeout.ms":  fmt.Sprint(b.cfg.SessionTimeout.Milliseconds()),
		"controlled.shutdown.enable": fmt.Sprint(b.cfg.ControlledShutdownEnable),
		"replica.lag.time.max.ms":    fmt.Sprint(b.cfg.ReplicaLagTimeMax.Milliseconds()),
		"replica.fetch.wait.max.ms":  fmt.Sprint(b.cfg.ReplicaFetchWaitMax.Milliseconds()),

		"auto.leader.rebalance.enable":            fmt.Sprint(b.cfg.AutoLeaderRebalanceEnable),
		"leader.imbalance.check.interval.seconds": fmt.Sprint(int64(b.cfg.LeaderImbalanceCheckInterval.Seconds())),
		"replication.quota.window.num":            fmt.Sprint(b.cfg.ReplicationQuotaWindowNum),
		"replication.quota.window.size.seconds":   fmt.Sprint(int64(b.cfg.ReplicationQuotaWindowSize / time.Second)),
		"quota.window.num":                        fmt.Sprint(b.cfg.QuotaWindowNum),
		"quota.window.size.seconds":               fmt.Sprint(int64(b.cfg.QuotaWindowSize / time.Second)),
		"controller.quota.window.num":             fmt.Sprint(b.cfg.ControllerQuotaWindowNum),
		"controller.quota.window.size.seconds":    fmt.Sprint(int64(b.cfg.ControllerQuotaWindowSize / time.Second)),

		"log.retention.check.interval.ms": fmt.Sprint(b.cfg.LogRetentionCheckInterval.Milliseconds()),
		"log.cleaner.enable":              fmt.Sprint(b.cfg.LogCleanerEnable),
		"log.cleaner.backoff.ms":          fmt.Sprint(b.cfg.LogCleanerBackoff.Milliseconds()),
		"log.cleaner.dedupe.buffer.size":  fmt.Sprint(b.cfg.LogCleanerDedupeBufferSize),
	}
	if len(b.cfg.AdvertisedListeners) > 0 {
		out["advertised.listeners"] = strings.Join(b.cfg.AdvertisedListeners, ",")
	}
	if b.cfg.ListenerSecurityProtocolMap != DefaultListenerSecurityProtocolMap {
		out["listener.security.protocol.map"] = b.cfg.ListenerSecurityProtocolMap
	}
	if m := strings.Join(b.cfg.SASLEnabledMechanisms, ","); m != "GSSAPI" {
		out["sasl.enabled.mechanisms"] = m
	}
	if b.cfg.SASLMechanismInterBrokerProtocol != "GSSAPI" {
		out["sasl.mechanism.inter.broker.protocol"] = b.cfg.SASLMechanismInterBrokerProtocol
	}
	if b.cfg.SASLServerMaxReceiveSize != 512<<10 {
		out["sasl.server.max.receive.size"] = fmt.Sprint(b.cfg.SASLServerMaxReceiveSize)
	}
	if b.cfg.FailedAuthenticationDelay != 100*time.Millisecond {
		out["connection.failed.authentication.delay.ms"] = fmt.Sprint(b.cfg.FailedAuthenticationDelay.Milliseconds())
	}
	if b.cfg.ConnectionsMaxReauth != 0 {
		out["connections.max.reauth.ms"] = fmt.Sprint(b.cfg.ConnectionsMaxReauth.Milliseconds())
	}
	if b.cfg.InterBrokerListenerName != "" {
		out["inter.broker.listener.name"] = b.cfg.InterBrokerListenerName
	}
	if b.cfg.Rack != "" {
		out["broker.rack"] = b.cfg.Rack
	}
	if b.cfg.ReplicaSelector != "" {
		out["replica.selector.class"] = b.cfg.ReplicaSelector
	}
	for k, v := range b.cfg.StaticTopicDefaults {
		out[k] = v
	}
	if _, set := out["log.flush.interval.messages"]; !set {
		// Gregor's durable default: fsync before acknowledging, with group
		// commit. Kafka's own default (9223372036854775807, the page cache)
		// is one setting away.
		out["log.flush.interval.messages"] = "1"
	}
	return out
}

// syncPartitions makes the local logs match the metadata: a log for every
// partition with a replica here (created if missing, recreated if its topic
// id changed), its settings and leader epoch current, and the logs of
// topics that are gone deleted. It runs at start, after every metadata
// change, and synchronously after this broker's own topic changes.
func (b *Broker) syncPartitions(md *cluster.Metadata) error {
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	if rev, _ := b.appliedRevision(); md.Revision < rev {
		// A caller that read its view before another sync applied a newer
		// one: never go back to an older view.
		md = b.cluster.Snapshot()
	}
	old := b.parts.Load()
	next := &partitionTable{byName: map[string][]*partition{}, names: map[cluster.TopicID]string{}}
	keep := map[storage.TopicPartition]bool{}
	var errs []error
	var jobs []syncJob
	for name, t := range md.Topics {
		set, err := b.resolveSettings(t, md)
		if err != nil {
			// Keep serving the topic as it was: a bad config must not
			// cost it its logs.
			errs = append(errs, err)
			if ps, ok := old.byName[name]; ok {
				next.byName[name] = ps
				next.names[t.ID] = name
			}
			for i := range t.Partitions {
				keep[storage.TopicPartition{Topic: name, Partition: int32(i)}] = true
			}
			continue
		}
		ps := make([]*partition, len(t.Partitions))
		for i := range t.Partitions {
			st := &t.Partitions[i]
			if !slices.Contains(st.Replicas, b.cfg.NodeID) {
				continue
			}
			tp := storage.TopicPartition{Topic: name, Partition: int32(i)}
			jobs = append(jobs, syncJob{tp: tp, t: t, st: st, set: set, into: &ps[i]})
		}
		next.byName[name] = ps
		next.names[t.ID] = name
	}
	// The partitions are synced in parallel: a new log costs a few fsyncs,
	// and a topic's worth of them in flight at once share the file
	// system's journal commits.
	jobErrs := make([]error, len(jobs))
	sem := make(chan struct{}, syncParallelism)
	var wg sync.WaitGroup
	for i, j := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			*j.into, jobErrs[i] = b.syncPartition(old, j.tp, j.t, j.st, j.set)
		}()
	}
	wg.Wait()
	for i, j := range jobs {
		// The partition is assigned here whatever became of its sync:
		// its log is never deleted for a failed one.
		keep[j.tp] = true
		if err := jobErrs[i]; err != nil {
			if *j.into != nil && errors.Is(err, storage.ErrLogFailed) {
				// Its log dir went offline: the partition stays, served
				// as offline (KAFKA_STORAGE_ERROR to produce and fetch,
				// an offline replica in Metadata) until a restart
				// recovers the dir, as Kafka serves a failed dir's
				// replicas.
				b.logger.Error("partition offline: its log dir failed", "partition", j.tp.String(), "err", err)
				continue
			}
			*j.into = nil
			errs = append(errs, err)
		}
	}
	b.retireDropped(old, next)
	for _, l := range b.logs.Logs() {
		tp := l.TopicPartition()
		if keep[tp] {
			continue
		}
		if b.starting.Load() {
			// Found at start-up, unknown to the registry: the topic may
			// have been deleted while the broker was down, or the logs
			// may belong elsewhere. Kafka keeps such logs as strays.
			path, err := b.logs.MarkStray(tp)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			b.logger.Warn("kept a log the metadata does not know as a stray; remove it once it is not needed",
				"partition", tp.String(), "dir", path)
			continue
		}
		b.logger.Info("deleting the log of a partition no longer here", "partition", tp.String())
		if err := b.logs.Delete(tp); err != nil {
			errs = append(errs, err)
		}
	}
	b.updateReplicationQuotas(md)
	b.clientQuotas.mgr.Update(md.ClientQuotas)
	b.connRates.update(b.cfg, b.listenerNames(), md)
	b.parts.Store(next)
	b.markApplied(md.Revision)
	b.syncFollowers(next)
	for name := range old.byName {
		if _, ok := next.byName[name]; !ok {
			b.metrics.forgetTopic(name)
		}
	}
	b.groups.sync(next)
	b.txns.sync(next)
	b.shareCoords.sync(next)
	return errors.Join(errs...)
}

// syncParallelism bounds the partitions syncPartitions works on at once.
const syncParallelism = 32

// syncJob is one partition for syncPartitions; its result goes to into.
type syncJob struct {
	tp   storage.TopicPartition
	t    *cluster.Topic
	st   *cluster.PartitionState
	set  *topicSettings
	into **partition
}

func (b *Broker) syncPartition(old *partitionTable, tp storage.TopicPartition, t *cluster.Topic,
	st *cluster.PartitionState, set *topicSettings) (*partition, error) {
	var p *partition
	if ps := old.byName[tp.Topic]; int(tp.Partition) < len(ps) && ps[tp.Partition] != nil && ps[tp.Partition].topicID == t.ID {
		p = ps[tp.Partition]
		if err := p.log().SetConfig(set.log); err != nil {
			return nil, err
		}
	} else {
		l, err := b.openLog(tp, t.ID, set.log)
		if l == nil {
			return nil, err
		}
		p = &partition{tp: tp, topicID: t.ID, internal: internalTopics[tp.Topic], metrics: b.metrics.forTopic(tp.Topic)}
		p.logp.Store(l)
		if err != nil {
			p.settings.Store(set)
			p.state.Store(st)
			return p, err // offline (ErrLogFailed): see syncPartitions
		}
	}
	p.settings.Store(set)
	p.state.Store(st)
	if err := b.applyRole(p, st); err != nil {
		return p, err
	}
	return p, nil
}

// openLog returns the log of tp for topic id, creating it, or replacing a
// log left by an earlier topic of the same name. A log whose dir is offline
// is returned with an error wrapping storage.ErrLogFailed.
func (b *Broker) openLog(tp storage.TopicPartition, id cluster.TopicID, cfg storage.Config) (*storage.Log, error) {
	if l, ok := b.logs.Get(tp); ok {
		have, ok, err := l.TopicID()
		if err == nil && ok && have == id {
			return l, l.SetConfig(cfg)
		}
		if err := l.Err(); err != nil {
			return l, err
		}
		if err == nil && !ok {
			// No partition.metadata: a create that stopped before
			// writing it (a crash, a full disk). The registry assigns
			// the partition here, so the log is this topic's.
			b.logger.Info("writing the topic id of a log that has none", "partition", tp.String())
			if err := l.SetTopicID(id); err != nil {
				return l, err
			}
			return l, l.SetConfig(cfg)
		}
		if b.starting.Load() {
			// Another topic's log, found at start-up: kept as a stray.
			path, err := b.logs.MarkStray(tp)
			if err != nil {
				return nil, err
			}
			b.logger.Warn("kept the log of an earlier topic of this name as a stray; remove it once it is not needed",
				"partition", tp.String(), "dir", path)
		} else {
			b.logger.Info("replacing the log of an earlier topic", "partition", tp.String())
			if err := b.logs.Delete(tp); err != nil {
				return nil, err
			}
		}
	}
	return b.logs.CreateForTopic(tp, cfg, id)
}

// validTopicName applies Kafka's topic name rules.
func validTopicName(name string) error {
	if name == "" {
		return errors.New("topic name is illegal, it can't be empty")
	}
	if name == "." || name == ".." {
		return errors.New("topic name cannot be \".\" or \"..\"")
	}
	if len(name) > 249 {
		return fmt.Errorf("topic name is illegal, it can't be longer than 249 characters, topic name: %s", name)
	}
	legal := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return !legal(r) }); i >= 0 {
		return fmt.Errorf("topic name %s is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
	}
	return nil
}
