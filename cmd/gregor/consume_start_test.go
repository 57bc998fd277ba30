package main

import (
	"slices"
	"strings"
	"testing"
)

// A member of a group that stops before printing a record of every
// partition it was assigned still commits where it started in the others,
// so that the next member, with the default --offset end, reads the rest:
// nothing lost, nothing repeated.
func TestConsumeGroupCommitsUnprintedPartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	c := &cli{t: t, bootstrap: strings.Join(b.Addrs(), ",")}
	const topic, group = "resume", "resume-group"
	c.run("topic", "create", topic, "-p", "3")
	c.runIn("a\nb\n", "produce", topic, "--partition", "0")
	c.runIn("c\n", "produce", topic, "--partition", "2")

	first := strings.Fields(c.run("consume", topic, "--group", group, "--offset", "start", "-n", "1"))
	if len(first) != 1 {
		t.Fatalf("first member read %q, want 1 record", first)
	}
	d := describeGroup(t, c, group)
	for _, o := range d.Offsets {
		if o.Topic == topic && o.Committed < 0 {
			t.Errorf("after the first member partition %d has no committed offset: %+v", o.Partition, d)
		}
	}
	if d.TotalLag != 2 {
		t.Errorf("after the first member the lag is %d, want 2", d.TotalLag)
	}

	rest := strings.Fields(c.run("consume", topic, "--group", group, "-n", "2", "--timeout", "10s"))
	all := slices.Sorted(slices.Values(append(first, rest...)))
	if !slices.Equal(all, []string{"a", "b", "c"}) {
		t.Errorf("first member read %q, second %q: want a, b and c once each", first, rest)
	}
	if d := describeGroup(t, c, group); d.TotalLag != 0 {
		t.Errorf("after the second member the lag is %d, want 0", d.TotalLag)
	}
}
