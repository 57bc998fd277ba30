// TxnTool: the transactional producers and the offset probe of the console
// suite's admin-transactions scenario (run as a single-file program:
// java -cp "$libs/*" TxnTool.java MODE BOOTSTRAP TOPIC [TXNID]).
//
//   open BS TOPIC TXNID    begins a transaction, writes 5 records to each of
//                          partitions 0 and 1, flushes, prints
//                          "open <partition> <first offset>" per partition and
//                          halts the JVM: the transaction stays open (its
//                          timeout is 120 s, so the coordinator leaves it be
//                          for the scenario's length)
//   commit BS TOPIC TXNID  writes 5 records to partition 0 in a transaction
//                          and commits it; prints "commit 0 <first offset>"
//   offsets BS TOPIC       prints "<partition> <high watermark> <last stable
//                          offset>" for each partition (ListOffsets latest,
//                          read_uncommitted and read_committed)
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnTool {
    public static void main(String[] args) throws Exception {
        String mode = args[0], bs = args[1], topic = args[2];
        switch (mode) {
            case "open" -> produce(bs, topic, args[3], new int[] {0, 1}, false);
            case "commit" -> produce(bs, topic, args[3], new int[] {0}, true);
            case "offsets" -> offsets(bs, topic);
            default -> throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    static void produce(String bs, String topic, String txnId, int[] partitions, boolean commit) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bs);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "120000");
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        KafkaProducer<String, String> producer = new KafkaProducer<>(props);
        producer.initTransactions();
        producer.beginTransaction();
        Map<Integer, Long> first = new TreeMap<>();
        for (int p : partitions) {
            for (int i = 0; i < 5; i++) {
                RecordMetadata md = producer.send(new ProducerRecord<>(topic, p, txnId + "-" + i, txnId + " value " + i)).get();
                first.putIfAbsent(p, md.offset());
            }
        }
        producer.flush();
        String what = commit ? "commit" : "open";
        if (commit) {
            producer.commitTransaction();
        }
        first.forEach((p, o) -> System.out.println(what + " " + p + " " + o));
        System.out.flush();
        if (!commit) {
            // No commit, no abort, no close: the transaction stays open.
            Runtime.getRuntime().halt(0);
        }
        producer.close();
    }

    static void offsets(String bs, String topic) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bs);
        try (Admin admin = Admin.create(props)) {
            int n = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            for (int p = 0; p < n; p++) specs.put(new TopicPartition(topic, p), OffsetSpec.latest());
            var hw = admin.listOffsets(specs, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).all().get();
            var lso = admin.listOffsets(specs, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all().get();
            for (int p = 0; p < n; p++) {
                TopicPartition tp = new TopicPartition(topic, p);
                System.out.println(p + " " + hw.get(tp).offset() + " " + lso.get(tp).offset());
            }
        }
    }
}
