package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// This file holds what the client commands (topic, group, produce,
// consume, cluster, bench) share: the flags that say which cluster to talk
// to and how to print, and the construction of franz-go clients. Nothing
// here is specific to Gregor: the commands work against any
// Kafka-compatible cluster.

// bootstrapEnv names the environment variable that replaces the default
// of --bootstrap-server. serve does not read it, and does not warn about it.
const bootstrapEnv = envPrefix + "_BOOTSTRAP_SERVER"

// cliEnvVars are the GREGOR_ variables the client commands read.
var cliEnvVars = []string{bootstrapEnv}

const defaultBootstrap = "localhost:9092"

// clientOptions are the flags every client command has. Each top-level
// client command defines them as persistent flags, so that they are not
// listed under serve.
type clientOptions struct {
	bootstrap string
	// bootstrapFlag is --bootstrap-server's flag, to tell whether it was
	// given: given, it wins over the command config's bootstrap.servers.
	bootstrapFlag *pflag.Flag
	// commandConfig is the --command-config file, "" for none.
	commandConfig string
	json          bool
	// timeout bounds admin commands (topic, group, cluster); 0 means none.
	timeout time.Duration
	// cmd is the command the flags are defined on, whose stderr takes
	// the command config's warnings.
	cmd *cobra.Command
	// settings is the command config once read: a command that builds
	// several clients reads it, and warns, once.
	settings *clientSettings
}

// addFlags defines --bootstrap-server, --command-config and --json on cmd
// and its subcommands.
func (o *clientOptions) addFlags(cmd *cobra.Command) {
	def := os.Getenv(bootstrapEnv)
	if def == "" {
		def = defaultBootstrap
	}
	o.cmd = cmd
	fs := cmd.PersistentFlags()
	fs.StringVarP(&o.bootstrap, "bootstrap-server", "b", def,
		"comma-separated `HOST:PORT` list of brokers to connect to (env "+bootstrapEnv+")")
	o.bootstrapFlag = fs.Lookup("bootstrap-server")
	fs.StringVar(&o.commandConfig, "command-config", "",
		"read client settings (security.protocol, sasl.*, ssl.*, bootstrap.servers, ...) from the Java properties `FILE` Kafka's tools take")
	fs.BoolVar(&o.json, "json", false, "print JSON for scripts instead of tables and text")
}

// addTimeoutFlag defines --timeout, the deadline of an admin command.
func (o *clientOptions) addTimeoutFlag(cmd *cobra.Command) {
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", 30*time.Second,
		"give up when the cluster has not answered after this long (0: wait forever)")
}

// clientSettings reads --command-config the first time it is called,
// printing its warnings on stderr; without the flag the settings are
// empty.
func (o *clientOptions) clientSettings() (*clientSettings, error) {
	if o.settings != nil {
		return o.settings, nil
	}
	if o.commandConfig == "" {
		o.settings = &clientSettings{}
		return o.settings, nil
	}
	s, err := loadCommandConfig(o.commandConfig)
	if err != nil {
		return nil, err
	}
	if o.cmd != nil {
		for _, w := range s.warnings {
			fmt.Fprintln(o.cmd.ErrOrStderr(), "gregor: warning:", w)
		}
	}
	o.settings = s
	return s, nil
}

// seeds returns the brokers to bootstrap from: those of
// --bootstrap-server when it is given, else the command config's
// bootstrap.servers, else --bootstrap-server's default (its environment
// variable or localhost:9092).
func (o *clientOptions) seeds(s *clientSettings) ([]string, error) {
	if len(s.bootstrap) > 0 && (o.bootstrapFlag == nil || !o.bootstrapFlag.Changed) {
		return s.bootstrap, nil
	}
	seeds := parseList(o.bootstrap)
	if len(seeds) == 0 {
		return nil, fmt.Errorf("--bootstrap-server is empty")
	}
	return seeds, nil
}

// newClient returns a kgo client for the brokers of --bootstrap-server,
// with the settings of --command-config and then the options given.
func (o *clientOptions) newClient(opts ...kgo.Opt) (*kgo.Client, error) {
	s, err := o.clientSettings()
	if err != nil {
		return nil, err
	}
	seeds, err := o.seeds(s)
	if err != nil {
		return nil, err
	}
	all := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("gregor-cli")}, s.opts()...)
	all = append(all, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if s.tls != nil || s.mechanism != "" {
		limit := authCheckTimeout
		if o.timeout > 0 {
			limit = min(limit, o.timeout)
		}
		if err := checkAuthentication(cl, limit, s.tls != nil); err != nil {
			cl.Close()
			return nil, err
		}
	}
	return cl, nil
}

// authCheckTimeout bounds checkAuthentication's wait for a broker, or
// --timeout when that is shorter.
const authCheckTimeout = 15 * time.Second

