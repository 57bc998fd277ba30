package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
)

// Markers around the generated section of the README.
const (
	summaryStart = "<!-- chaos-summary:start (written by chaos -summarize; do not edit) -->"
	summaryEnd   = "<!-- chaos-summary:end -->"
)

// summaryTable is a markdown table of runs: per target and nemesis the
// cycles, the cycles that did not recover, and the unavailability
// (median and max, worst partition and whole topic), then a line per
// target with the checker's totals.
func summaryTable(runs []*results) []string {
	type key struct{ target, nemesis string }
	type agg struct {
		cycles, unrecovered int
		worst, any          []time.Duration
	}
	aggs := map[key]*agg{}
	var keys []key
	order := map[string]int{}
	for i, n := range nemeses {
		order[n.name] = i
	}
	for _, r := range runs {
		for _, c := range r.Cycles {
			k := key{r.Target, c.Nemesis}
			a := aggs[k]
			if a == nil {
				a = &agg{}
				aggs[k] = a
				keys = append(keys, k)
			}
			a.cycles++
			if !c.Recovered {
				a.unrecovered++
			}
			a.worst = append(a.worst, time.Duration(c.UnavailMS)*time.Millisecond)
			a.any = append(a.any, time.Duration(c.UnavailAnyMS)*time.Millisecond)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].target != keys[j].target {
			return keys[i].target < keys[j].target
		}
		return order[keys[i].nemesis] < order[keys[j].nemesis]
	})
	sec := func(d time.Duration) string { return fmt.Sprintf("%.1f", d.Seconds()) }
	lines := []string{
		"| target | nemesis | cycles | not recovered | unavailable s, worst partition: median / max | whole topic: median / max |",
		"| --- | --- | ---: | ---: | ---: | ---: |",
	}
	for _, k := range keys {
		a := aggs[k]
		wm, wx := lab.MedianMax(a.worst)
		am, ax := lab.MedianMax(a.any)
		lines = append(lines, fmt.Sprintf("| %s | %s | %d | %d | %s / %s | %s / %s |", k.target, k.nemesis, a.cycles, a.unrecovered, sec(wm), sec(wx), sec(am), sec(ax)))
	}
	type tot struct {
		runs, passed, cycles, acked, lost, misplaced, dup, reord, consumed, vanished, moved, commitsBack int
		regAcked, regLost                                                                                int
		networks                                                                                         map[string]bool
	}
	tots := map[string]*tot{}
	var targets []string
	for _, r := range runs {
		t := tots[r.Target]
		if t == nil {
			t = &tot{networks: map[string]bool{}}
			tots[r.Target] = t
			targets = append(targets, r.Target)
		}
		t.runs++
		if r.Pass {
			t.passed++
		}
		t.networks[r.Network] = true
		t.cycles += len(r.Cycles)
		k := r.Counts
		t.acked += k.Acked
		t.lost += k.Lost
		t.misplaced += k.Misplaced
		t.dup += k.Duplicated
		t.reord += k.Reordered
		t.consumed += k.Consumed
		t.vanished += k.Vanished
		t.moved += k.Moved
		t.commitsBack += k.CommitsBackwards
		t.regAcked += k.RegisterAcked
		t.regLost += k.RegisterLost + k.RegisterDuplicated
	}
	sort.Strings(targets)
	lines = append(lines, "",
		"| target | runs (passed) | network | fault cycles | acknowledged | lost | misplaced | duplicated | reordered | consumed | read then vanished | moved | commits going back | register writes acknowledged | lost or duplicated |",
		"| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, name := range targets {
		t := tots[name]
		var nets []string
		for n := range t.networks {
			nets = append(nets, n)
		}
		sort.Strings(nets)
		lines = append(lines, fmt.Sprintf("| %s | %d (%d) | %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |",
			name, t.runs, t.passed, strings.Join(nets, ", "), t.cycles, t.acked, t.lost, t.misplaced, t.dup, t.reord, t.consumed, t.vanished, t.moved, t.commitsBack, t.regAcked, t.regLost))
	}
	return lines
}

// writeSummary reads every *.json results file of dir and writes the
// summary table between the markers of readme (or prints it).
func writeSummary(dir, readme string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	var runs []*results
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		r := &results{}
		if err := json.Unmarshal(b, r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		runs = append(runs, r)
	}
	body := fmt.Sprintf("%d runs, from the results files of %s (%s).\n\n%s\n",
		len(runs), filepath.Base(dir), strings.Join(baseNames(files), ", "), strings.Join(summaryTable(runs), "\n"))
	if readme == "" {
		fmt.Print(body)
		return nil
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, summaryStart), strings.Index(s, summaryEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q section", readme, summaryStart, summaryEnd)
	}
	s = s[:i+len(summaryStart)] + "\n" + body + s[j:]
	return os.WriteFile(readme, []byte(s), 0o644)
}

func baseNames(files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, filepath.Base(f))
	}
	return out
}
