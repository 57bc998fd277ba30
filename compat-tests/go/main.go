// Command gocompat runs the Go clients' compatibility scenarios (franz-go,
// Sarama, segmentio/kafka-go) against a Kafka broker and writes one result
// line per scenario, as compat-tests/README.md describes. run.sh runs it once
// per client.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gregor-io/gregor/compat-tests/go/internal/compat"
	"github.com/gregor-io/gregor/compat-tests/go/internal/franzsuite"
	"github.com/gregor-io/gregor/compat-tests/go/internal/kafkagosuite"
	"github.com/gregor-io/gregor/compat-tests/go/internal/saramasuite"
)

// client is one client library and its scenarios.
type client struct {
	module    string
	scenarios func(log io.Writer, debug bool) []compat.Scenario
}

var clients = map[string]client{
	"franz-go": {franzsuite.Module, franzsuite.Scenarios},
	"sarama":   {saramasuite.Module, saramasuite.Scenarios},
	"kafka-go": {kafkagosuite.Module, kafkagosuite.Scenarios},
}

func main() {
	var (
		name      = flag.String("client", "", "client to run: franz-go, sarama or kafka-go")
		bootstrap = flag.String("bootstrap", "", "broker address, host:port, or a comma-separated list of a cluster's")
		prefix    = flag.String("prefix", os.Getenv("COMPAT_PREFIX"), "start of every topic and group name")
		results   = flag.String("results", os.Getenv("COMPAT_RESULTS"), "file the result lines are appended to; empty for stdout")
		only      = flag.String("only", "", "comma-separated scenarios to run (default all)")
		debug     = flag.Bool("debug", false, "log the client's debug output to stderr")
		list      = flag.Bool("list", false, "print the client's version and scenario names, one a line, and exit")
	)
	flag.Parse()
	c, ok := clients[*name]
	if !ok {
		fmt.Fprintf(os.Stderr, "gocompat: -client must be one of franz-go, sarama, kafka-go; got %q\n", *name)
		os.Exit(2)
	}
	version := compat.Version(c.module)
	scenarios := c.scenarios(os.Stderr, *debug)
	if *only != "" {
		keep := strings.Split(*only, ",")
		scenarios = slices.DeleteFunc(scenarios, func(s compat.Scenario) bool { return !slices.Contains(keep, s.Name) })
	}
	if *list {
		fmt.Println(version)
		for _, s := range scenarios {
			fmt.Println(s.Name)
		}
		return
	}
	if *bootstrap == "" || *prefix == "" {
		fmt.Fprintln(os.Stderr, "gocompat: -bootstrap and -prefix (or COMPAT_PREFIX) are required")
		os.Exit(2)
	}
	var out io.Writer = os.Stdout
	if *results != "" {
		f, err := compat.ResultFile(*results)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gocompat: %v\n", err)
			os.Exit(1)
		}
		defer f.Close()
		out = f
	}
	sec, err := compat.SecurityFromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "gocompat: %v\n", err)
		os.Exit(2)
	}
	suite := &compat.Suite{
		Client:    *name,
		Version:   version,
		Bootstrap: *bootstrap,
		Prefix:    *prefix,
		Out:       out,
		Log:       os.Stderr,
		Skip: func(scenario string) string {
			switch {
			case sec.Mode == "" || (*name != "kafka-go" && sec.Covers(scenario)):
				return ""
			case *name == "kafka-go":
				return "not run over " + sec.Mode + " (the secure runs cover franz-go and Sarama)"
			default:
				return "not run over " + sec.Mode + " (produce/consume/group scenarios only)"
			}
		},
	}
	suite.Run(context.Background(), scenarios)
}
