package groupcheck;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.LinkedBlockingQueue;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A KafkaConsumer in one group, driven over stdin and reporting over stdout, one line each way
 * (groupcheck docs/clients.md, "Real consumers"): commands {@code commit OFFSET} (commit OFFSET for
 * every partition the consumer holds, synchronously) and {@code leave} (close the consumer); events
 * {@code ready}, {@code assigned}, {@code revoked}, {@code lost}, {@code committed}, {@code left} as
 * JSON objects. The consumer leaves when stdin closes or after {@code seconds}, whichever is first.
 */
public final class ConsumerHarness {
    static final String[] ASSIGNORS = {"range", "roundrobin", "sticky", "cooperative-sticky"};
    static final String[] CLASSES = {
        "org.apache.kafka.clients.consumer.RangeAssignor",
        "org.apache.kafka.clients.consumer.RoundRobinAssignor",
        "org.apache.kafka.clients.consumer.StickyAssignor",
        "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
    };
    static final int MAX_LINE = 4096;

    private ConsumerHarness() {}

    static synchronized void emit(String event, String fields) {
        System.out.println("{\"event\":\"" + event + "\"" + (fields.isEmpty() ? "" : "," + fields) + "}");
        System.out.flush();
    }

    static String partitions(Collection<TopicPartition> parts) {
        TreeSet<String> names = new TreeSet<>();
        for (TopicPartition tp : parts) {
            names.add(tp.topic() + ":" + tp.partition());
        }
        StringBuilder out = new StringBuilder("\"partitions\":[");
        String sep = "";
        for (String name : names) {
            out.append(sep).append(quote(name));
            sep = ",";
        }
        return out.append("]").toString();
    }

    static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append("\"").toString();
    }

    /** The version kafka-clients records in its own jar (kafka/kafka-version.properties). */
    static String kafkaVersion() {
        Properties props = new Properties();
        try (java.io.InputStream in =
                KafkaConsumer.class.getClassLoader().getResourceAsStream("kafka/kafka-version.properties")) {
            if (in != null) {
                props.load(in);
            }
        } catch (java.io.IOException e) {
            return "unknown";
        }
        return props.getProperty("version", "unknown").trim();
    }

    static String arg(Map<String, String> args, String name) {
        String value = args.get(name);
        if (value == null) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return value;
    }

    @SuppressWarnings("deprecation")
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        }
        String protocol = arg(args, "protocol");
        double seconds = Double.parseDouble(arg(args, "seconds"));
        if (!(seconds > 0 && seconds <= 600) || !(protocol.equals("classic") || protocol.equals("consumer"))) {
            throw new IllegalArgumentException("--protocol classic|consumer, --seconds in (0, 600]");
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", arg(args, "bootstrap"));
        props.put("group.id", arg(args, "group"));
        props.put("client.id", arg(args, "client-id"));
        props.put("group.protocol", protocol);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("fetch.max.wait.ms", "500");
        props.put("request.timeout.ms", "10000");
        props.put("default.api.timeout.ms", "10000");
        props.put("reconnect.backoff.max.ms", "1000");
        props.put("retry.backoff.max.ms", "1000");
        if (protocol.equals("classic")) {
            String assignor = args.getOrDefault("assignor", "range");
            int index = java.util.Arrays.asList(ASSIGNORS).indexOf(assignor);
            if (index < 0) {
                throw new IllegalArgumentException("--assignor " + assignor);
            }
            props.put("partition.assignment.strategy", CLASSES[index]);
            props.put("session.timeout.ms", "6000");
            props.put("heartbeat.interval.ms", "500");
            props.put("max.poll.interval.ms", "30000");
        }
        LinkedBlockingQueue<String> commands = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> readCommands(commands), "stdin");
        reader.setDaemon(true);
        reader.start();
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(arg(args, "topic")), new Listener(consumer));
            emit("ready", "\"library\":\"kafka-clients\",\"version\":"
                    + quote(kafkaVersion()));
            while (System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(100));
                String command = commands.poll();
                if (command == null) {
                    continue;
                }
                if (command.equals("leave")) {
                    break;
                }
                if (command.startsWith("commit ")) {
                    commit(consumer, Long.parseLong(command.substring(7).trim()));
                }
            }
            consumer.close(Duration.ofSeconds(10));
            emit("left", "\"ok\":true");
        }
    }

    static void commit(KafkaConsumer<byte[], byte[]> consumer, long offset) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition tp : consumer.assignment()) {
            offsets.put(tp, new OffsetAndMetadata(offset));
        }
        String parts = partitions(offsets.keySet());
        if (offsets.isEmpty()) {
            emit("committed", "\"ok\":true," + parts);
            return;
        }
        try {
            consumer.commitSync(offsets, Duration.ofSeconds(10));
            emit("committed", "\"ok\":true," + parts);
        } catch (RuntimeException e) {
            emit("committed", "\"ok\":false," + parts + ",\"error\":" + quote(e.getClass().getSimpleName()));
        }
    }

    static void readCommands(LinkedBlockingQueue<String> commands) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.length() <= MAX_LINE) {
                    commands.add(line.trim());
                }
            }
        } catch (java.io.IOException e) {
            // stdin closed: leave below
        }
        commands.add("leave");
    }

    /** Reports the rebalance callbacks as events. */
    static final class Listener implements ConsumerRebalanceListener {
        private final KafkaConsumer<byte[], byte[]> consumer;

        Listener(KafkaConsumer<byte[], byte[]> consumer) {
            this.consumer = consumer;
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
            emit("assigned", partitions(parts) + ",\"holding\":" + partitions(consumer.assignment()).substring(13));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            emit("revoked", partitions(new ArrayList<>(parts)));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> parts) {
            emit("lost", partitions(new ArrayList<>(parts)));
        }
    }
}
