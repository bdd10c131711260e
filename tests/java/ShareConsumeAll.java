// Kafka's own share consumer (KIP-932, KafkaShareConsumer) reads a topic through kproxy
// until it has seen every record: each record acknowledged one by one (explicit mode), the
// acknowledgements committed after every poll. Its ShareFetch and ShareAcknowledge go to
// the partition leaders kproxy advertises; when a leader moves, the old leader answers
// NOT_LEADER_OR_FOLLOWER with CurrentLeader and NodeEndpoints, which kproxy rewrites.
//
// Usage: java -cp 'kafka/libs/*' ShareConsumeAll.java BOOTSTRAP TOPIC GROUP COUNT
// The records' values are the decimal numbers 0..COUNT-1 (in any partition); the group's
// share.auto.offset.reset must be earliest beforehand. It prints "have N" whenever N
// distinct values have been read (N grows), and exits 0 with "read COUNT records in D
// deliveries" once every value was read, 2 if that takes longer than two minutes.

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareConsumeAll {
    static final long DEADLINE_MS = 120_000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        int count = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + DEADLINE_MS;

        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        c.put("share.acknowledgement.mode", "explicit");
        Set<String> seen = new HashSet<>();
        long deliveries = 0;
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(c)) {
            consumer.subscribe(List.of(topic));
            while (seen.size() < count) {
                if (System.currentTimeMillis() > deadline) {
                    System.out.println("timed out: " + seen.size() + " of " + count);
                    System.exit(2);
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                int before = seen.size();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    seen.add(new String(r.value()));
                    deliveries++;
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (!records.isEmpty()) {
                    Map<TopicIdPartition, Optional<KafkaException>> acks = consumer.commitSync();
                    acks.forEach((tp, error) -> error.ifPresent(
                            e -> System.out.println("acknowledgement of " + tp + ": " + e)));
                }
                if (seen.size() > before) {
                    System.out.println("have " + seen.size());
                }
            }
        }
        System.out.println("read " + seen.size() + " records in " + deliveries + " deliveries");
    }
}
