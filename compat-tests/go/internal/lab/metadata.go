package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Partition is one partition's state in a metadata answer.
type Partition struct {
	Leader int32
	ISR    []int32
}

// View is what one metadata answer says about the cluster and a topic.
type View struct {
	Brokers    []int32
	Controller int32
	Parts      map[int32]Partition
}

// Metadata asks the cluster for its brokers, its controller and topic's
// partitions, giving up after 3 s.
func Metadata(ctx context.Context, adm *kadm.Client, topic string) (View, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return View{}, err
	}
	v := View{Brokers: md.Brokers.NodeIDs(), Controller: md.Controller, Parts: map[int32]Partition{}}
	td, ok := md.Topics[topic]
	if !ok {
		return v, fmt.Errorf("topic %s not in the metadata", topic)
	}
	if td.Err != nil {
		return v, fmt.Errorf("topic %s: %w", topic, td.Err)
	}
	// A partition answered with an error (no leader, say) is listed
	// too: its leader and ISR are what the broker knows.
	for p, pd := range td.Partitions {
		v.Parts[p] = Partition{Leader: pd.Leader, ISR: pd.ISR}
	}
	return v, nil
}

// FullISR reports whether the view holds all partitions of the topic, each
// with a leader and replicas brokers in its ISR.
func (v View) FullISR(partitions int32, replicas int) bool {
	if len(v.Parts) != int(partitions) {
		return false
	}
	for _, p := range v.Parts {
		if p.Leader < 0 || len(p.ISR) != replicas {
			return false
		}
	}
	return true
}

// AllLed reports whether the view holds all partitions, each with a leader.
func (v View) AllLed(partitions int32) bool {
	if len(v.Parts) != int(partitions) {
		return false
	}
	for _, p := range v.Parts {
		if p.Leader < 0 {
			return false
		}
	}
	return true
}
