package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gregor-io/gregor/broker"
)

// runHealth runs `gregor health` with args and returns its output and error.
func runHealth(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCmd(process{})
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"health"}, args...))
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

func TestHealthStatuses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			http.Error(w, "not ready: log dir /data offline", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	}))
	defer srv.Close()

	out, err := runHealth(t, "--url", srv.URL+"/healthz")
	if err != nil || !strings.Contains(out, "200 OK: ok") {
		t.Errorf("health of a 200: output %q, error %v; want 200 OK: ok and no error", out, err)
	}
	_, err = runHealth(t, "--url", srv.URL+"/readyz")
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "log dir /data offline") {
		t.Errorf("health of a 503: error %v; want one naming the status and the body", err)
	}

	// A port nothing listens on: the dial fails.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := runHealth(t, "--url", "http://"+addr+"/readyz", "--timeout", "2s"); err == nil {
		t.Errorf("health of a closed port: no error")
	}
}

// TestHealthBroker probes a running broker's /readyz and /healthz.
func TestHealthBroker(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *broker.Config) { c.AdminListener = "127.0.0.1:0" })
	for _, path := range []string{"/readyz", "/healthz"} {
		if out, err := runHealth(t, "--url", "http://"+b.AdminAddr()+path); err != nil || !strings.Contains(out, "200 OK") {
			t.Errorf("health %s of a started broker: output %q, error %v; want 200 OK", path, out, err)
		}
	}
}
