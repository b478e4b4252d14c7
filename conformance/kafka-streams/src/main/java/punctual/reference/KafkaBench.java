package punctual.reference;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;

/**
 * Kafka Streams 4.4 on a real broker, for `npm run bench -- --only kafka` (bench/kafka.ts), one stream
 * thread:
 *
 * <pre>
 * KafkaBench windowed BOOTSTRAP APP INPUT OUTPUT GUARANTEE
 *   the flights windowed-final workload of Bench.java, as "origin@start" -> count;
 * KafkaBench lateness BOOTSTRAP APP INPUT SECONDS
 *   a 1 s wall-clock punctuation on an idle input topic, for SECONDS.
 * </pre>
 *
 * Both print JSON lines on stdout: {"started":ms} just before start, then {"t":ms,"processed":n} every
 * 100 ms (the stream thread's process-total); the lateness mode ends with {"lateness":[ms,...]}. The
 * windowed mode closes cleanly (committing) when stdin closes.
 */
public final class KafkaBench {
  public static void main(String[] args) throws Exception {
    String mode = args[0];
    Properties props = new Properties();
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[2]);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    Path stateDir = Files.createTempDirectory("punctual-kafka-bench-");
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    try {
      if (mode.equals("windowed")) windowed(props, args[3], args[4], args[5]);
      else lateness(props, args[3], Integer.parseInt(args[4]));
    } finally {
      try (Stream<Path> paths = Files.walk(stateDir)) {
        paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static void windowed(Properties props, String input, String output, String guarantee) throws Exception {
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
    StreamsBuilder b = new StreamsBuilder();
    Bench.finalCountsPerOrigin(b, input)
        .map((wk, v) -> KeyValue.pair(wk.key() + "@" + wk.window().start(), String.valueOf(v)))
        .to(output, Produced.with(Serdes.String(), Serdes.String()));
    run(b.build(), props, -1);
  }

  private static void lateness(Properties props, String input, int seconds) throws Exception {
    List<Long> lateness = new ArrayList<>();
    Topology t = new Topology();
    t.addSource("in", Serdes.String().deserializer(), Serdes.String().deserializer(), input);
    t.addProcessor("tick", () -> new Processor<String, String, String, String>() {
      @Override
      public void init(ProcessorContext<String, String> ctx) {
        // Kafka Streams' first wall-clock punctuation is due one interval after it is scheduled, the
        // next ones on that grid.
        long scheduled = System.currentTimeMillis();
        ctx.schedule(Duration.ofSeconds(1), PunctuationType.WALL_CLOCK_TIME, ts -> {
          long now = System.currentTimeMillis();
          long late = (now - scheduled) % 1000;
          synchronized (lateness) {
            lateness.add(late);
          }
        });
      }

      @Override
      public void process(Record<String, String> record) {}
    }, "in");
    run(t, props, seconds);
    synchronized (lateness) {
      System.out.println("{\"lateness\":" + lateness + "}");
    }
  }

  /** Runs until stdin closes (seconds < 0) or for `seconds`, reporting progress, then closes. */
  private static void run(Topology topology, Properties props, int seconds) throws Exception {
    KafkaStreams streams = new KafkaStreams(topology, props);
    CountDownLatch done = new CountDownLatch(1);
    streams.setUncaughtExceptionHandler(e -> {
      e.printStackTrace();
      done.countDown();
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    System.out.println("{\"started\":" + System.currentTimeMillis() + "}");
    streams.start();
    Thread reporter = new Thread(() -> {
      try {
        while (true) {
          System.out.println("{\"t\":" + System.currentTimeMillis() + ",\"processed\":" + processed(streams) + "}");
          Thread.sleep(100);
        }
      } catch (InterruptedException e) {
        // stop reporting
      }
    });
    reporter.setDaemon(true);
    reporter.start();
    if (seconds < 0) {
      Thread stdin = new Thread(() -> {
        try {
          while (System.in.read() >= 0) {
            // until closed
          }
        } catch (IOException e) {
          // closed
        }
        done.countDown();
      });
      stdin.setDaemon(true);
      stdin.start();
      done.await();
    } else {
      Thread.sleep(seconds * 1000L);
    }
    reporter.interrupt();
    streams.close(Duration.ofSeconds(60));
    System.out.println("{\"closed\":" + System.currentTimeMillis() + "}");
  }

  /** Records the stream threads processed so far (their process-total metric). */
  private static long processed(KafkaStreams streams) {
    double total = 0;
    for (var e : streams.metrics().entrySet()) {
      MetricName name = e.getKey();
      if (name.name().equals("process-total") && name.group().equals("stream-thread-metrics")) {
        Metric m = e.getValue();
        total += ((Number) m.metricValue()).doubleValue();
      }
    }
    return (long) total;
  }
}
