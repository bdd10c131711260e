// Kafka's own Java clients as one tenant, with the names every tenant uses: the
// AdminClient creates "payments" and lists topics and groups; an exactly-once
// pipeline reads "orders" in the KIP-848 consumer group "eos-java" and writes each
// record to "payments" in a transaction that commits the group's offsets
// (sendOffsetsToTransaction: AddOffsetsToTxn and TxnOffsetCommit); a read_committed
// consumer then reads "payments".
//
// Usage: java -cp 'kafka/libs/*' TenantProbe.java BOOTSTRAP CLIENT_PROPERTIES COUNT
// Prints "topics A,B", "groups A,B", "committed N" (the group's committed offset of
// orders-0) and "payments V1,V2,..." (the values read back, sorted); exits 0.

import java.io.FileReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TenantProbe {
    public static void main(String[] args) throws Exception {
        Properties client = new Properties();
        client.put("bootstrap.servers", args[0]);
        try (FileReader reader = new FileReader(args[1])) {
            client.load(reader);
        }
        int count = Integer.parseInt(args[2]);

        try (Admin admin = Admin.create(client)) {
            admin.createTopics(List.of(new NewTopic("payments", 1, (short) 1))).all().get();
        }

        Properties c = new Properties();
        c.putAll(client);
        c.put("group.id", "eos-java");
        c.put("group.protocol", "consumer");
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        c.put("isolation.level", "read_committed");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        Properties p = new Properties();
        p.putAll(client);
        p.put("transactional.id", "eos-java");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        TopicPartition orders = new TopicPartition("orders", 0);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c);
                KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            consumer.subscribe(List.of("orders"));
            int moved = 0;
            long deadline = System.currentTimeMillis() + 90_000;
            while (moved < count && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                long next = -1;
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>("payments", "paid-" + r.value()));
                    next = r.offset() + 1;
                    moved++;
                }
                producer.sendOffsetsToTransaction(
                        Map.of(orders, new OffsetAndMetadata(next)), consumer.groupMetadata());
                producer.commitTransaction();
            }
        }

        try (Admin admin = Admin.create(client)) {
            System.out.println("topics " + String.join(",", new TreeSet<>(admin.listTopics().names().get())));
            TreeSet<String> groups = new TreeSet<>();
            admin.listGroups().all().get().forEach(g -> groups.add(g.groupId()));
            System.out.println("groups " + String.join(",", groups));
            OffsetAndMetadata committed = admin.listConsumerGroupOffsets("eos-java")
                    .partitionsToOffsetAndMetadata().get().get(orders);
            System.out.println("committed " + (committed == null ? -1 : committed.offset()));
        }

        Properties r = new Properties();
        r.putAll(c);
        r.put("group.id", "reader-java");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(r)) {
            consumer.subscribe(List.of("payments"));
            long deadline = System.currentTimeMillis() + 60_000;
            while (values.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> rec : consumer.poll(Duration.ofMillis(500))) {
                    values.add(rec.value());
                }
            }
        }
        Collections.sort(values);
        System.out.println("payments " + String.join(",", values));
    }
}
