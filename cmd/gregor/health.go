package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// defaultHealthURL is the readiness endpoint of a broker serving its admin
// HTTP server on the default admin.listener port.
const defaultHealthURL = "http://127.0.0.1:9644/readyz"

// newHealthCmd returns the health command: an HTTP probe for places that
// have nothing else to probe with, such as the HEALTHCHECK of a container
// image built FROM scratch, which has no shell and no curl.
func newHealthCmd() *cobra.Command {
	var (
		url     string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Probe a broker's admin HTTP server: exit 0 on a 2xx answer, 1 otherwise",
		Long: `Probe a broker's admin HTTP server with a GET of --url (its /readyz by
default; /healthz says only that the process is up). The status and the
start of the body are printed; the exit status is 0 on a 2xx answer and 1
on any other status, a connection failure or no answer within --timeout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return probe(cmd.Context(), cmd.OutOrStdout(), url, timeout)
		},
	}
	cmd.Flags().StringVar(&url, "url", defaultHealthURL, "`URL` to GET")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "give up after this `DURATION`")
	return cmd
}

// probe GETs url and writes the status line and the first line of the
// body to w. A status outside 2xx is an error that carries them.
func probe(ctx context.Context, w io.Writer, url string, timeout time.Duration) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if err != nil {
		return fmt.Errorf("health: read %s: %w", url, err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	msg := fmt.Sprintf("%s: %s", url, resp.Status)
	if first != "" {
		msg += ": " + first
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errors.New("health: " + msg)
	}
	fmt.Fprintln(w, msg)
	return nil
}