// checkAuthentication asks a broker for metadata, to find out before
// the command starts whether the client's TLS and SASL settings are
// accepted. Kafka's clients take a failed authentication as fatal; kgo
// retries it, so that without this check a producer with a wrong
// password would wait for metadata forever. Any other error is left for
// the command to meet, as it would without a command config; but with
// TLS on, a broker that closes the connection as soon as it is dialled
// fails the TLS handshake, fatal in Kafka's clients too (most often it
// does not expect TLS on that port).
func checkAuthentication(cl *kgo.Client, limit time.Duration, tlsOn bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	err := cl.Ping(ctx)
	var (
		verify *tls.CertificateVerificationError
		alert  tls.AlertError
		record tls.RecordHeaderError // TLS to a listener without it
		eof    *kgo.ErrFirstReadEOF
	)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.UnsupportedSaslMechanism),
		errors.Is(err, kerr.IllegalSaslState), errors.As(err, &verify), errors.As(err, &alert), errors.As(err, &record),
		tlsOn && errors.As(err, &eof):
		return fmt.Errorf("authenticate: %w", err)
	}
	return nil
}

// admin is a kadm client, its kgo client and the context of one admin
// command, bounded by --timeout.
type admin struct {
	*kadm.Client
	kgo *kgo.Client
	ctx context.Context
	// close closes the client and ends the context.
	close func()
}

// newAdmin connects for an admin command run by cmd.
func (o *clientOptions) newAdmin(cmd *cobra.Command) (*admin, error) {
	cl, err := o.newClient()
	if err != nil {
		return nil, err
	}
	ctx, cancel := cmd.Context(), context.CancelFunc(func() {})
	if o.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
	}
	return &admin{
		Client: kadm.NewClient(cl),
		kgo:    cl,
		ctx:    ctx,
		close:  func() { cancel(); cl.Close() },
	}, nil
}

// interruptible returns a context that the first SIGINT or SIGTERM ends,
// for the commands that run until the user stops them (consume, produce,
// bench): they then finish their work (flush, commit, report). The first
// signal also restores the default handling, so that a second one ends
// the process at once. stop ends the context and the signal handling.
func interruptible(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			signal.Stop(sigs)
			cancel()
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(done)
			signal.Stop(sigs)
			cancel()
		})
	}
}

// parseKeyValues parses key=value pairs, as -c and -H take them.
func parseKeyValues(flag string, kvs []string) ([][2]string, error) {
	out := make([][2]string, 0, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want key=value", flag, kv)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// parsePartitions parses a comma-separated list of partition numbers.
func parsePartitions(s string) ([]int32, error) {
	var out []int32
	for _, f := range parseList(s) {
		p, err := strconv.ParseInt(f, 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("partition %q: want a number >= 0", f)
		}
		out = append(out, int32(p))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no partitions in %q", s)
	}
	return out, nil
}

// parseAcks parses --acks.
func parseAcks(s string) (kgo.Acks, error) {
	switch s {
	case "all", "-1":
		return kgo.AllISRAcks(), nil
	case "1":
		return kgo.LeaderAck(), nil
	case "0":
		return kgo.NoAck(), nil
	}
	return kgo.Acks{}, fmt.Errorf("--acks %q: want all, 1 or 0", s)
}

// parseCompression parses --compression.
func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch s {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

// producerOpts are the kgo options of --acks and --compression, and of
// inflight produce requests per broker when that is more than 0. Only
// acks=all can be idempotent, and an idempotent producer keeps its own
// bound (5), so inflight applies to acks 1 and 0.
func producerOpts(acks, compression string, inflight int) ([]kgo.Opt, error) {
	a, err := parseAcks(acks)
	if err != nil {
		return nil, err
	}
	c, err := parseCompression(compression)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{kgo.RequiredAcks(a), kgo.ProducerBatchCompression(c)}
	if a != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
		if inflight > 0 {
			opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(inflight))
		}
	}
	return opts, nil
}

// completeTopics completes topic names for shell completion.
func completeTopics(o *clientOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		a, err := o.completionAdmin(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer a.close()
		ts, err := a.ListTopics(a.ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return ts.Names(), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeGroups completes group names for shell completion.
func completeGroups(o *clientOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		a, err := o.completionAdmin(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer a.close()
		gs, err := a.ListGroups(a.ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return gs.Groups(), cobra.ShellCompDirectiveNoFileComp
	}
}

// completionAdmin is an admin client with a short deadline: completion
// must not hang the shell when no cluster is there.
func (o *clientOptions) completionAdmin(cmd *cobra.Command) (*admin, error) {
	c := *o
	c.timeout = 2 * time.Second
	c.cmd = nil // no command config warnings in the middle of a completion
	return c.newAdmin(cmd)
}
