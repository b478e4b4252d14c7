package punctual.reference;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.Cancellable;
import org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.test.TestRecord;
import org.apache.kafka.common.utils.Bytes;

/**
 * Runs punctual conformance scenarios (../FORMAT.md) through Kafka Streams'
 * TopologyTestDriver, for kinds punctuate, suppress-table, windowed-count and the joins
 * (stream-stream-join, stream-table-join, table-table-join, foreign-key-join, stream-global-join),
 * table-aggregate and stream-aggregate.
 *
 * <p>Protocol, so one JVM runs many scenarios: each line of standard input is a JSON object, either
 * {"file": path} or {"scenario": {...}, "dir": base directory for recordsFromFile}; for each, one line of
 * standard output: {"outputs": [...]} (the JSON lines `punctual scenario run` prints, as an array),
 * {"notComparable": reason} for what Kafka Streams has no counterpart of, or {"failed": message}.
 */
public final class Harness {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String IN = "input";
  private static final String OUT = "output";
  /** Kafka Streams' internal throttle of unmatched join results (StreamsConfig.InternalConfig). */
  private static final String OUTER_JOIN_EMIT_INTERVAL = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__";

  /** Thrown for scenario features Kafka Streams lacks: reported, not faked. */
  static final class NotComparable extends RuntimeException {
    NotComparable(String reason) {
      super(reason);
    }
  }

  /** This JVM's own state directory: two harnesses running at once must not share Kafka Streams' default. */
  private static Path stateDir;

