// Kafka's own Java producer and consumer, as one principal: what each sees of the
// topics and groups its ACLs (or kproxy's authorization rules) allow or refuse.
//
// Usage: java -cp 'kafka/libs/*' AclProbe.java BOOTSTRAP CLIENT_PROPERTIES TAG
// It prints one line per step, "produce TOPIC ok" or "produce TOPIC <exception>" for
// each topic, then "consume GROUP ok" (a record of auth-a read and its offset committed)
// or "consume GROUP <exception>" for the groups alice-j-TAG and other-j-TAG, the
// exception named by its class (TopicAuthorizationException, ...), and exits 0.

import java.io.FileReader;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class AclProbe {
    public static void main(String[] args) throws Exception {
        Properties client = new Properties();
        client.put("bootstrap.servers", args[0]);
        try (FileReader reader = new FileReader(args[1])) {
            client.load(reader);
        }
        String tag = args[2];

        Properties p = new Properties();
        p.putAll(client);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("max.block.ms", "15000");
        p.put("delivery.timeout.ms", "20000");
        p.put("request.timeout.ms", "15000");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (String topic : List.of("auth-a", "auth-shared", "other-x")) {
                String outcome;
                try {
                    producer.send(new ProducerRecord<>(topic, "java".getBytes())).get();
                    outcome = "ok";
                } catch (ExecutionException e) {
                    outcome = e.getCause().getClass().getSimpleName();
                } catch (RuntimeException e) {
                    outcome = e.getClass().getSimpleName();
                }
                System.out.println("produce " + topic + " " + outcome);
            }
        }

        for (String group : List.of("alice-j-" + tag, "other-j-" + tag)) {
            Properties c = new Properties();
            c.putAll(client);
            c.put("group.id", group);
            c.put("auto.offset.reset", "earliest");
            c.put("enable.auto.commit", "false");
            c.put("key.deserializer", ByteArrayDeserializer.class.getName());
            c.put("value.deserializer", ByteArrayDeserializer.class.getName());
            String outcome = "nothing read";
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
                consumer.subscribe(List.of("auth-a"));
                long deadline = System.currentTimeMillis() + 30_000;
                while (System.currentTimeMillis() < deadline) {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                    if (!records.isEmpty()) {
                        consumer.commitSync();
                        outcome = "ok";
                        break;
                    }
                }
            } catch (RuntimeException e) {
                outcome = e.getClass().getSimpleName();
            }
            System.out.println("consume " + group + " " + outcome);
        }
    }
}
