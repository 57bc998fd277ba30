package io.gregor.compat.javaclients;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The member share-group-lock-timeout kills: it joins the share group, polls
 * until it has acquired records, prints "acquired N" and then holds them,
 * acknowledging nothing, until it is killed.
 *
 * Usage: ShareChild BOOTSTRAP GROUP TOPIC CLIENT_ID
 */
public final class ShareChild {
    private ShareChild() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, Object> conf = new HashMap<>();
        conf.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        conf.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        conf.put(ConsumerConfig.CLIENT_ID_CONFIG, args[3]);
        conf.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        conf.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        conf.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(conf);
        c.subscribe(List.of(args[2]));
        while (true) {
            ConsumerRecords<byte[], byte[]> records = c.poll(Duration.ofMillis(500));
            if (!records.isEmpty()) {
                System.out.println("acquired " + records.count());
                System.out.flush();
                Thread.sleep(Long.MAX_VALUE);
            }
        }
    }
}
