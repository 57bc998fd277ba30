package storage

import "sync"

// notifier wakes whoever waits for the next change of a log. Waiters either
// take a channel closed at the next change (wait), made only when someone
// waits, or subscribe a channel of their own, which gets a non-blocking send
// at every change until unsubscribed: a fetch over many partitions waits on
// one channel subscribed to all of them.
type notifier struct {
	mu   sync.Mutex
	ch   chan struct{}
	subs map[chan<- struct{}]struct{}
}

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) subscribe(ch chan<- struct{}) func() {
	n.mu.Lock()
	if n.subs == nil {
		n.subs = map[chan<- struct{}]struct{}{}
	}
	n.subs[ch] = struct{}{}
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		delete(n.subs, ch)
		n.mu.Unlock()
	}
}

func (n *notifier) broadcast() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
	for ch := range n.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
