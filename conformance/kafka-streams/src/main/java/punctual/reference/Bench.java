package punctual.reference;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.Stores;

/**
 * The flights windowed-final workload in Kafka Streams' TopologyTestDriver, for `npm run bench`: reads
 * "origin\tscheduled-ms" lines (in replay order), counts flights per origin in 1 h tumbling windows
 * with 30 min grace, final results only (an in-memory window store with caching off, as in punctual),
 * and prints one JSON line:
 * records, seconds (processing only, after the JVM has started and the file is read), final results,
 * an order-independent hash of the "origin start count" lines, peak heap used.
 */
public final class Bench {
  private static final long HOUR = 3_600_000L;

  /**
   * The workload's topology up to its output: flights per origin in 1 h tumbling windows with 30 min
   * grace, final results only, from an in-memory window store with caching off (as punctual has none).
   */
  static KStream<Windowed<String>, Long> finalCountsPerOrigin(StreamsBuilder b, String input) {
    return b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
        .groupByKey()
        .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(HOUR), Duration.ofMillis(HOUR / 2)))
        .count(Materialized.<String, Long>as(Stores.inMemoryWindowStore("counts", Duration.ofMillis(HOUR + HOUR / 2), Duration.ofMillis(HOUR), false))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()).withCachingDisabled())
        .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
        .toStream();
  }

  public static void main(String[] args) throws IOException {
    List<String> origins = new ArrayList<>();
    List<Long> times = new ArrayList<>();
    try (BufferedReader r = Files.newBufferedReader(Path.of(args[0]), StandardCharsets.UTF_8)) {
      for (String line = r.readLine(); line != null; line = r.readLine()) {
        int tab = line.indexOf('\t');
        origins.add(line.substring(0, tab));
        times.add(Long.parseLong(line.substring(tab + 1)));
      }
    }
    StreamsBuilder b = new StreamsBuilder();
    finalCountsPerOrigin(b, "flights")
        .map((wk, v) -> KeyValue.pair(wk.key() + " " + wk.window().start(), v))
        .to("out", Produced.with(Serdes.String(), Serdes.Long()));
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "bench");
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    props.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("punctual-bench-").toString());
    Runtime rt = Runtime.getRuntime();
    long peak = 0;
    long results = 0;
    int hash = 0;
    long t0 = System.nanoTime();
    try (TopologyTestDriver driver = new TopologyTestDriver(b.build(), props, Instant.ofEpochMilli(0))) {
      TestInputTopic<String, String> in = driver.createInputTopic("flights", Serdes.String().serializer(), Serdes.String().serializer());
      TestOutputTopic<String, Long> out = driver.createOutputTopic("out", Serdes.String().deserializer(), Serdes.Long().deserializer());
      int n = origins.size();
      for (int i = 0; i < n; i++) {
        in.pipeInput(origins.get(i), "", times.get(i));
        if ((i & 0xffff) == 0xffff || i == n - 1) {
          while (!out.isEmpty()) {
            KeyValue<String, Long> kv = out.readKeyValue();
            hash += (kv.key + " " + kv.value).hashCode();
            results++;
          }
          peak = Math.max(peak, rt.totalMemory() - rt.freeMemory());
        }
      }
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    System.out.println("{\"records\":" + origins.size() + ",\"seconds\":" + seconds + ",\"finalResults\":" + results + ",\"hash\":" + hash + ",\"peakHeapMb\":" + (peak / 1048576.0) + "}");
  }
}
