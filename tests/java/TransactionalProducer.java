// Kafka's Java transactional producer through a cluster switchover
// (tests/integration/test_switchover_kafka.py): transactions of RECORDS records each,
// VALUE_PREFIX<n>-<j>, through kproxy's BOOTSTRAP, the producer never restarted nor
// reconfigured while kproxy moves the cluster under it. What a transaction's error asks
// for is done: an abortable one is aborted and the producer goes on; a fatal one (the
// producer refuses to abort) closes it and makes a new one, as Kafka's documentation
// says to. One line per fact:
//   COMMITTED <n>        commitTransaction returned
//   ABORTED <n> <err>    the transaction failed and was aborted
//   FATAL <n> <err>      the producer could not go on (then a new one is made)
// It stops once the file STOP exists (then DONE).
//
// Usage: java -cp 'kafka/libs/*' TransactionalProducer.java BOOTSTRAP TOPIC
//        TRANSACTIONAL_ID VALUE_PREFIX RECORDS STOP

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TransactionalProducer {
    static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, String transactionalId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", transactionalId);
        p.put("transactional.id", transactionalId);
        p.put("transaction.timeout.ms", "60000");
        p.put("linger.ms", "5");
        KafkaProducer<byte[], byte[]> made =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        made.initTransactions();
        return made;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String transactionalId = args[2];
        String prefix = args[3];
        int records = Integer.parseInt(args[4]);
        Path stop = Path.of(args[5]);
        KafkaProducer<byte[], byte[]> producer = producer(bootstrap, transactionalId);
        for (int n = 0; !Files.exists(stop); n++) {
            try {
                producer.beginTransaction();
                for (int j = 0; j < records; j++) {
                    String value = prefix + n + "-" + j;
                    producer.send(new ProducerRecord<>(topic, value.getBytes(StandardCharsets.UTF_8)));
                    Thread.sleep(2);
                }
                producer.commitTransaction();
                OUT.println("COMMITTED " + n);
            } catch (KafkaException e) {
                try {
                    producer.abortTransaction();
                    OUT.println("ABORTED " + n + " " + e);
                } catch (KafkaException fatal) {
                    OUT.println("FATAL " + n + " " + e);
                    producer.close(Duration.ofSeconds(5));
                    producer = producer(bootstrap, transactionalId);
                }
            }
        }
        producer.close(Duration.ofSeconds(10));
        OUT.println("DONE");
    }
}
