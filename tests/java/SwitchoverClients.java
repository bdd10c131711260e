// Kafka's Java clients through a cluster switchover (tests/integration/test_switchover_kafka.py):
// an idempotent producer (acks=all) writing VALUE_PREFIX-<i> and a consumer of GROUP,
// both through kproxy's BOOTSTRAP, neither restarted nor reconfigured while kproxy moves
// the cluster under them. It prints one line per fact, which the test reads:
//   ACKED <value>        the producer's callback had no error
//   FAILED <value> <err> it had one
//   CONSUMED <value>     the consumer returned the record
// and stops producing once the file STOP_PRODUCING exists (flushing first: then it prints
// PRODUCER CLOSED), and consuming once STOP_CONSUMING exists (then DONE).
//
// Usage: java -cp 'kafka/libs/*' SwitchoverClients.java BOOTSTRAP TOPIC GROUP VALUE_PREFIX
//        STOP_PRODUCING STOP_CONSUMING

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class SwitchoverClients {
    static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);

    static synchronized void say(String line) {
        OUT.println(line);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        String prefix = args[3];
        Path stopProducing = Path.of(args[4]);
        Path stopConsuming = Path.of(args[5]);

        Thread producing = new Thread(() -> produce(bootstrap, topic, prefix, stopProducing));
        producing.start();

        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("client.id", prefix + "-consumer");
        c.put("group.id", group);
        c.put("auto.offset.reset", "earliest");
        c.put("auto.commit.interval.ms", "500");
        c.put("fetch.max.wait.ms", "200");
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            while (!Files.exists(stopConsuming)) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    say("CONSUMED " + new String(r.value(), StandardCharsets.UTF_8));
                }
            }
        }
        producing.join();
        say("DONE");
    }

    static void produce(String bootstrap, String topic, String prefix, Path stop) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", prefix + "-producer");
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("linger.ms", "5");
        p.put("delivery.timeout.ms", "120000");
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            int i = 0;
            while (!Files.exists(stop)) {
                String value = prefix + "-" + i++;
                producer.send(
                        new ProducerRecord<>(topic, value.getBytes(StandardCharsets.UTF_8)),
                        (metadata, error) -> {
                            if (error == null) {
                                say("ACKED " + value);
                            } else {
                                say("FAILED " + value + " " + error);
                            }
                        });
                Thread.sleep(2);
            }
            producer.flush();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        say("PRODUCER CLOSED");
    }
}