  public static void main(String[] args) throws IOException {
    stateDir = Files.createTempDirectory("punctual-reference-");
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try (var paths = Files.walk(stateDir)) {
        paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException ignored) {
        // A temporary directory left behind is harmless.
      }
    }));
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (line.isBlank()) continue;
      ObjectNode result = JSON.createObjectNode();
      try {
        JsonNode request = JSON.readTree(line);
        JsonNode scenario;
        Path dir;
        if (request.has("file")) {
          Path file = Path.of(request.get("file").asText());
          scenario = JSON.readTree(Files.readString(file));
          dir = file.toAbsolutePath().getParent();
        } else {
          scenario = request.get("scenario");
          dir = Path.of(request.path("dir").asText("."));
        }
        result.set("outputs", new Run(scenario, dir).execute());
      } catch (NotComparable e) {
        result.put("notComparable", e.getMessage());
      } catch (Exception e) {
        result.put("failed", e.toString());
      }
      out.println(JSON.writeValueAsString(result));
      out.flush();
    }
  }

  /** One scenario run. */
  static final class Run {
    private final JsonNode scenario;
    private final Path dir;
    private final ArrayNode outputs = JSON.createArrayNode();
    private final String kind;
    /** The step being run (and, for recordsFromFile, the line), stamped on every output. */
    private int step;
    private int line = -1;
    /** Kind punctuate: the processor's context and its schedules, for schedule and cancel steps. */
    private ProcessorContext<Void, Void> context;
    private final Map<String, Cancellable> schedules = new HashMap<>();

    Run(JsonNode scenario, Path dir) {
      this.scenario = scenario;
      this.dir = dir;
      this.kind = scenario.path("topology").path("kind").asText();
    }

    ArrayNode execute() throws IOException {
      Topology topology = switch (kind) {
        case "punctuate" -> punctuate();
        case "suppress-table" -> suppressTable();
        case "windowed-count" -> windowedCount();
        case "stream-stream-join" -> streamStreamJoin();
        case "stream-table-join" -> streamTableJoin();
        case "table-table-join" -> tableTableJoin();
        case "foreign-key-join" -> foreignKeyJoin();
        case "stream-global-join" -> streamGlobalJoin();
        case "table-aggregate" -> tableAggregate();
        case "stream-aggregate" -> streamAggregate();
        default -> throw new NotComparable("kind " + kind + " has no Kafka Streams counterpart here");
      };
      Properties props = new Properties();
      props.put(StreamsConfig.APPLICATION_ID_CONFIG, "reference");
      props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
      props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
      // Strings wherever a kind leaves a serde out (a table derived by mapValues has none of its own).
      props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
      props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
      props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
      // FORMAT: a record with a negative timestamp is dropped without output.
      props.put(StreamsConfig.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG, LogAndSkipOnInvalidTimestamp.class);
      JsonNode timestamps = scenario.path("timestampExtractor");
      if (!timestamps.isMissingNode()) {
        String from = timestamps.path("from").asText("ts");
        String onInvalid = timestamps.path("onInvalid").asText("fail");
        // An extractor sees System.currentTimeMillis(), not the test driver's mocked wall clock.
        if (from.equals("wallClock") || onInvalid.equals("useWallClock")) {
          throw new NotComparable("a timestamp extractor on the wall clock reads the real time in Kafka Streams, not the TopologyTestDriver's");
        }
        props.put(StreamsConfig.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG, ScenarioTimestamps.class);
        props.put(ScenarioTimestamps.FROM, from);
        props.put(ScenarioTimestamps.ON_INVALID, onInvalid);
      }
      // Left and outer stream-stream joins emit unmatched records as soon as stream time allows (SEMANTICS
      // 8), not at most once per second of wall-clock time.
      props.put(OUTER_JOIN_EMIT_INTERVAL, 0L);
      Instant start = Instant.ofEpochMilli(scenario.path("wallClockStartMs").asLong(0));
      step = 0;
      try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, start)) {
        Map<String, TestInputTopic<String, String>> inputs = new HashMap<>();
        boolean twoTopics = kind.endsWith("-join") || scenario.path("topology").path("aggregate").asText().equals("cogroup");
        for (String topic : twoTopics ? List.of("left", "right") : List.of(IN)) {
          inputs.put(topic, driver.createInputTopic(topic, Serdes.String().serializer(), Serdes.String().serializer()));
        }
        String defaultTopic = twoTopics ? "left" : IN;
        TestOutputTopic<String, ?> output = kind.equals("windowed-count")
            ? driver.createOutputTopic(OUT, Serdes.String().deserializer(), Serdes.Long().deserializer())
            : kind.equals("suppress-table") || kind.endsWith("-join") || kind.endsWith("-aggregate") ? driver.createOutputTopic(OUT, Serdes.String().deserializer(), Serdes.String().deserializer()) : null;
        JsonNode steps = scenario.path("steps");
        for (step = 0; step < steps.size(); step++) {
          JsonNode s = steps.get(step);
          line = -1;
          try {
            if (s.has("record")) {
              pipe(inputs, defaultTopic, s.get("record"));
            } else if (s.has("recordsFromFile")) {
              List<String> lines = Files.readAllLines(dir.resolve(s.get("recordsFromFile").asText()));
              for (line = 0; line < lines.size(); line++) {
                if (lines.get(line).isBlank()) continue;
                pipe(inputs, defaultTopic, JSON.readTree(lines.get(line)));
                drain(output);
              }
              line = -1;
            } else if (s.has("advanceWallClockMs")) {
              driver.advanceWallClockTime(Duration.ofMillis(s.get("advanceWallClockMs").asLong()));
            } else if (s.has("schedule")) {
              // ProcessorContext.schedule needs a current processor node: Kafka Streams can register a
              // schedule only from init, process or a punctuation, not between two records.
              throw new NotComparable("a schedule registered between records (step " + step + ") cannot be made in Kafka Streams");
            } else if (s.has("cancel")) {
              Cancellable c = schedules.remove(s.get("cancel").asText());
              if (c != null) c.cancel();
            } else {
              throw new IllegalArgumentException("unknown step " + s);
            }
          } catch (RuntimeException e) {
            if (e instanceof NotComparable) throw e;
            boolean badTimestamp = isInvalidTimestamp(e);
            if (!badTimestamp && !isBufferFull(e)) throw e;
            drain(output);
            ObjectNode o = stamp();
            o.put("error", badTimestamp ? "invalid-timestamp" : "buffer-full");
            outputs.add(o);
            return outputs;
          }
          drain(output);
        }
      }
      return outputs;
    }

    private static boolean isInvalidTimestamp(Throwable e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (String.valueOf(t.getMessage()).contains(ScenarioTimestamps.FAILED)) return true;
      }
      return false;
    }

    private static boolean isBufferFull(Throwable e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        String m = String.valueOf(t.getMessage());
        if (m.contains("buffer exceeded its max capacity") || m.contains("shutDownWhenFull") || m.contains("Suppression buffer")) return true;
      }
      return false;
    }

    private void pipe(Map<String, TestInputTopic<String, String>> inputs, String defaultTopic, JsonNode r) {
      TestInputTopic<String, String> input = inputs.get(r.path("topic").asText(defaultTopic));
      if (input == null) throw new IllegalArgumentException("unknown topic " + r.get("topic"));
      JsonNode v = r.get("value");
      input.pipeInput(new TestRecord<>(r.get("key").asText(), v == null || v.isNull() ? null : v.asText(), null, r.get("ts").asLong()));
    }

    private void drain(TestOutputTopic<String, ?> output) {
      if (output == null) return;
      while (!output.isEmpty()) {
        TestRecord<String, ?> r = output.readRecord();
        ObjectNode o = stamp();
        o.put("key", r.key());
        Object v = r.value();
        if (v == null) o.putNull("value");
        else if (v instanceof Long l) o.put("value", l);
        else o.put("value", v.toString());
        o.put("ts", r.timestamp());
        outputs.add(o);
      }
    }

    private ObjectNode stamp() {
      ObjectNode o = JSON.createObjectNode();
      o.put("step", step);
      if (line >= 0) o.put("line", line);
      return o;
    }

    // Kind punctuate: a processor that swallows input and registers the schedules.

    private Topology punctuate() {
      JsonNode specs = scenario.path("topology").path("schedules");
      for (JsonNode spec : specs) checkSchedule(spec);
      for (JsonNode s : scenario.path("steps")) if (s.has("schedule")) checkSchedule(s.get("schedule"));
      Topology t = new Topology();
      t.addSource("in", Serdes.String().deserializer(), Serdes.String().deserializer(), IN);
      t.addProcessor("p", () -> new Processor<String, String, Void, Void>() {
        @Override
        public void init(ProcessorContext<Void, Void> ctx) {
          context = ctx;
          for (JsonNode spec : specs) register(spec);
        }

        @Override
        public void process(Record<String, String> record) {}
      }, "in");
      return t;
    }

    private static void checkSchedule(JsonNode spec) {
      if (spec.has("cron")) throw new NotComparable("cron schedules are beyond Kafka Streams");
      if (spec.has("onMissed")) throw new NotComparable("onMissed policies are beyond Kafka Streams");
    }

    private void register(JsonNode spec) {
      String id = spec.get("id").asText();
      PunctuationType type = spec.get("type").asText().equals("stream") ? PunctuationType.STREAM_TIME : PunctuationType.WALL_CLOCK_TIME;
      Duration interval = Duration.ofMillis(spec.get("intervalMs").asLong());
      org.apache.kafka.streams.processor.Punctuator callback = ts -> {
        ObjectNode o = stamp();
        o.put("punctuation", id);
        o.put("ts", ts);
        outputs.add(o);
      };
      Cancellable c = spec.has("startMs")
          ? context.schedule(Instant.ofEpochMilli(spec.get("startMs").asLong()), interval, type, callback)
          : context.schedule(interval, type, callback);
      schedules.put(id, c);
    }

    // Kind suppress-table.

    private Topology suppressTable() {
      JsonNode s = scenario.path("topology").path("suppress");
      if (!s.path("until").asText("timeLimit").equals("timeLimit")) throw new IllegalArgumentException("suppress-table needs until timeLimit");
      if (s.path("sizer").asText("default").equals("value")) throw new NotComparable("sizer value: Kafka Streams sizes entries by their serialized key, value and record context");
      // waitFrom: Kafka Streams keeps the time of a key's first buffered update (punctual's waitFrom first);
      // punctual's default, latest, is SEMANTICS 6's reading of the KIP-328 tables. Both run as is here.
      StreamsBuilder b = new StreamsBuilder();
      KTable<String, String> table = b.table(IN, Consumed.with(Serdes.String(), Serdes.String()), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled());
      table.suppress(Suppressed.untilTimeLimit(Duration.ofMillis(s.get("waitMs").asLong()), bufferConfig(s, false))).toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
      return b.build();
    }

    @SuppressWarnings("rawtypes")
    private static Suppressed.BufferConfig bufferConfig(JsonNode s, boolean strictOnly) {
      boolean records = s.has("maxRecords");
      boolean bytes = s.has("maxBytes");
      String whenFull = s.path("whenFull").asText(strictOnly ? "shutDown" : "emitEarly");
      if (whenFull.equals("spillToDisk")) throw new NotComparable("spillToDisk is beyond Kafka Streams");
      if (!records && !bytes) return Suppressed.BufferConfig.unbounded();
      Suppressed.BufferConfig c = records ? Suppressed.BufferConfig.maxRecords(s.get("maxRecords").asLong()) : Suppressed.BufferConfig.maxBytes(s.get("maxBytes").asLong());
      if (records && bytes) c = (Suppressed.BufferConfig) c.withMaxBytes(s.get("maxBytes").asLong());
      return whenFull.equals("shutDown") ? c.shutDownWhenFull() : c.emitEarlyWhenFull();
    }

    // Kind windowed-count.

    @SuppressWarnings("unchecked")
    private Topology windowedCount() {
      JsonNode w = scenario.path("topology").path("windows");
      JsonNode s = scenario.path("topology").path("suppress");
      StreamsBuilder b = new StreamsBuilder();
      KGroupedStream<String, String> grouped = b.stream(IN, Consumed.with(Serdes.String(), Serdes.String())).groupByKey();
      long grace = w.path("graceMs").asLong(0);
      KTable<Windowed<String>, Long> counts = switch (w.get("type").asText()) {
        case "tumbling" -> grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(w.get("sizeMs").asLong()), Duration.ofMillis(grace))).count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>with(Serdes.String(), Serdes.Long()).withCachingDisabled());
        case "hopping" -> grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(w.get("sizeMs").asLong()), Duration.ofMillis(grace)).advanceBy(Duration.ofMillis(w.get("advanceMs").asLong()))).count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>with(Serdes.String(), Serdes.Long()).withCachingDisabled());
        case "sliding" -> grouped.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(w.get("timeDifferenceMs").asLong()), Duration.ofMillis(grace))).count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>with(Serdes.String(), Serdes.Long()).withCachingDisabled());
        case "session" -> grouped.windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(w.get("gapMs").asLong()), Duration.ofMillis(grace))).count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>with(Serdes.String(), Serdes.Long()).withCachingDisabled());
        default -> throw new IllegalArgumentException("unknown window type " + w.get("type"));
      };
      if (s != null && !s.isNull() && !s.isMissingNode()) {
        if (s.has("wallClockLimitMs")) throw new NotComparable("wallClockLimitMs (closing windows on the wall clock) is beyond Kafka Streams");
        Suppressed.BufferConfig<?> config = bufferConfig(s, true);
        if (!(config instanceof Suppressed.StrictBufferConfig strict)) throw new IllegalArgumentException("untilWindowCloses needs a strict buffer config");
        counts = counts.suppress(Suppressed.untilWindowCloses(strict));
      }
      counts.toStream()
          .map((wk, v) -> KeyValue.pair(wk.key() + "@" + wk.window().start() + "/" + wk.window().end(), v))
          .to(OUT, Produced.with(Serdes.String(), Serdes.Long()));
      return b.build();
    }

    // Kind stream-stream-join.

    private Topology streamStreamJoin() {
      JsonNode t = scenario.path("topology");
      JsonNode w = t.path("windows");
      JoinWindows windows = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(w.get("timeDifferenceMs").asLong()), Duration.ofMillis(w.path("graceMs").asLong(0)));
      if (w.has("beforeMs")) windows = windows.before(Duration.ofMillis(w.get("beforeMs").asLong()));
      if (w.has("afterMs")) windows = windows.after(Duration.ofMillis(w.get("afterMs").asLong()));
      StreamsBuilder b = new StreamsBuilder();
      KStream<String, String> left = b.stream("left", Consumed.with(Serdes.String(), Serdes.String()));
      KStream<String, String> right = b.stream("right", Consumed.with(Serdes.String(), Serdes.String()));
      ValueJoiner<String, String, String> joiner = (l, r) -> l + "+" + r;
      StreamJoined<String, String, String> serdes = StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String());
      KStream<String, String> joined = switch (t.path("join").asText()) {
        case "inner" -> left.join(right, joiner, windows, serdes);
        case "left" -> left.leftJoin(right, joiner, windows, serdes);
        case "outer" -> left.outerJoin(right, joiner, windows, serdes);
        default -> throw new IllegalArgumentException("unknown join " + t.get("join"));
      };
      joined.to(OUT, Produced.with(Serdes.String(), Serdes.String()));
      return b.build();
    }

    // Kind stream-table-join.

    private Topology streamTableJoin() {
      JsonNode t = scenario.path("topology");
      StreamsBuilder b = new StreamsBuilder();
      KStream<String, String> left = b.stream("left", Consumed.with(Serdes.String(), Serdes.String()));
      KTable<String, String> right = derived(t.has("versioned")
          ? b.table("right", Consumed.with(Serdes.String(), Serdes.String()), Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("right-versions", Duration.ofMillis(t.path("versioned").path("historyRetentionMs").asLong()))).withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
          : b.table("right", Consumed.with(Serdes.String(), Serdes.String()), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled()), "right");
      Joined<String, String, String> options = Joined.with(Serdes.String(), Serdes.String(), Serdes.String());
      if (t.has("graceMs")) options = options.withGracePeriod(Duration.ofMillis(t.get("graceMs").asLong()));
      ValueJoiner<String, String, String> joiner = (l, r) -> l + "+" + r;
      KStream<String, String> joined = switch (scenario.path("topology").path("join").asText()) {
        case "inner" -> left.join(right, joiner, options);
        case "left" -> left.leftJoin(right, joiner, options);
        default -> throw new IllegalArgumentException("unknown join " + scenario.path("topology").get("join"));
      };
      joined.to(OUT, Produced.with(Serdes.String(), Serdes.String()));
      return b.build();
    }

    // Kind stream-aggregate: groupByKey() then count, reduce (values joined with "+"), or a cogroup of
    // topics left and right appending "L<value>" / "R<value>" to "".

    private Topology streamAggregate() {
      StreamsBuilder b = new StreamsBuilder();
      JsonNode w = scenario.path("topology").path("windows");
      if (w.has("timeDifferenceMs")) {
        SlidingWindows sliding = SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(w.get("timeDifferenceMs").asLong()), Duration.ofMillis(w.path("graceMs").asLong(0)));
        b.stream("left", Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
            .<String>cogroup((k, v, agg) -> agg + "L" + v)
            .cogroup(b.stream("right", Consumed.with(Serdes.String(), Serdes.String())).groupByKey(), (k, v, agg) -> agg + "R" + v)
            .windowedBy(sliding)
            .aggregate(() -> "", Materialized.<String, String, WindowStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled())
            .toStream()
            .map((wk, v) -> KeyValue.pair(wk.key() + "@" + wk.window().start() + "/" + wk.window().end(), v))
            .to(OUT, Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
      }
      if (w.has("gapMs")) {
        SessionWindows sessions = SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(w.get("gapMs").asLong()), Duration.ofMillis(w.path("graceMs").asLong(0)));
        b.stream("left", Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
            .<String>cogroup((k, v, agg) -> agg + "L" + v)
            .cogroup(b.stream("right", Consumed.with(Serdes.String(), Serdes.String())).groupByKey(), (k, v, agg) -> agg + "R" + v)
            .windowedBy(sessions)
            .aggregate(() -> "", (k, left, right) -> left + right, Materialized.<String, String, SessionStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled())
            .toStream()
            .map((wk, v) -> KeyValue.pair(wk.key() + "@" + wk.window().start() + "/" + wk.window().end(), v))
            .to(OUT, Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
      }
      if (!w.isMissingNode()) {
        long size = w.get("sizeMs").asLong();
        TimeWindows windows = TimeWindows.ofSizeAndGrace(Duration.ofMillis(size), Duration.ofMillis(w.path("graceMs").asLong(0))).advanceBy(Duration.ofMillis(w.path("advanceMs").asLong(size)));
        b.stream("left", Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
            .<String>cogroup((k, v, agg) -> agg + "L" + v)
            .cogroup(b.stream("right", Consumed.with(Serdes.String(), Serdes.String())).groupByKey(), (k, v, agg) -> agg + "R" + v)
            .windowedBy(windows)
            .aggregate(() -> "", Materialized.<String, String, WindowStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled())
            .toStream()
            .map((wk, v) -> KeyValue.pair(wk.key() + "@" + wk.window().start() + "/" + wk.window().end(), v))
            .to(OUT, Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
      }
      KTable<String, String> result = switch (scenario.path("topology").path("aggregate").asText()) {
        case "count" -> b.stream(IN, Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.Long()).withCachingDisabled())
            .mapValues(n -> n == null ? null : Long.toString(n));
        case "reduce" -> b.stream(IN, Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
            .reduce((a, v) -> a + "+" + v, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled());
        case "cogroup" -> b.stream("left", Consumed.with(Serdes.String(), Serdes.String())).groupByKey()
            .<String>cogroup((k, v, agg) -> agg + "L" + v)
            .cogroup(b.stream("right", Consumed.with(Serdes.String(), Serdes.String())).groupByKey(), (k, v, agg) -> agg + "R" + v)
            .aggregate(() -> "", Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled());
        default -> throw new IllegalArgumentException("unknown aggregate " + scenario.path("topology").get("aggregate"));
      };
      result.toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
      return b.build();
    }

    // Kind table-aggregate: the table of values "group:number" grouped by group, then counted, summed
    // (aggregate) or reduced (the sum as strings).

    private Topology tableAggregate() {
      StreamsBuilder b = new StreamsBuilder();
      KTable<String, String> table = b.table(IN, Consumed.with(Serdes.String(), Serdes.String()), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled());
      String derive = scenario.path("topology").path("derive").asText("");
      if (derive.equals("filter") || derive.equals("filterMapValues")) table = table.filter((k, v) -> !v.startsWith("z"));
      if (derive.equals("mapValues") || derive.equals("filterMapValues")) table = table.mapValues(v -> v + "0");
      KGroupedTable<String, String> grouped = table.groupBy((k, v) -> KeyValue.pair(v.substring(0, v.indexOf(':')), v.substring(v.indexOf(':') + 1)), Grouped.with(Serdes.String(), Serdes.String()));
      KTable<String, String> result = switch (scenario.path("topology").path("aggregate").asText()) {
        case "count" -> grouped.count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.Long()).withCachingDisabled()).mapValues(n -> n == null ? null : Long.toString(n));
        case "sum" -> grouped.aggregate(() -> 0L, (g, v, sum) -> sum + Long.parseLong(v), (g, v, sum) -> sum - Long.parseLong(v), Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.Long()).withCachingDisabled()).mapValues(n -> n == null ? null : Long.toString(n));
        case "reduce" -> grouped.reduce((a, v) -> Long.toString(Long.parseLong(a) + Long.parseLong(v)), (a, v) -> Long.toString(Long.parseLong(a) - Long.parseLong(v)), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled());
        default -> throw new IllegalArgumentException("unknown aggregate " + scenario.path("topology").get("aggregate"));
      };
      result.toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
      return b.build();
    }

    // Kind stream-global-join: stream "left" whose values name keys of the global table of "right".

    private Topology streamGlobalJoin() {
      StreamsBuilder b = new StreamsBuilder();
      GlobalKTable<String, String> table = b.globalTable("right", Consumed.with(Serdes.String(), Serdes.String()), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("global-right").withKeySerde(Serdes.String()).withValueSerde(Serdes.String()).withCachingDisabled());
      KStream<String, String> left = b.stream("left", Consumed.with(Serdes.String(), Serdes.String()));
      ValueJoiner<String, String, String> joiner = (l, r) -> l + "+" + r;
      KStream<String, String> joined = switch (scenario.path("topology").path("join").asText()) {
        case "inner" -> left.join(table, (k, v) -> v, joiner);
        case "left" -> left.leftJoin(table, (k, v) -> v, joiner);
        default -> throw new IllegalArgumentException("unknown join " + scenario.path("topology").get("join"));
      };
      joined.to(OUT, Produced.with(Serdes.String(), Serdes.String()));
      return b.build();
    }

    // topology.derive.left / .right: the table filtered (values not starting with "z"), mapped ("m(" + v + ")"),
    // or both, before it is joined.

    private KTable<String, String> derived(KTable<String, String> table, String side) {
      String how = scenario.path("topology").path("derive").path(side).asText("");
      if (how.isEmpty()) return table;
      KTable<String, String> filtered = how.equals("mapValues") ? table : table.filter((k, v) -> !v.startsWith("z"));
      return how.equals("filter") ? filtered : filtered.mapValues(v -> "m(" + v + ")");
    }

    // Kind table-table-join.

    private Topology tableTableJoin() {
      StreamsBuilder b = new StreamsBuilder();
      KTable<String, String> left = derived(b.table("left", Consumed.with(Serdes.String(), Serdes.String()), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled()), "left");
      KTable<String, String> right = derived(b.table("right", Consumed.with(Serdes.String(), Serdes.String()), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled()), "right");
      ValueJoiner<String, String, String> joiner = (l, r) -> l + "+" + r;
      KTable<String, String> joined = switch (scenario.path("topology").path("join").asText()) {
        case "inner" -> left.join(right, joiner);
        case "left" -> left.leftJoin(right, joiner);
        case "outer" -> left.outerJoin(right, joiner);
        default -> throw new IllegalArgumentException("unknown join " + scenario.path("topology").get("join"));
      };
      joined.toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
      return b.build();
    }

    // Kind foreign-key-join: the table of "left" (values "fk:payload") joined with the table of "right"
    // by the foreign key before the colon (none when empty or absent).

    private Topology foreignKeyJoin() {
      StreamsBuilder b = new StreamsBuilder();
      KTable<String, String> left = derived(b.table("left", Consumed.with(Serdes.String(), Serdes.String()), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled()), "left");
      KTable<String, String> right = derived(b.table("right", Consumed.with(Serdes.String(), Serdes.String()), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String()).withCachingDisabled()), "right");
      java.util.function.Function<String, String> foreignKey = v -> {
        int at = v.indexOf(':');
        return at <= 0 ? null : v.substring(0, at);
      };
      ValueJoiner<String, String, String> joiner = (l, r) -> l + "+" + r;
      KTable<String, String> joined = switch (scenario.path("topology").path("join").asText()) {
        case "inner" -> left.join(right, foreignKey, joiner);
        case "left" -> left.leftJoin(right, foreignKey, joiner);
        default -> throw new IllegalArgumentException("unknown join " + scenario.path("topology").get("join"));
      };
      joined.toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
      return b.build();
    }
  }
}
