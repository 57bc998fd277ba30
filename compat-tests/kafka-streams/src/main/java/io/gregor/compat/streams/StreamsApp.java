package io.gregor.compat.streams;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.TaskId;

/**
 * One KafkaStreams instance run in-process, configured as the suite's apps
 * are: at-least-once, the classic consumer group protocol, a 100 ms commit
 * interval, one stream thread, its state under the scenario's work dir.
 *
 * A stream thread's fatal error shuts the client down and is kept, so that
 * a scenario waiting on the app fails at once with that error instead of
 * running into its timeout.
 */
final class StreamsApp implements AutoCloseable {
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private final String label;
    private final KafkaStreams streams;
    private final AtomicReference<Throwable> error = new AtomicReference<>();
    /** Records restored per changelog partition, as onRestoreEnd reports them. */
    private final ConcurrentHashMap<TopicPartition, Long> restored = new ConcurrentHashMap<>();
    private boolean closed;

    /**
     * @param label names the instance in failure messages ("app", "instance b")
     * @param stateDir this instance's state.dir; two instances of one
     *     application in one process need different ones
     * @param overrides Streams configs a scenario sets on top of the suite's
     */
    StreamsApp(String label, String bootstrap, String applicationId, Path stateDir, Topology topology,
               Map<String, Object> overrides) {
        this.label = label;
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.CLIENT_ID_CONFIG, applicationId + "-" + label.replace(' ', '-'));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        // Classic is the default in this version; said here so that the
        // suite keeps testing JoinGroup/SyncGroup if the default moves.
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "classic");
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // Internal topics read from their start; the input topics are
        // filled before or after the app starts, and both must be read whole.
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        props.putAll(overrides);
        streams = new KafkaStreams(topology, props);
        streams.setUncaughtExceptionHandler(e -> {
            error.compareAndSet(null, e);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition partition, String store, long startOffset, long endOffset) {}

            @Override
            public void onBatchRestored(TopicPartition partition, String store, long batchEndOffset, long restored) {}

            @Override
            public void onRestoreEnd(TopicPartition partition, String store, long totalRestored) {
                restored.merge(partition, totalRestored, Long::sum);
            }
        });
    }

    void start() {
        streams.start();
    }

    KafkaStreams.State state() {
        return streams.state();
    }

    /**
     * Throws a {@link ScenarioFailure} if the app has failed or stopped:
     * called from every wait so that a dead app ends the wait at once.
     */
    void checkAlive() {
        Throwable e = error.get();
        if (e != null) {
            throw new ScenarioFailure(label + " stream thread died: " + Main.describe(e));
        }
        KafkaStreams.State state = streams.state();
        if (state == KafkaStreams.State.ERROR || state == KafkaStreams.State.PENDING_ERROR
                || state == KafkaStreams.State.NOT_RUNNING || state == KafkaStreams.State.PENDING_SHUTDOWN) {
            throw new ScenarioFailure(label + " stopped unexpectedly, state " + state);
        }
    }

    boolean isRunning() {
        checkAlive();
        return streams.state() == KafkaStreams.State.RUNNING;
    }

    void awaitRunning() throws Exception {
        Poll.until(label + " to reach RUNNING", Poll.STEP, this::isRunning, () -> "state " + streams.state());
    }

    /** The active tasks of this instance's stream threads right now. */
    Set<TaskId> activeTasks() {
        Set<TaskId> tasks = new TreeSet<>();
        for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
            thread.activeTasks().forEach(task -> tasks.add(task.taskId()));
        }
        return tasks;
    }

    /** Records restored from changelogs since start, summed over partitions. */
    long restoredRecords() {
        return restored.values().stream().mapToLong(Long::longValue).sum();
    }

    Set<String> restoredPartitions() {
        return restored.keySet().stream().map(TopicPartition::toString).collect(Collectors.toCollection(TreeSet::new));
    }

    String describe() {
        return label + " " + streams.state() + " active tasks " + activeTasks();
    }

    /**
     * Closes the app, leaving the consumer group (LeaveGroup) so that a
     * later instance of the same application need not wait out the old
     * member's session. Fails if the close does not finish in time.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        boolean done = streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                .withTimeout(CLOSE_TIMEOUT));
        if (!done) {
            throw new ScenarioFailure(label + " did not close within " + CLOSE_TIMEOUT.toSeconds() + " s");
        }
        Throwable e = error.get();
        if (e != null) {
            throw new ScenarioFailure(label + " stream thread died: " + Main.describe(e));
        }
    }
}
