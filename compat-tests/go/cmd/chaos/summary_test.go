package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummaryTable(t *testing.T) {
	t.Parallel()
	g := &results{Target: "gregor", Network: "netns", Pass: true, Cycles: []cycleResult{
		{Nemesis: "kill-leader", Recovered: true, UnavailMS: 4000, UnavailAnyMS: 1000},
		{Nemesis: "partition-bridge", Recovered: false, UnavailMS: 9000, UnavailAnyMS: 2000},
		{Nemesis: "kill-leader", Recovered: true, UnavailMS: 6000, UnavailAnyMS: 3000},
		{Nemesis: "kill-leader", Recovered: true, UnavailMS: 5000, UnavailAnyMS: 500},
	}}
	g.Counts.Acked, g.Counts.Lost = 100, 1
	k := &results{Target: "kafka", Network: "netns", Pass: true, Cycles: []cycleResult{
		{Nemesis: "kill-leader", Recovered: true, UnavailMS: 2500, UnavailAnyMS: 100},
	}}
	k.Counts.Acked = 50
	got := strings.Join(summaryTable([]*results{k, g}), "\n")
	for _, want := range []string{
		"| gregor | kill-leader | 3 | 0 | 5.0 / 6.0 | 1.0 / 3.0 |",
		"| gregor | partition-bridge | 1 | 1 | 9.0 / 9.0 | 2.0 / 2.0 |",
		"| kafka | kill-leader | 1 | 0 | 2.5 / 2.5 | 0.1 / 0.1 |",
		"| gregor | 1 (1) | netns | 4 | 100 | 1 | 0 |",
		"| kafka | 1 (1) | netns | 1 | 50 | 0 | 0 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	// Nemeses in the harness's order, gregor before kafka.
	if strings.Index(got, "| gregor | kill-leader") > strings.Index(got, "| gregor | partition-bridge") ||
		strings.Index(got, "| gregor | partition-bridge") > strings.Index(got, "| kafka | kill-leader") {
		t.Errorf("rows out of order:\n%s", got)
	}
}

func TestWriteSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := `{"target":"gregor","network":"netns","pass":true,"cycles":[{"nemesis":"kill-random","recovered":true,"unavail_ms":3000,"unavail_any_ms":3000}],"counts":{"acked":7}}`
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte(r), 0o644); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	before := "# title\n\n" + summaryStart + "\nold table\n" + summaryEnd + "\nafter\n"
	if err := os.WriteFile(readme, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSummary(dir, readme); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(readme)
	got := string(b)
	if strings.Contains(got, "old table") || !strings.Contains(got, "| gregor | kill-random | 1 | 0 | 3.0 / 3.0 | 3.0 / 3.0 |") ||
		!strings.HasPrefix(got, "# title\n") || !strings.HasSuffix(got, summaryEnd+"\nafter\n") {
		t.Errorf("README after writeSummary:\n%s", got)
	}
	if err := os.WriteFile(readme, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeSummary(dir, readme); err == nil {
		t.Error("writeSummary into a README without markers: no error")
	}
}

func TestLeftoverNames(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"gch1f2abr": true, "gch1f2an3": true, "gch1f2ah1": true,
		"gch1f2ap1": false, // the namespace side goes with its namespace
		"gchbr":     false, "eth0": false, "gch1f2a": false, "xgch1f2abr": false,
	} {
		if got := nameRE.MatchString(name); got != want {
			t.Errorf("nameRE matches %q: %v, want %v", name, got, want)
		}
	}
}
