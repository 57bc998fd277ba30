package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-io/gregor/broker"
)

// saslPlainConfig writes a command config that logs in to bootstrap with
// PLAIN as alice with password, and sets one property gregor does not
// use, acks.
func saslPlainConfig(t *testing.T, bootstrap, password string) string {
	t.Helper()
	return writeFile(t, t.TempDir(), "client.properties", fmt.Sprintf(`# as for kafka-topics --command-config
bootstrap.servers=%s
security.protocol=SASL_PLAINTEXT
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
    username="alice" \
    password="%s";
acks=all
`, bootstrap, password))
}

// TestCommandConfigSASL runs the client commands against a broker's
// SASL_PLAINTEXT listener with a --command-config for PLAIN: topics are
// created and listed, records produced and consumed; a wrong password is
// an authentication error. SCRAM-SHA-512 and OAUTHBEARER's unsecured
// tokens log in too.
func TestCommandConfigSASL(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *broker.Config) {
		c.Listeners = []string{"PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"}
		c.SASLEnabledMechanisms = []string{"PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"}
		c.ListenerConfigs = map[string]string{
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`,
			// Kafka's unsecured validator: unsigned tokens, with scope kafka.
			"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="kafka";`,
		}
	})
	saslAddr := b.Addrs()[1]
	good := saslPlainConfig(t, saslAddr, "alice-secret")
	const topic = "cc-sasl"

	run := func(stdin string, args ...string) (stdout, stderr string) {
		t.Helper()
		stdout, stderr, err := execArgs(t, stdin, args...)
		if err != nil {
			t.Fatalf("gregor %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
		}
		return stdout, stderr
	}

	// bootstrap.servers comes from the file.
	out, stderr := run("", "topic", "create", topic, "-p", "2", "--command-config", good)
	if want := "Created topic cc-sasl with 2 partitions, replication factor 1\n"; out != want {
		t.Errorf("topic create = %q, want %q", out, want)
	}
	if want := "gregor: warning: " + good + ": line 8: ignoring acks: not a setting gregor uses\n"; stderr != want {
		t.Errorf("topic create's stderr = %q, want the one warning %q", stderr, want)
	}
	out, _ = run("", "topic", "list", "--json", "--command-config", good)
	var ts []topicSummary
	if err := json.Unmarshal([]byte(out), &ts); err != nil {
		t.Fatalf("topic list --json: %v\n%s", err, out)
	}
	found := false
	for _, s := range ts {
		found = found || (s.Topic == topic && s.Partitions == 2)
	}
	if !found {
		t.Errorf("topic list = %+v, want %s with 2 partitions", ts, topic)
	}

	if _, stderr := run("one\ntwo\nthree\n", "produce", topic, "--partition", "1", "--command-config", good); !strings.Contains(stderr, "Produced 3 records") {
		t.Errorf("produce's stderr = %q, want 3 records produced", stderr)
	}
	// --bootstrap-server given wins over the file's bootstrap.servers.
	deadFile := saslPlainConfig(t, "127.0.0.1:1", "alice-secret")
	out, _ = run("", "consume", topic, "--offset", "start", "-n", "3", "--command-config", deadFile, "-b", saslAddr)
	if out != "one\ntwo\nthree\n" {
		t.Errorf("consume = %q, want the 3 records", out)
	}

	// A wrong password fails to authenticate, on an admin command and on
	// produce.
	bad := saslPlainConfig(t, saslAddr, "wrong")
	for _, args := range [][]string{
		{"topic", "list", "--timeout", "20s"},
		{"topic", "create", "cc-sasl-bad", "--timeout", "20s"},
		{"produce", topic},
		{"consume", topic, "-n", "1"},
	} {
		args = append(args, "--command-config", bad)
		stdout, stderr, err := execArgs(t, "x\n", args...)
		if err == nil || !strings.Contains(err.Error()+stderr, "SASL_AUTHENTICATION_FAILED") {
			t.Errorf("gregor %s with a wrong password: %v\nstdout:\n%s\nstderr:\n%s\nwant SASL_AUTHENTICATION_FAILED",
				strings.Join(args, " "), err, stdout, stderr)
		}
	}

	// TLS to the PLAINTEXT listener, and SASL to it, fail at once too.
	for name, props := range map[string]string{
		"SSL":            "security.protocol=SSL\n",
		"SASL_PLAINTEXT": "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=p;\n",
	} {
		file := writeFile(t, t.TempDir(), "c.properties", "bootstrap.servers="+b.Addrs()[0]+"\n"+props)
		start := time.Now()
		_, stderr, err := execArgs(t, "x\n", "produce", topic, "--command-config", file)
		if err == nil || !strings.Contains(err.Error(), "authenticate") {
			t.Errorf("produce with %s to a PLAINTEXT listener: %v\n%s\nwant an authentication error", name, err, stderr)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("produce with %s to a PLAINTEXT listener took %v to fail", name, d)
		}
	}

	// Without the command config the SASL listener does not answer.
	if _, _, err := execArgs(t, "", "topic", "list", "-b", saslAddr, "--timeout", "3s"); err == nil {
		t.Error("topic list on the SASL listener without credentials succeeded")
	}

	// SCRAM-SHA-512, as carol, whom an admin client adds through the
	// PLAINTEXT listener; the broker sees her shortly after.
	adm, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	res, err := kadm.NewClient(adm).AlterUserSCRAMs(t.Context(), nil,
		[]kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("add SCRAM user carol: %v", err)
	}
	scramFile := writeFile(t, t.TempDir(), "scram.properties", "bootstrap.servers="+saslAddr+`
security.protocol=SASL_PLAINTEXT
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="carol" password="carol-secret";
`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, stderr, err := execArgs(t, "scram\n", "produce", topic, "--partition", "0", "--command-config", scramFile)
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") || time.Now().After(deadline) {
			t.Fatalf("produce as carol with SCRAM-SHA-512: %v\n%s", err, stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, _ := run("", "consume", topic, "--partitions", "0", "--offset", "start", "-n", "1", "--command-config", scramFile); out != "scram\n" {
		t.Errorf("consume as carol = %q, want the record carol produced", out)
	}

	// OAUTHBEARER with Kafka's unsecured tokens, built from the login
	// module's options; without the scope the broker requires, refused.
	oauthFile := func(scope string) string {
		return writeFile(t, t.TempDir(), "oauth.properties", "bootstrap.servers="+saslAddr+`
security.protocol=SASL_PLAINTEXT
sasl.mechanism=OAUTHBEARER
sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
    unsecuredLoginStringClaim_sub="dave" unsecuredLoginListClaim_scope=",`+scope+`";
`)
	}
	if out, _ := run("", "topic", "list", "--command-config", oauthFile("kafka,other")); !strings.Contains(out, topic) {
		t.Errorf("topic list with OAUTHBEARER = %q, want %s listed", out, topic)
	}
	if _, _, err := execArgs(t, "", "topic", "list", "--command-config", oauthFile("other")); err == nil ||
		!strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("topic list with a token without scope kafka: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	// A command config that cannot be used stops the command before it
	// connects.
	broken := writeFile(t, t.TempDir(), "broken.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n")
	if _, _, err := execArgs(t, "", "topic", "list", "--command-config", broken); err == nil || !strings.Contains(err.Error(), "sasl.mechanism") {
		t.Errorf("topic list with sasl.mechanism=GSSAPI: %v, want an error naming sasl.mechanism", err)
	}
	if _, _, err := execArgs(t, "", "topic", "list", "--command-config", filepath.Join(t.TempDir(), "missing")); err == nil ||
		!strings.Contains(err.Error(), "--command-config") {
		t.Errorf("topic list with a missing file: %v, want an error naming --command-config", err)
	}
}
