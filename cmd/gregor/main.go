// Command gregor is Gregor's one binary: `gregor serve` runs a broker; the
// other commands are an admin and client CLI.
//
// The CLI (topic, group, produce, consume, cluster, bench) is built on
// franz-go's kgo and kadm, so it works against any Kafka-compatible
// cluster, Gregor or Apache Kafka. Its commands share --bootstrap-server
// (-b, or GREGOR_BOOTSTRAP_SERVER), --command-config (the client
// properties file of Kafka's tools: TLS, SASL, timeouts) and --json; they
// print tables for people and JSON for scripts. `gregor completion` writes shell completion
// scripts.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/gregor-io/gregor/broker"
)

// version is set at build time:
//
//	go build -ldflags "-X main.version=v0.1.0" ./cmd/gregor
var version = "dev"

// process is what the commands take from the process around them, so
// that tests can run them in-process.
type process struct {
	// exit ends the process; os.Exit.
	exit func(code int)
	// started, when set, is called once serve's broker serves.
	started func(b *broker.Broker)
	// args are the command line's arguments, for the flags serve defines
	// from them (per-listener settings); os.Args[1:].
	args []string
}

func main() {
	if err := newRootCmd(process{exit: os.Exit, args: os.Args[1:]}).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gregor:", err)
		os.Exit(1)
	}
}

// newRootCmd returns the gregor command with its subcommands.
func newRootCmd(p process) *cobra.Command {
	root := &cobra.Command{
		Use:   "gregor",
		Short: "Gregor, a Kafka-wire-compatible event-streaming broker",
		Long: `Gregor is a Kafka-wire-compatible event-streaming broker: existing Kafka
clients and tools work with it unchanged. A single node needs nothing else;
a cluster shares its metadata through etcd.`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true, // main prints them
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())
	})
	root.AddCommand(
		newServeCmd(p),
		newTopicCmd(),
		newProduceCmd(),
		newConsumeCmd(),
		newGroupCmd(),
		newClusterCmd(),
		newBenchCmd(),
		newHealthCmd(),
		newVersionCmd(),
	)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of gregor and of the Go it was built with",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), versionString())
		},
	}
}

// versionString is "gregor <version> (<go version> <os>/<arch>)". Without
// -ldflags, the module version go install recorded is used, if any.
func versionString() string {
	v := version
	if v == "dev" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	return fmt.Sprintf("gregor %s (%s %s/%s)", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
