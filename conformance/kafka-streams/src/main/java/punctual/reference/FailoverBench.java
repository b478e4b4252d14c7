package punctual.reference;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StandbyUpdateListener;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * One Kafka Streams 4.4 instance of the failover benchmark (bench/kafka-failover.ts), in a JVM of its
 * own so that the benchmark can kill it with SIGKILL:
 *
 * <pre>
 * FailoverBench BOOTSTRAP APP INPUT OUTPUT STATE_DIR
 * </pre>
 *
 * A count per key in a persistent store "counts", every count written to OUTPUT as a string; one
 * stream thread, group.protocol=streams (KIP-1071: the standby replicas are the group's config
 * streams.num.standby.replicas, the client's num.standby.replicas is ignored), at_least_once, commits
 * every 1000 ms, no record cache (statestore.cache.max.bytes 0: each update goes to the changelog and
 * the output as it happens, as in punctual).
 *
 * <p>JSON lines on stdout, each with the wall clock "t" in ms:
 *
 * <ul>
 *   <li>{"started":ms} before the start;
 *   <li>every 100 ms {"t","processed","state","tasks":[active task ids],"restoring":[active task ids whose
 *       store restores],"standbys":[{"taskId","applied","end"}]}: "applied" is the next changelog offset of the store "counts" the standby has applied
 *       (the last batch's end offset + 1, from the StandbyUpdateListener of KIP-988), "end" the changelog's
 *       end offset the listener last reported;
 *   <li>{"restoreStart":{"taskId","store","from","to"}} and {"restored":{"taskId","store","records","ms"}}
 *       when an active task's store restores (the global StateRestoreListener), "from" being the offset
 *       its local state reached;
 *   <li>{"stateChange":"RUNNING"} and the like.
 * </ul>
 *
 * It runs until killed.
 */
public final class FailoverBench {
  /** Per standby task: the next changelog offset applied, and the changelog end offset seen. */
  private static final Map<String, long[]> STANDBY = new ConcurrentHashMap<>();
  /** Per restoring store partition: when its restore started. */
  private static final Map<TopicPartition, Long> RESTORE_STARTED = new ConcurrentHashMap<>();

  private FailoverBench() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String app = args[1];
    String input = args[2];
    String output = args[3];
    String stateDir = args[4];
    Properties props = new Properties();
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
    props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
    props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

    StreamsBuilder b = new StreamsBuilder();
    b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
        .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts").withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
        .toStream()
        .mapValues(v -> String.valueOf(v))
        .to(output, Produced.with(Serdes.String(), Serdes.String()));

    KafkaStreams streams = new KafkaStreams(b.build(), props);
    streams.setStateListener((next, previous) -> print("{\"stateChange\":\"" + next + "\"}"));
    streams.setUncaughtExceptionHandler(e -> {
      e.printStackTrace();
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    streams.setStandbyUpdateListener(new StandbyUpdateListener() {
      @Override
      public void onUpdateStart(TopicPartition tp, String store, long startingOffset) {
        if (store.equals("counts")) STANDBY.put(taskOf(tp), new long[] {startingOffset, -1});
      }

      @Override
      public void onBatchLoaded(TopicPartition tp, String store, TaskId taskId, long batchEndOffset, long numRestored, long currentEndOffset) {
        if (store.equals("counts")) STANDBY.put(taskId.toString(), new long[] {batchEndOffset + 1, currentEndOffset});
      }

      @Override
      public void onUpdateSuspended(TopicPartition tp, String store, long storeOffset, long currentEndOffset, SuspendReason reason) {
        if (!store.equals("counts")) return;
        STANDBY.remove(taskOf(tp));
        print("{\"standbySuspended\":{\"taskId\":\"" + taskOf(tp) + "\",\"storeOffset\":" + storeOffset + ",\"end\":" + currentEndOffset + ",\"reason\":\"" + reason + "\"}}");
      }
    });
    streams.setGlobalStateRestoreListener(new StateRestoreListener() {
      @Override
      public void onRestoreStart(TopicPartition tp, String store, long startingOffset, long endingOffset) {
        RESTORE_STARTED.put(tp, System.currentTimeMillis());
        print("{\"restoreStart\":{\"taskId\":\"" + taskOf(tp) + "\",\"store\":\"" + store + "\",\"from\":" + startingOffset + ",\"to\":" + endingOffset + "}}");
      }

      @Override
      public void onBatchRestored(TopicPartition tp, String store, long batchEndOffset, long numRestored) {}

      @Override
      public void onRestoreEnd(TopicPartition tp, String store, long totalRestored) {
        Long started = RESTORE_STARTED.remove(tp);
        long ms = started == null ? -1 : System.currentTimeMillis() - started;
        print("{\"restored\":{\"taskId\":\"" + taskOf(tp) + "\",\"store\":\"" + store + "\",\"records\":" + totalRestored + ",\"ms\":" + ms + "}}");
      }

      @Override
      public void onRestoreSuspended(TopicPartition tp, String store, long totalRestored) {
        RESTORE_STARTED.remove(tp);
      }
    });

    print("{\"started\":" + System.currentTimeMillis() + "}");
    streams.start();
    while (true) {
      report(streams);
      Thread.sleep(100);
    }
  }

  /** A changelog partition's task: the topology has one subtopology, so task 0_P reads partition P. */
  private static String taskOf(TopicPartition tp) {
    return "0_" + tp.partition();
  }

  private static void report(KafkaStreams streams) {
    List<String> active = new ArrayList<>();
    Map<String, long[]> standbys = new TreeMap<>();
    for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
      for (TaskMetadata t : thread.activeTasks()) active.add("\"" + t.taskId() + "\"");
      for (TaskMetadata t : thread.standbyTasks()) {
        long[] at = STANDBY.get(t.taskId().toString());
        standbys.put(t.taskId().toString(), at == null ? new long[] {0, -1} : at);
      }
    }
    StringBuilder s = new StringBuilder();
    s.append("{\"processed\":").append(processed(streams)).append(",\"state\":\"").append(streams.state()).append("\",\"tasks\":[").append(String.join(",", active)).append("],\"standbys\":[");
    boolean first = true;
    for (Map.Entry<String, long[]> e : standbys.entrySet()) {
      if (!first) s.append(',');
      first = false;
      s.append("{\"taskId\":\"").append(e.getKey()).append("\",\"applied\":").append(e.getValue()[0]).append(",\"end\":").append(e.getValue()[1]).append('}');
    }
    s.append("],\"restoring\":[");
    first = true;
    for (TopicPartition tp : RESTORE_STARTED.keySet()) {
      if (!first) s.append(',');
      first = false;
      s.append("\"").append(taskOf(tp)).append("\"");
    }
    s.append("]}");
    print(s.toString());
  }

  /** Prints a JSON object with the wall clock added as "t". */
  private static void print(String json) {
    System.out.println("{\"t\":" + System.currentTimeMillis() + "," + json.substring(1));
  }

  /** Records the stream thread processed so far (its process-total metric). */
  private static long processed(KafkaStreams streams) {
    double total = 0;
    for (var e : streams.metrics().entrySet()) {
      MetricName name = e.getKey();
      if (name.name().equals("process-total") && name.group().equals("stream-thread-metrics")) total += ((Number) e.getValue().metricValue()).doubleValue();
    }
    return (long) total;
  }
}
