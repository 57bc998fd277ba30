// Command rebalance measures how long a consumer group takes to hand the
// partitions of a member that leaves to the others, with the classic
// protocol (franz-go's cooperative-sticky balancer, client-side) and with
// the KIP-848 consumer protocol (server-side assignment): -members
// consumers join a group on a topic of -partitions partitions, then leave
// one by one; for each leave, the time from the leaving member's Close
// until the remaining members hold every partition, each exactly once.
// It prints each time and the median, per protocol.
//
//	rebalance -brokers 127.0.0.1:9092 -protocol consumer -members 10
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type member struct {
	cl   *kgo.Client
	mu   sync.Mutex
	held map[int32]bool
	done chan struct{}
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap brokers")
	protocol := flag.String("protocol", "consumer", "classic or consumer")
	members := flag.Int("members", 10, "group members")
	partitions := flag.Int("partitions", 30, "partitions of the topic")
	prefix := flag.String("prefix", fmt.Sprintf("rebalance-%d", time.Now().UnixNano()), "topic and group name prefix")
	flag.Parse()
	if err := run(*brokers, *protocol, *members, int32(*partitions), *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "rebalance:", err)
		os.Exit(1)
	}
}

func run(brokers, protocol string, n int, partitions int32, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	topic, group := prefix+"-"+protocol, prefix+"-"+protocol+"-group"
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	ms := make([]*member, n)
	for i := range ms {
		m := &member{held: map[int32]bool{}, done: make(chan struct{})}
		opts := []kgo.Opt{
			kgo.SeedBrokers(brokers), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ClientID(fmt.Sprintf("member-%d", i)),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { m.set(a[topic], true) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { m.set(r[topic], false) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) { m.set(l[topic], false) }),
		}
		if protocol == "consumer" {
			opts = append(opts, kgo.ServerSideBalancer())
		}
		if m.cl, err = kgo.NewClient(opts...); err != nil {
			return err
		}
		ms[i] = m
		go func() {
			defer close(m.done)
			for {
				fs := m.cl.PollFetches(ctx)
				if fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
			}
		}()
	}
	settled := func(live []*member) bool {
		seen := map[int32]int{}
		for _, m := range live {
			m.mu.Lock()
			for p := range m.held {
				seen[p]++
			}
			m.mu.Unlock()
		}
		if len(seen) != int(partitions) {
			return false
		}
		for _, c := range seen {
			if c != 1 {
				return false
			}
		}
		return true
	}
	waitSettled := func(live []*member) error {
		for !settled(live) {
			if ctx.Err() != nil {
				return fmt.Errorf("group never settled with %d members", len(live))
			}
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	}
	if err := waitSettled(ms); err != nil {
		return err
	}
	// Every member holds a share before the first leave.
	for waitFor := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		all := true
		for _, m := range ms {
			m.mu.Lock()
			all = all && len(m.held) > 0
			m.mu.Unlock()
		}
		if all && settled(ms) {
			break
		}
		if time.Now().After(waitFor) {
			return fmt.Errorf("not every member got a partition")
		}
	}
	var times []time.Duration
	for i := 0; i < n-1; i++ {
		start := time.Now()
		ms[i].cl.Close()
		<-ms[i].done
		if err := waitSettled(ms[i+1:]); err != nil {
			return err
		}
		d := time.Since(start)
		times = append(times, d)
		fmt.Printf("rebalance: %s leave %d of %d: %v\n", protocol, i+1, n-1, d.Round(time.Millisecond))
	}
	ms[n-1].cl.Close()
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	fmt.Printf("rebalance: %s median %v (min %v, max %v) over %d leaves\n", protocol,
		sorted[len(sorted)/2].Round(time.Millisecond), sorted[0].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond), len(sorted))
	_, _ = adm.DeleteTopics(context.Background(), topic)
	return nil
}

func (m *member) set(ps []int32, held bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps {
		if held {
			m.held[p] = true
		} else {
			delete(m.held, p)
		}
	}
}
