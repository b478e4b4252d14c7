package punctual.reference;

import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.processor.TimestampExtractor;

/**
 * A scenario's "timestampExtractor" (../FORMAT.md, "Event time") as Kafka Streams' default timestamp
 * extractor: the time from the record's timestamp or from its value (a decimal integer), and the
 * policy for an invalid one, as Kafka Streams' FailOnInvalidTimestamp, LogAndSkipOnInvalidTimestamp
 * and UsePartitionTimeOnInvalidTimestamp apply it. Configured through the two properties below.
 */
public final class ScenarioTimestamps implements TimestampExtractor, Configurable {
  static final String FROM = "punctual.timestamp.from";
  static final String ON_INVALID = "punctual.timestamp.onInvalid";
  /** In the message of the exception that fails the run, so the harness can report the error output. */
  static final String FAILED = "punctual-invalid-timestamp";

  private boolean fromValue;
  private String onInvalid = "fail";

  @Override
  public void configure(Map<String, ?> configs) {
    fromValue = "value".equals(String.valueOf(configs.get(FROM)));
    Object policy = configs.get(ON_INVALID);
    if (policy != null) onInvalid = policy.toString();
  }

  @Override
  public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
    long t = fromValue ? valueTime(record.value()) : record.timestamp();
    if (t >= 0) return t;
    return switch (onInvalid) {
      case "logAndSkip" -> -1;
      case "usePartitionTime" -> {
        if (partitionTime < 0) throw new StreamsException(FAILED + ": no partition time yet");
        yield partitionTime;
      }
      default -> throw new StreamsException(FAILED + ": " + record.topic() + "-" + record.partition() + "@" + record.offset());
    };
  }

  private static long valueTime(Object value) {
    if (!(value instanceof String s) || !s.matches("[0-9]+")) return -1;
    try {
      return Long.parseLong(s);
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
