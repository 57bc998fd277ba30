// FailoverWriter is the Java writer of the failover harness
// (compat-tests/go/cmd/failover): an idempotent acks=all producer of
// kafka-clients that sends value <writer>-<seq, 12 digits> to partition
// seq % partitions at a fixed rate, until its stdin closes, and reports
// every outcome on stdout, one line each, as its callback sees it:
//
//	ack <partition> <offset> <value>
//	err <value> <exception>
//	done <records sent>
//
// Usage: java FailoverWriter BOOTSTRAP TOPIC WRITER PARTITIONS RECORDS_PER_SECOND
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public final class FailoverWriter {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: FailoverWriter BOOTSTRAP TOPIC WRITER PARTITIONS RECORDS_PER_SECOND");
            System.exit(2);
        }
        String topic = args[1], writer = args[2];
        int partitions = Integer.parseInt(args[3]);
        int rate = Integer.parseInt(args[4]);

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
        p.put(ProducerConfig.RETRIES_CONFIG, Integer.toString(Integer.MAX_VALUE));
        // A record is given up only after ten minutes: a failover takes
        // seconds, so an err line means something is stuck.
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "600000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "600000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "100");
        p.put(ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "1000");
        p.put(ProducerConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
        p.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "1000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());

        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (Exception e) {
                // a closed or broken stdin means stop, as EOF does
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();

        long sent = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            long start = System.nanoTime();
            while (!stop.get()) {
                long due = start + sent * 1_000_000_000L / rate;
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                String value = String.format("%s-%012d", writer, sent);
                int partition = (int) (sent % partitions);
                producer.send(new ProducerRecord<>(topic, partition, null, value), (md, e) -> {
                    synchronized (out) {
                        if (e == null) {
                            out.println("ack " + md.partition() + " " + md.offset() + " " + value);
                        } else {
                            out.println("err " + value + " " + e.toString().replace('\n', ' '));
                        }
                        out.flush();
                    }
                });
                sent++;
            }
            producer.flush();
            producer.close(Duration.ofMinutes(2));
        }
        synchronized (out) {
            out.println("done " + sent);
            out.flush();
        }
    }
}
