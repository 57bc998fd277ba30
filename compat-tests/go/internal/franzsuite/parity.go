package franzsuite

import (
	"context"
	"fmt"
	"strings"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
	"github.com/gregor-io/gregor/compat-tests/go/internal/edges"
)

// nullEdges sends the broker the edge-case frames of package edges (every
// API version it shares with Kafka: each request empty, with one field
// null, truncated, with a byte too many) and compares what it does with
// each, answer and error codes or a closed connection, with what Apache
// Kafka 4.4 did, as recorded in the edges package.
func (s *suite) nullEdges(ctx context.Context, t *compat.T) (string, error) {
	exp, err := edges.Load("")
	if err != nil {
		return "", err
	}
	wctx, cancel := t.Step(ctx, "warm up")
	defer cancel()
	if err := edges.Warm(wctx, t.Bootstrap); err != nil {
		return "", err
	}
	sctx, cancel := t.Step(ctx, fmt.Sprintf("send %d frames", len(exp.Cases)))
	defer cancel()
	diffs, err := edges.Check(sctx, t.Bootstrap, exp)
	if err != nil {
		return "", err
	}
	if len(diffs) > 0 {
		shown := diffs[:min(len(diffs), 5)]
		return "", fmt.Errorf("%d of %d frames answered unlike Kafka: %s", len(diffs), len(exp.Cases), strings.Join(shown, "; "))
	}
	return fmt.Sprintf("%d frames answered as Kafka answers them", len(exp.Cases)), nil
}
