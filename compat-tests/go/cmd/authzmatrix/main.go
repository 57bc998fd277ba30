// Command authzmatrix is the authorization matrix of the security work: for
// each Kafka API that the StandardAuthorizer checks, it sends the raw request
// (kmsg, on one pinned connection) as an ordinary SASL/PLAIN principal, once
// with no ACL at all and once with exactly the ACLs Kafka's documentation says
// the operation needs (for some, also with part of them, or with one of two
// alternatives), and prints the error codes the broker answered, per topic,
// partition, group or resource where the response has several, and the
// authorized-operations fields where the response has them.
//
// The same matrix runs unchanged against Gregor and against Apache Kafka 4.4
// (compat-tests/authz/run.sh starts each in turn); the two outputs must be
// equal, save the differences listed with a reason in
// compat-tests/authz/known-differences.tsv. `authzmatrix -compare` does that
// comparison.
//
// The broker must be set up as the lab sets both up: a listener on which the
// harness's admin is a super user (PLAINTEXT, whose ANONYMOUS principal is in
// super.users), a SASL_PLAINTEXT listener with PLAIN and the user bob, and
// StandardAuthorizer with allow.everyone.if.no.acl.found false. The admin
// creates every resource the matrix uses (topics, groups with committed
// offsets, a transactional id with an open producer) and, for each case,
// creates its ACLs, waits until DescribeAcls shows them, sends bob's request,
// and deletes every ACL again, waiting until none is left.
//
// Output: one tab-separated line per (API, case), in the order of the table
// in checks.go: api, case, the ACLs granted, the result. The result lists
// key=value pairs, the value an error name (NONE for 0) or, for ops=, the
// authorized operations as names; a request that gets no answer shows as
// err=<class>.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	var (
		admin    = flag.String("admin", "", "host:port of the listener on which the admin (ANONYMOUS) is a super user")
		saslAddr = flag.String("sasl", "", "host:port of the SASL_PLAINTEXT listener")
		user     = flag.String("user", "bob", "the principal under test (SASL/PLAIN user)")
		password = flag.String("password", "bob-secret", "its password")
		out      = flag.String("out", "", "file to write the matrix to (default stdout)")
		only     = flag.String("only", "", "run only the APIs whose name contains this")
		compare  = flag.Bool("compare", false, "compare two outputs: authzmatrix -compare [-known FILE] GREGOR.tsv KAFKA.tsv")
		known    = flag.String("known", "", "with -compare: the known differences (api, case, reason; tab-separated)")
		timeout  = flag.Duration("timeout", 10*time.Minute, "bound on the whole run")
	)
	flag.Parse()
	if *compare {
		if flag.NArg() != 2 {
			fatalf("usage: authzmatrix -compare [-known FILE] GREGOR.tsv KAFKA.tsv")
		}
		ok, err := compareFiles(os.Stdout, flag.Arg(0), flag.Arg(1), *known)
		if err != nil {
			fatalf("%v", err)
		}
		if !ok {
			os.Exit(1)
		}
		return
	}
	if *admin == "" || *saslAddr == "" {
		fatalf("-admin and -sasl are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	e, err := newEnv(ctx, *admin, *saslAddr, *user, *password)
	if err != nil {
		fatalf("%v", err)
	}
	defer e.close()
	if err := e.setup(ctx); err != nil {
		fatalf("setup: %v", err)
	}

	w := os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fatalf("%v", err)
		}
		defer f.Close()
		w = f
	}
	rows := 0
	for _, c := range checks() {
		if *only != "" && !strings.Contains(c.api, *only) {
			continue
		}
		cases := append([]aclCase{{name: "none"}}, c.cases...)
		for _, ac := range cases {
			res, err := e.runCase(ctx, c, ac)
			if err != nil {
				fatalf("%s %s: %v", c.api, ac.name, err)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.api, ac.name, ac.describe(e), res)
			rows++
		}
	}
	fmt.Fprintf(os.Stderr, "authzmatrix: %d rows\n", rows)
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "authzmatrix: "+format+"\n", args...)
	os.Exit(2)
}
