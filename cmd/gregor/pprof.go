//go:build pprof

package main

import (
	"log"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
)

// A binary built with -tags pprof serves Go's profiler at $GREGOR_PPROF
// (host:port), for profiling a running broker under load.
func init() {
	addr := os.Getenv("GREGOR_PPROF")
	if addr == "" {
		return
	}
	go func() {
		log.Printf("pprof on %s: %v", addr, http.ListenAndServe(addr, nil))
	}()
}
