package io.gregor.compat.streams;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The Streams topologies the scenarios run. Repartition and store names are
 * fixed so that the internal topics have names the scenarios can look for:
 * {@code <application.id>-<name>-repartition} and
 * {@code <application.id>-<store>-changelog}.
 */
final class Topologies {
    /** Grouping by word repartitions through {@code <app>-words-repartition}. */
    static final String WORDS_REPARTITION = "words";
    /** The word-count store, logged to {@code <app>-counts-changelog}. */
    static final String COUNTS_STORE = "counts";
    /** The windowed count store, logged to {@code <app>-window-counts-changelog}. */
    static final String WINDOW_COUNTS_STORE = "window-counts";
    /** The store of the users table in the join, {@code <app>-users-changelog}. */
    static final String USERS_STORE = "users";
    /** Grouping the joined clicks by region, {@code <app>-regions-repartition}. */
    static final String REGIONS_REPARTITION = "regions";
    /** Size of the tumbling windows of {@link #windowedWordCount}. */
    static final Duration WINDOW = Duration.ofMinutes(1);

    private Topologies() {}

    /** The name Streams gives the repartition topic of {@code name} in application {@code appId}. */
    static String repartitionTopic(String appId, String name) {
        return appId + "-" + name + "-repartition";
    }

    /** The name Streams gives the changelog topic of {@code store} in application {@code appId}. */
    static String changelogTopic(String appId, String store) {
        return appId + "-" + store + "-changelog";
    }

    /**
     * The classic word count: lines in (any key), words split on white
     * space, re-keyed by word (which repartitions), counted in a key-value
     * store, each new count written to {@code output} as word to count.
     */
    static Topology wordCount(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        words(builder, input)
                .groupBy((key, word) -> word, Grouped.with(WORDS_REPARTITION, Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(COUNTS_STORE)
                        .withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.Long()))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    /**
     * Word counts per tumbling window of {@link #WINDOW}, by the records'
     * own timestamps (the producer's CreateTime, carried through the
     * repartition topic). The grace period is a day so that no record the
     * scenario produces counts as late. Output keys are
     * {@code word@windowStartMillis}.
     */
    static Topology windowedWordCount(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        words(builder, input)
                .groupBy((key, word) -> word, Grouped.with(WORDS_REPARTITION, Serdes.String(), Serdes.String()))
                .windowedBy(TimeWindows.ofSizeAndGrace(WINDOW, Duration.ofDays(1)))
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as(WINDOW_COUNTS_STORE)
                        .withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.Long()))
                .toStream((windowed, count) -> windowed.key() + "@" + windowed.window().start())
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    /**
     * A stream-table join: clicks (user to anything) joined with the users
     * table (user to region), then counted per region. Clicks of users the
     * table does not know are dropped by the inner join.
     */
    static Topology clicksPerRegion(String clicks, String users, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> regions = builder.table(users, Consumed.with(Serdes.String(), Serdes.String()),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(USERS_STORE)
                        .withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.String()));
        builder.stream(clicks, Consumed.with(Serdes.String(), Serdes.String()))
                .join(regions, (click, region) -> region)
                .groupBy((user, region) -> region, Grouped.with(REGIONS_REPARTITION, Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("region-counts")
                        .withKeySerde(Serdes.String())
                        .withValueSerde(Serdes.Long()))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    private static KStream<String, String> words(StreamsBuilder builder, String input) {
        return builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\s+")))
                .filter((key, word) -> !word.isEmpty());
    }
}
