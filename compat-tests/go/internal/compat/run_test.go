package compat

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSuiteReportsEachScenario(t *testing.T) {
	var out bytes.Buffer
	s := &Suite{Client: "c", Version: "v1", Bootstrap: "b", Prefix: "p", Out: &out, Log: io.Discard}
	s.Run(context.Background(), []Scenario{
		{Name: "ok", Run: func(ctx context.Context, t *T) (string, error) {
			if got := t.Name("g"); got != "p-c-ok-g" {
				return "", errors.New("name " + got)
			}
			return "3 records", nil
		}},
		{Name: "fails", Run: func(ctx context.Context, t *T) (string, error) {
			_, cancel := t.Step(ctx, "consume")
			defer cancel()
			return "", errors.New("partition 1:\tshort\nread")
		}},
		{Name: "panics", Run: func(ctx context.Context, t *T) (string, error) {
			var recs []Record
			return string(recs[3].Key), nil
		}},
	})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d result lines, want 3:\n%s", len(lines), out.String())
	}
	want := []struct{ scenario, status, detail string }{
		{"ok", "pass", "3 records"},
		{"fails", "fail", "consume: partition 1: short read"},
		{"panics", "fail", "start: panic: runtime error: index out of range [3] with length 0"},
	}
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 6 {
			t.Fatalf("line %d has %d fields, want 6: %q", i, len(f), l)
		}
		if f[0] != "c" || f[1] != "v1" || f[2] != want[i].scenario || f[3] != want[i].status || !strings.HasPrefix(f[5], want[i].detail) {
			t.Errorf("line %d is %q, want %s %s %q...", i, l, want[i].scenario, want[i].status, want[i].detail)
		}
	}
}
