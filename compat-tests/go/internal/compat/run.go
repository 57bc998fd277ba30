package compat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"
)

// Timeouts shared by every scenario. The machine running the lab is small
// and shared, so they are generous: a healthy broker answers each step in
// well under a second.
const (
	// ScenarioTimeout bounds a whole scenario; a scenario still running then
	// is reported as failed and left behind.
	ScenarioTimeout = 120 * time.Second
	// StepTimeout bounds one step (produce all, consume all, one admin call).
	StepTimeout = 60 * time.Second
)

// Scenario is one named check of a client against the broker.
type Scenario struct {
	Name string
	// Run does the scenario; it returns a short summary (counts) on success
	// and an error naming what differed on failure.
	Run func(ctx context.Context, t *T) (string, error)
}

// T is a running scenario's context: where the broker is, how to name what
// it creates, and which step it is in, so that a timeout says where it hung.
type T struct {
	// Bootstrap is the suite's argument: one host:port, or a
	// comma-separated list of them when the lab runs a cluster.
	Bootstrap string
	Client    string
	Scenario  string
	prefix    string
	log       io.Writer
	start     time.Time
	step      atomic.Pointer[string]
}

// Step records the step the scenario is entering and returns a context
// bounded by StepTimeout for it.
func (t *T) Step(ctx context.Context, name string) (context.Context, context.CancelFunc) {
	t.step.Store(&name)
	fmt.Fprintf(t.log, "    %6.2fs %s\n", time.Since(t.start).Seconds(), name)
	return context.WithTimeout(ctx, StepTimeout)
}

// Name returns a topic or group name unique to this run, client, scenario
// and suffix; it starts with the run's prefix (COMPAT_PREFIX).
func (t *T) Name(suffix string) string {
	n := t.prefix + "-" + t.Client + "-" + t.Scenario
	if suffix != "" {
		n += "-" + suffix
	}
	return n
}

// Brokers is Bootstrap split into its addresses, as clients that take a
// list of seed brokers want it.
func (t *T) Brokers() []string {
	return strings.Split(t.Bootstrap, ",")
}

func (t *T) currentStep() string {
	if s := t.step.Load(); s != nil {
		return *s
	}
	return "start"
}

// Suite runs one client's scenarios and writes their result lines.
type Suite struct {
	Client    string
	Version   string
	Bootstrap string
	Prefix    string
	// Out receives one result line per scenario, each in a single Write.
	Out io.Writer
	// Log receives progress for a person reading the suite's log.
	Log io.Writer
	// Skip, when set, says why a scenario is not run ("" to run it); the
	// scenario is reported with status skip and that reason.
	Skip func(scenario string) string
}

// Run runs the scenarios one after another. A scenario that fails, panics or
// times out is reported and the next one runs.
func (s *Suite) Run(ctx context.Context, scenarios []Scenario) {
	for _, sc := range scenarios {
		t := &T{Bootstrap: s.Bootstrap, Client: s.Client, Scenario: sc.Name, prefix: s.Prefix, log: s.Log, start: time.Now()}
		fmt.Fprintf(s.Log, "=== %s %s\n", s.Client, sc.Name)
		status, detail := "skip", ""
		if s.Skip != nil {
			detail = s.Skip(sc.Name)
		}
		if detail == "" {
			summary, err := runOne(ctx, sc, t)
			status, detail = "pass", summary
			if err != nil {
				status, detail = "fail", err.Error()
			}
		}
		secs := time.Since(t.start).Seconds()
		line := strings.Join([]string{s.Client, s.Version, sc.Name, status, fmt.Sprintf("%.2f", secs), clean(detail)}, "\t") + "\n"
		fmt.Fprintf(s.Log, "--- %s", line)
		if _, werr := io.WriteString(s.Out, line); werr != nil {
			fmt.Fprintf(s.Log, "writing result: %v\n", werr)
		}
	}
}

// errTimeout marks a scenario abandoned at ScenarioTimeout.
var errTimeout = errors.New("compat: scenario timed out")

func runOne(ctx context.Context, sc Scenario, t *T) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ScenarioTimeout)
	defer cancel()
	type result struct {
		summary string
		err     error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("%s: panic: %v [%s]", t.currentStep(), p, panicSite())}
			}
		}()
		summary, err := sc.Run(ctx, t)
		if err != nil {
			err = fmt.Errorf("%s: %w", t.currentStep(), err)
		}
		done <- result{summary, err}
	}()
	select {
	case r := <-done:
		return r.summary, r.err
	case <-ctx.Done():
		// Give the scenario a moment to return its own, more precise error
		// for the expired context; a client stuck past that is abandoned.
		select {
		case r := <-done:
			return r.summary, r.err
		case <-time.After(5 * time.Second):
			return "", fmt.Errorf("%s: %w after %s and did not return", t.currentStep(), errTimeout, ScenarioTimeout)
		}
	}
}

// panicSite returns the innermost frame of the panicking goroutine outside
// the runtime (function and file:line), for a one-line reason.
func panicSite() string {
	lines := strings.Split(string(debug.Stack()), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "panic(") {
			continue
		}
		for j := i + 2; j+1 < len(lines); j += 2 {
			if !strings.HasPrefix(lines[j], "runtime.") {
				fn, at := lines[j], strings.TrimSpace(lines[j+1])
				if k := strings.LastIndex(at, " +0x"); k > 0 {
					at = at[:k]
				}
				return fn + " at " + at
			}
		}
	}
	return "no stack"
}

// clean makes a detail fit the result line: one line, no tabs, bounded.
func clean(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const limit = 600
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return s
}

// Poll calls cond until it reports done, returns an error, or ctx ends; it
// returns the last reason cond gave for not being done when ctx ends. cond
// says why it is not done yet so that a timeout explains itself.
func Poll(ctx context.Context, every time.Duration, cond func(ctx context.Context) (done bool, why string, err error)) error {
	for {
		done, why, err := cond(ctx)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w while waiting: %s", ctx.Err(), why)
		case <-time.After(every):
		}
	}
}

// Version returns the version of module path as built into this binary.
func Version(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}

// ResultFile opens the results file for appending.
func ResultFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

// Eventually calls check until it returns nil or ctx ends, then returns
// check's last error. It is for state a broker may publish asynchronously
// (Kafka's KRaft brokers apply topic and config changes from the metadata
// log a moment after the admin request is answered).
func Eventually(ctx context.Context, check func(ctx context.Context) error) error {
	var last error
	err := Poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		last = check(ctx)
		return last == nil, fmt.Sprint(last), nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (still after %s)", last, StepTimeout)
	}
	return err
}

// Said renders an error a broker answered for a failure's reason, where
// nil (success) may be the surprise.
func Said(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
