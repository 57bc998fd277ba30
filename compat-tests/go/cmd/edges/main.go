// Command edges sends the edge-case request frames of package edges to
// brokers. With -record it sends them to Apache Kafka and writes Kafka's
// outcomes, the file the compat lab's null-edges scenario compares
// against; the cases are those of the API versions both brokers serve.
// Without it, it sends the recorded cases to -bootstrap and prints each
// outcome that differs from Kafka's.
//
//	edges -record FILE -kafka HOST:PORT -gregor HOST:PORT
//	edges -bootstrap HOST:PORT [-expected FILE]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gregor-io/gregor/compat-tests/go/internal/edges"
)

func main() {
	var (
		record    = flag.String("record", "", "write Kafka's outcomes to this file")
		kafka     = flag.String("kafka", "", "Apache Kafka's address, with -record")
		gregor    = flag.String("gregor", "", "Gregor's address, with -record: its versions bound the cases")
		bootstrap = flag.String("bootstrap", "", "broker to check against the recorded outcomes")
		expected  = flag.String("expected", "", "recorded outcomes (default: the file built in)")
	)
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := run(ctx, *record, *kafka, *gregor, *bootstrap, *expected); err != nil {
		fmt.Fprintf(os.Stderr, "edges: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, record, kafka, gregor, bootstrap, expected string) error {
	if record != "" {
		if kafka == "" || gregor == "" {
			return fmt.Errorf("-record needs -kafka and -gregor")
		}
		ks, err := edges.Served(ctx, kafka)
		if err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		gs, err := edges.Served(ctx, gregor)
		if err != nil {
			return fmt.Errorf("gregor: %w", err)
		}
		cases := edges.Cases(edges.Intersect(ks, gs))
		if err := edges.Warm(ctx, kafka); err != nil {
			return err
		}
		out, err := edges.Run(ctx, kafka, cases)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		header := "The answers of Apache Kafka (the compat lab's reference broker, compat-tests/kafka/kafka.sh)\n" +
			"to the edge-case frames of compat-tests/go/internal/edges,\n" +
			"recorded by `go run ./cmd/edges -record` (see compat-tests/go/README.md).\n" +
			"api key, version, variant, outcome"
		if err := edges.Write(&buf, header, cases, out); err != nil {
			return err
		}
		fmt.Printf("%d cases recorded\n", len(cases))
		return os.WriteFile(record, buf.Bytes(), 0o644)
	}
	if bootstrap == "" {
		return fmt.Errorf("-bootstrap or -record is required")
	}
	exp, err := edges.Load(expected)
	if err != nil {
		return err
	}
	if err := edges.Warm(ctx, bootstrap); err != nil {
		return err
	}
	diffs, err := edges.Check(ctx, bootstrap, exp)
	if err != nil {
		return err
	}
	for _, d := range diffs {
		fmt.Println(d)
	}
	fmt.Printf("%d of %d cases differ from Kafka\n", len(diffs), len(exp.Cases))
	return nil
}
