package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/gregor-io/gregor/broker"
)

const serveLong = `Run a Gregor broker.

Settings are Kafka's broker configs, by Kafka's names and with Kafka's
meanings, plus a few of Gregor's own (admin.listener, etcd.*, log.level,
log.format). Each is read from, in increasing precedence:

  1. the defaults below (a single node on localhost:9092, data in ./data);
  2. the YAML file given with --config, one dotted key per line:
       node.id: 1
       listeners: PLAINTEXT://localhost:9092
       log.dirs: ./data
       log.retention.hours: 24
  3. environment variables GREGOR_<KEY>, the key upper-cased with dots and
     dashes as underscores: GREGOR_NODE_ID, GREGOR_LOG_DIRS, GREGOR_LISTENERS;
  4. flags named like the keys: --node.id, --log.dirs, --listeners.

Lists (listeners, log.dirs, etcd.endpoints, ...) are comma-separated, or YAML
lists in the file. When one setting is given under several names
(log.retention.ms and log.retention.hours, log.dirs and log.dir) in
different places, the names from the place of highest precedence count and
the others are dropped; within one place Kafka's order applies (log.dirs
before log.dir, log.retention.ms before .minutes before .hours).

Topic defaults are the broker configs that topics fall back to when they do
not set the topic config themselves (log.retention.hours for retention.ms,
log.segment.bytes for segment.bytes, compression.type, min.insync.replicas,
...). Keys Gregor does not read are ignored with a warning.

Durability: Gregor acknowledges a write only after it is fsynced, with group
commit, so concurrent producers share fsyncs. Its default is therefore
log.flush.interval.messages=1, where Kafka's is 9223372036854775807 (leave
flushing to the page cache and rely on replication). Set
log.flush.interval.messages (or a topic's flush.messages) to
9223372036854775807 to get Kafka's behaviour.

With no etcd.endpoints, serve starts an embedded etcd member in the first
log dir on etcd.client.addr and etcd.peer.addr: a member of its own, or,
with etcd.initial.cluster, one of the members that several brokers embed
(three, say: the cluster needs no other process, and serves while a
majority of them run). The admin HTTP server
(admin.listener) serves /metrics (Prometheus), /healthz (the process is up)
and /readyz (200 once the logs are recovered and the listeners bound, 503
before that and while shutting down).

SIGINT or SIGTERM shuts the broker down cleanly, so that the next start
skips log recovery; a second signal exits at once with status 1.`

// newServeCmd returns the serve command.
func newServeCmd(p process) *cobra.Command {
	l := newConfigLoader()
	l.addListenerFlags(p.args)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a broker",
		Long:  serveLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := l.load()
			if err != nil {
				return fmt.Errorf("config: %w", err)
			}
			return serve(cmd.Context(), c, cmd.ErrOrStderr(), p)
		},
	}
	// --help is defined here so that the help lists it with the other flags.
	l.own.BoolP("help", "h", false, "help for serve")
	cmd.Flags().AddFlagSet(l.own)
	cmd.Flags().AddFlagSet(l.topic)
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		w := c.OutOrStderr()
		fmt.Fprintf(w, "Usage:\n  %s\n\nFlags:\n%s\nTopic defaults (Kafka broker configs topics fall back to):\n%s",
			c.UseLine(), l.own.FlagUsages(), l.topic.FlagUsages())
		if c.HasAvailableInheritedFlags() {
			fmt.Fprintf(w, "\nGlobal Flags:\n%s", c.InheritedFlags().FlagUsages())
		}
		return nil
	})
	return cmd
}

// serve runs a broker with c until ctx ends or a signal arrives.
func serve(ctx context.Context, c serveConfig, stderr io.Writer, p process) error {
	logger := newLogger(stderr, c.logLevel, c.logFormat)
	for _, w := range c.warnings {
		logger.Warn(w)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	cfg := c.broker
	cfg.Logger, cfg.Registerer, cfg.Gatherer = logger, reg, reg
	b, err := broker.New(cfg)
	if err != nil {
		return err
	}

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return run(ctx, b, sigs, logger, p.exit, func() {
		if a := b.AdminAddr(); a != "" {
			logger.Info("admin HTTP server listening", "addr", a, "paths", "/metrics /healthz /readyz")
		}
		if p.started != nil {
			p.started(b)
		}
	})
}

// server is what run needs of a broker.
type server interface {
	Start(ctx context.Context) error
	Close() error
}

// run starts s and closes it after the first signal from sigs, or when ctx
// ends. A signal during Start cancels the start. A second signal calls
// exit(1) at once, without waiting for the shutdown to finish. started runs
// once s serves.
func run(ctx context.Context, s server, sigs <-chan os.Signal, logger *slog.Logger, exit func(code int), started func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		mu  sync.Mutex
		sig os.Signal // the first signal, once it came
	)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				mu.Lock()
				first := sig == nil
				if first {
					sig = s
				}
				mu.Unlock()
				if first {
					logger.Info("shutting down", "signal", s.String())
					cancel()
					continue
				}
				logger.Error("second signal: exiting without a clean shutdown", "signal", s.String())
				exit(1)
				return
			}
		}
	}()
	signaled := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return sig != nil
	}

	if err := s.Start(ctx); err != nil {
		// Start has closed what it started.
		if signaled() {
			logger.Info("stopped before the broker started", "err", err)
			return nil
		}
		return fmt.Errorf("start broker: %w", err)
	}
	started()
	<-ctx.Done()
	if !signaled() {
		logger.Info("shutting down", "reason", context.Cause(ctx).Error())
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	logger.Info("shut down cleanly")
	return nil
}

// newLogger returns the slog logger everything logs to: text or JSON on w.
func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
