package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gregor-io/gregor/compat-tests/go/internal/lab"
)

// The Kafka target runs the same cycles against three Apache Kafka nodes
// in the same namespaces: KRaft in combined mode (broker and controller in
// each JVM), as compat-tests/kafka/kafka.sh start-cluster configures them,
// with the timeouts the Gregor brokers get (broker.session.timeout.ms,
// replica.lag.time.max.ms), so that the unavailability figures compare.
// Kafka listens on 9092 and its controller on 9093 of each namespace's
// address. Kafka's metadata names a random live broker as the controller
// (the quorum's leader is not in it), so kill-controller kills that broker.

const kafkaControllerPort = 9093

// kafkaClusterID returns a cluster id as Kafka's StorageTool random-uuid
// makes them: 16 random bytes in unpadded URL-safe base64, not starting
// with a dash.
func kafkaClusterID() (string, error) {
	for {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		if id := base64.RawURLEncoding.EncodeToString(b); id[0] != '-' {
			return id, nil
		}
	}
}

// setupKafka writes each node's server.properties and log4j2.properties
// into its data dir, formats its log dir, and returns the Command that
// runs a node.
func setupKafka(c *lab.Cluster, libs, java string, o options) (func(b *lab.Broker) []string, error) {
	id, err := kafkaClusterID()
	if err != nil {
		return nil, err
	}
	var voters []string
	for _, b := range c.Brokers {
		voters = append(voters, fmt.Sprintf("%d@%s:%d", b.ID, b.Host, kafkaControllerPort))
	}
	cp := filepath.Join(libs, "*")
	jvm := func(b *lab.Broker) []string {
		return []string{java, "-Xms512m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true",
			"-Dlog4j2.configurationFile=" + filepath.Join(b.DataDir, "log4j2.properties"), "-cp", cp}
	}
	for _, b := range c.Brokers {
		props := fmt.Sprintf(`process.roles=broker,controller
node.id=%d
controller.quorum.voters=%s
listeners=PLAINTEXT://%s:%d,CONTROLLER://%s:%d
advertised.listeners=PLAINTEXT://%s:%d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%s
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
group.initial.rebalance.delay.ms=0
broker.session.timeout.ms=%d
broker.heartbeat.interval.ms=%d
replica.lag.time.max.ms=5000
`, b.ID, strings.Join(voters, ","), b.Host, b.KafkaPort, b.Host, kafkaControllerPort, b.Host, b.KafkaPort,
			filepath.Join(b.DataDir, "data"), o.sessionTimeout.Milliseconds(), max(o.sessionTimeout.Milliseconds()/4, 250))
		log4j := `status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
`
		if err := os.WriteFile(filepath.Join(b.DataDir, "server.properties"), []byte(props), 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(b.DataDir, "log4j2.properties"), []byte(log4j), 0o644); err != nil {
			return nil, err
		}
		args := append(jvm(b), "kafka.tools.StorageTool", "format", "-t", id, "-c", filepath.Join(b.DataDir, "server.properties"))
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("format node %d: %w: %s", b.ID, err, out)
		}
	}
	return func(b *lab.Broker) []string {
		return append(jvm(b), "kafka.Kafka", filepath.Join(b.DataDir, "server.properties"))
	}, nil
}
