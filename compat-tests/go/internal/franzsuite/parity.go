package franzsuite

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	addr := t.Brokers()[0]
	if len(t.Brokers()) > 1 {
		cctx, cancel := t.Step(ctx, "find the coordinator of the empty group id")
		defer cancel()
		if addr, err = s.emptyGroupCoordinator(cctx, t); err != nil {
			return "", err
		}
	}
	wctx, cancel := t.Step(ctx, "warm up")
	defer cancel()
	if err := edges.Warm(wctx, addr); err != nil {
		return "", err
	}
	sctx, cancel := t.Step(ctx, fmt.Sprintf("send %d frames", len(exp.Cases)))
	defer cancel()
	diffs, err := edges.Check(sctx, addr, exp)
	if err != nil {
		return "", err
	}
	if len(diffs) > 0 {
		shown := diffs[:min(len(diffs), 5)]
		return "", fmt.Errorf("%d of %d frames answered unlike Kafka: %s", len(diffs), len(exp.Cases), strings.Join(shown, "; "))
	}
	return fmt.Sprintf("%d frames answered as Kafka answers them", len(exp.Cases)), nil
}

// emptyGroupCoordinator is the address of the broker that coordinates the
// empty group id, the group of every frame that names one (the frames are
// empty, null or cut requests). On a cluster null-edges sends its frames
// there: every other broker answers their group requests NOT_COORDINATOR,
// which one broker never does.
func (s *suite) emptyGroupCoordinator(ctx context.Context, t *compat.T) (string, error) {
	cl, err := s.client(t)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = ""
		req.CoordinatorKeys = []string{""}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			code, host, port := resp.ErrorCode, resp.Host, resp.Port
			if len(resp.Coordinators) > 0 {
				c := resp.Coordinators[0]
				code, host, port = c.ErrorCode, c.Host, c.Port
			}
			if err = kerr.ErrorForCode(code); err == nil {
				return net.JoinHostPort(host, strconv.Itoa(int(port))), nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("coordinator of the empty group id: %w (last: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
