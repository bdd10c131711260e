// A Java consumer (the Kafka client kproxy's tests run against) reads two partitions
// through kproxy while partition 1's leader moves under it. Both partitions start on the
// same leader; the consumer learns that leader and its positions, then partition 1 moves,
// and the consumer's first Fetch goes to the old leader for both. Its response carries
// up to 1 MiB of partition 0's records and, after them, partition 1's
// NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH) with KIP-951's CurrentLeader and
// NodeEndpoints in the tagged tail: a response kproxy streams, and whose tail it rewrites
// at the length it already announced.
//
// Usage: java -cp 'kafka/libs/*' ConsumeThroughLeaderMove.java BOOTSTRAP TOPIC BACKLOG MOVED
// Partition 0 must hold BACKLOG records ("i:...") and partition 1 MOVED/2 ("i")
// beforehand; this program writes the other MOVED/2 to partition 1 once the consumer has
// records. It prints one line per step and exits 0 once every record of both partitions
// was read, in order.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ConsumeThroughLeaderMove {
    static final long DEADLINE_MS = 120_000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int backlog = Integer.parseInt(args[2]);
        int moved = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);

        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(common)) {
            int first = leader(admin, p0);
            moveLeader(admin, p1, first, deadline);
            System.out.println("both partitions led by " + first);

            Properties c = new Properties();
            c.putAll(common);
            c.put("key.deserializer", ByteArrayDeserializer.class.getName());
            c.put("value.deserializer", ByteArrayDeserializer.class.getName());
            c.put("enable.auto.commit", "false");
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
                consumer.assign(List.of(p0, p1));
                consumer.seekToBeginning(List.of(p0, p1));
                // Positions resolved (and the leaders cached) before anything is fetched,
                // so nothing of partition 0 is buffered when the first Fetch is sent.
                consumer.position(p0);
                consumer.position(p1);
                int target = other(admin, p1, first);
                moveLeader(admin, p1, target, deadline);
                System.out.println("partition 1 moved from " + first + " to " + target);
                List<String> seen0 = new ArrayList<>();
                List<String> seen1 = new ArrayList<>();
                boolean written = false;
                while (seen0.size() < backlog || seen1.size() < moved) {
                    if (System.currentTimeMillis() > deadline) {
                        System.out.println("timed out: " + seen0.size() + " of " + backlog
                                + " and " + seen1.size() + " of " + moved);
                        System.exit(2);
                    }
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                        (r.partition() == 0 ? seen0 : seen1).add(new String(r.value()));
                    }
                    if (!written && !seen0.isEmpty()) {
                        written = true;
                        produce(common, topic, moved / 2, moved);
                    }
                }
                for (int i = 0; i < backlog; i++) {
                    if (!seen0.get(i).startsWith(i + ":")) {
                        System.out.println("partition 0 out of order at " + i + ": " + seen0.get(i));
                        System.exit(4);
                    }
                }
                for (int i = 0; i < moved; i++) {
                    if (!seen1.get(i).equals(Integer.toString(i))) {
                        System.out.println("partition 1 out of order at " + i + ": " + seen1.get(i));
                        System.exit(4);
                    }
                }
                System.out.println("read " + seen0.size() + " and " + seen1.size() + " records");
            }
        }
    }

    static TopicPartitionInfo describe(Admin admin, TopicPartition tp) throws Exception {
        TopicDescription d =
                admin.describeTopics(List.of(tp.topic())).allTopicNames().get().get(tp.topic());
        return d.partitions().get(tp.partition());
    }

    static int leader(Admin admin, TopicPartition tp) throws Exception {
        return describe(admin, tp).leader().id();
    }

    static int other(Admin admin, TopicPartition tp, int not) throws Exception {
        return describe(admin, tp).replicas().stream()
                .mapToInt(n -> n.id()).filter(id -> id != not).findFirst().orElseThrow();
    }

    /** Reassign with target first (the preferred replica), then elect it. */
    static void moveLeader(Admin admin, TopicPartition tp, int target, long deadline)
            throws Exception {
        if (leader(admin, tp) == target) {
            return;
        }
        List<Integer> replicas = new ArrayList<>(List.of(target));
        describe(admin, tp).replicas().stream()
                .map(n -> n.id()).filter(id -> id != target).forEach(replicas::add);
        admin.alterPartitionReassignments(
                Map.of(tp, Optional.of(new NewPartitionReassignment(replicas)))).all().get();
        while (!admin.listPartitionReassignments(Set.of(tp)).reassignments().get().isEmpty()) {
            waitOrFail(deadline, "the reassignment of " + tp);
        }
        while (leader(admin, tp) != target) {
            try {
                admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get()
                        .get(tp).ifPresent(e -> {
                            if (!(e instanceof ElectionNotNeededException)) {
                                System.out.println("election: " + e);
                            }
                        });
            } catch (Exception e) {
                System.out.println("election: " + e);
            }
            waitOrFail(deadline, "leader " + target + " for " + tp);
        }
    }

    static void waitOrFail(long deadline, String what) throws InterruptedException {
        if (System.currentTimeMillis() > deadline) {
            System.out.println("timed out waiting for " + what);
            System.exit(2);
        }
        Thread.sleep(50);
    }

    static void produce(Properties common, String topic, int from, int to) throws Exception {
        Properties p = new Properties();
        p.putAll(common);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("acks", "all");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = from; i < to; i++) {
                producer.send(new ProducerRecord<>(topic, 1, null, Integer.toString(i).getBytes()))
                        .get();
            }
        }
    }
}
