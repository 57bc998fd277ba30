package broker

import (
	"errors"
	"slices"

	"github.com/gregor-io/gregor/coordinator/cluster"
)

// A log dir that fails (ENOSPC, EIO) takes its partitions offline until
// the next start recovers it (see storage's "Disk errors"). This broker
// then reports its replicas there as Kafka reports replicas in an offline
// dir: listed in OfflineReplicas, and, where it led the partition, no
// leader (LEADER_NOT_AVAILABLE in Metadata) since no other replica can take
// over yet. /readyz answers 503 naming the dirs, and
// gregor_log_dir_offline and gregor_partitions_offline count them.
//
// Only this broker's own replicas are judged: the registry does not carry
// other brokers' offline dirs yet.

// offlineReplicas returns the replicas of partition part of t that are
// offline for a client on listener: on brokers not registered or without
// that listener (as Kafka counts them), or this broker's replica when its
// log dir failed.
func (b *Broker) offlineReplicas(md *cluster.Metadata, t *cluster.Topic, part int32, listener string) []int32 {
	var out []int32
	for _, r := range t.Partitions[part].Replicas {
		if !hasListener(md, r, listener) || (r == b.cfg.NodeID && b.localOffline(t.Name, part)) {
			out = append(out, r)
		}
	}
	return out
}

// hasListener reports whether broker id is live and has an endpoint on
// listener.
func hasListener(md *cluster.Metadata, id int32, listener string) bool {
	br, live := md.Broker(id)
	if !live {
		return false
	}
	_, _, ok := br.Endpoint(listener)
	return ok
}

// leaderAvailable reports whether partition part of t has a leader that can
// serve it: registered, in the ISR and, for this broker, with its log dir
// online.
func (b *Broker) leaderAvailable(md *cluster.Metadata, t *cluster.Topic, part int32) bool {
	st := &t.Partitions[part]
	if _, live := md.Broker(st.Leader); !live || !slices.Contains(st.ISR, st.Leader) {
		return false
	}
	return st.Leader != b.cfg.NodeID || !b.localOffline(t.Name, part)
}

// localOffline reports whether this broker holds partition part of topic
// in a log dir that failed.
func (b *Broker) localOffline(topic string, part int32) bool {
	ps := b.parts.Load().byName[topic]
	if int(part) >= len(ps) || ps[part] == nil {
		return false
	}
	return ps[part].log().Err() != nil
}

// offlineDirs returns the log dirs that failed, with their errors.
// Only called once ready was seen set, which orders it after Start set
// b.logs.
func (b *Broker) offlineDirs() []error {
	var out []error
	for _, d := range b.cfg.LogDirs {
		if err := b.logs.DirError(d); err != nil {
			out = append(out, err)
		}
	}
	return out
}

// notReady says why /readyz answers 503, or is nil when it answers 200.
func (b *Broker) notReady() error {
	if !b.ready.Load() {
		return errors.New("not ready")
	}
	return errors.Join(b.offlineDirs()...)
}
