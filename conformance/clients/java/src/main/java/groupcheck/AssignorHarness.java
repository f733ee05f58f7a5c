package groupcheck;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * Runs a kafka-clients assignor the way a group leader does, one NDJSON request per stdin line and one
 * NDJSON answer per stdout line (groupcheck conformance/clients/protocol.md).
 *
 * <p>The same source builds against kafka-clients 2.2.x (assignors implement
 * {@code consumer.internals.PartitionAssignor}) and 2.4+ ({@code consumer.ConsumerPartitionAssignor}, KIP-429):
 * the assignor API is reached by reflection. A member's user data is either given as bytes or made by its
 * own assignor instance, after {@code onAssignment} of its prior assignment, the way a member builds its
 * JoinGroup metadata.
 */
public final class AssignorHarness {
    static final int MAX_LINE = 1 << 20;
    static final int MAX_DEPTH = 8;
    static final int MAX_MEMBERS = 64;
    static final int MAX_TOPICS = 64;
    static final int MAX_PARTITIONS = 4096;
    static final int MAX_USER_DATA = 1 << 16;
    static final String PKG = "org.apache.kafka.clients.consumer.";

    private final boolean modern;
    private final Class<?> subscriptionClass;
    private final Class<?> assignmentClass;
    private final Node node = new Node(0, "localhost", 9092);

    private AssignorHarness() throws ClassNotFoundException {
        Class<?> api = optionalClass(PKG + "ConsumerPartitionAssignor");
        modern = api != null;
        String base = modern ? PKG + "ConsumerPartitionAssignor$" : PKG + "internals.PartitionAssignor$";
        subscriptionClass = Class.forName(base + "Subscription");
        assignmentClass = Class.forName(base + "Assignment");
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8.name());
        AssignorHarness harness = new AssignorHarness();
        Map<String, Object> hello = new LinkedHashMap<>();
        hello.put("hello", "groupcheck-assignor-harness");
        hello.put("library", "kafka-clients");
        hello.put("version", kafkaVersion());
        hello.put("api", harness.modern ? "ConsumerPartitionAssignor" : "PartitionAssignor");
        out.println(Json.write(hello));
        out.flush();
        InputStream in = System.in;
        while (true) {
            byte[] line = readLine(in);
            if (line == null)
                break;
            out.println(Json.write(harness.answer(line)));
            out.flush();
        }
    }

    /** One line of at most MAX_LINE bytes, without its newline; an over-long line is read to its end and reported. */
    static byte[] readLine(InputStream in) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        boolean tooLong = false;
        int b;
        while ((b = in.read()) != -1 && b != '\n') {
            if (buf.size() < MAX_LINE)
                buf.write(b);
            else
                tooLong = true;
        }
        if (b == -1 && buf.size() == 0)
            return null;
        return tooLong ? new byte[] {0} : buf.toByteArray();
    }

    Map<String, Object> answer(byte[] line) {
        Map<String, Object> reply = new LinkedHashMap<>();
        Object id = null;
        try {
            Map<String, Object> request = Json.object(Json.parse(new String(line, StandardCharsets.UTF_8), MAX_DEPTH), "request");
            id = request.get("id");
            reply.put("id", id);
            run(request, reply);
        } catch (BadRequest e) {
            reply.clear();
            reply.put("id", id);
            reply.put("ok", false);
            reply.put("bad_request", e.getMessage());
        } catch (RuntimeException | StackOverflowError e) {
            reply.clear();
            reply.put("id", id);
            reply.put("ok", false);
            reply.put("error", describe(e));
        }
        return reply;
    }

    private void run(Map<String, Object> request, Map<String, Object> reply) throws BadRequest {
        String name = Json.string(request.get("assignor"), "assignor");
        String className = classFor(name);
        Map<String, Object> partitions = Json.object(request.get("partitions"), "partitions");
        if (partitions.size() > MAX_TOPICS)
            throw new BadRequest("partitions: more than " + MAX_TOPICS + " topics");
        List<PartitionInfo> infos = new ArrayList<>();
        for (Map.Entry<String, Object> e : partitions.entrySet()) {
            int count = Json.integer(e.getValue(), "partitions." + e.getKey(), 1, MAX_PARTITIONS);
            Node[] replicas = {node};
            for (int p = 0; p < count; p++)
                infos.add(new PartitionInfo(e.getKey(), p, node, replicas, replicas));
        }
        Cluster cluster = new Cluster("groupcheck", Collections.singletonList(node), infos,
            Collections.<String>emptySet(), Collections.<String>emptySet());
        List<Object> members = Json.array(request.get("members"), "members");
        if (members.isEmpty() || members.size() > MAX_MEMBERS)
            throw new BadRequest("members: between 1 and " + MAX_MEMBERS + " required");
        Class<?> assignorClass = optionalClass(className);
        if (assignorClass == null) {
            reply.put("ok", false);
            reply.put("unavailable", className + " is not in kafka-clients " + kafkaVersion());
            return;
        }
        Map<String, Object> subscriptions = new LinkedHashMap<>();
        List<Object> seen = new ArrayList<>();
        try {
            for (int i = 0; i < members.size(); i++) {
                Map<String, Object> m = Json.object(members.get(i), "members[" + i + "]");
                String memberId = Json.string(m.get("member_id"), "members[" + i + "].member_id");
                if (subscriptions.containsKey(memberId))
                    throw new BadRequest("members[" + i + "]: duplicate member_id " + memberId);
                subscriptions.put(memberId, subscription(assignorClass, memberId, m, "members[" + i + "]"));
            }
            for (Map.Entry<String, Object> e : subscriptions.entrySet())
                seen.add(describe(e.getKey(), e.getValue()));
        } catch (ReflectiveOperationException e) {
            reply.put("ok", false);
            reply.put("error", describe(e));
            return;
        }
        reply.put("subscriptions", seen);
        Map<String, Object> assignments;
        try {
            Object leader = assignorClass.getDeclaredConstructor().newInstance();
            assignments = assign(leader, cluster, subscriptions);
        } catch (ReflectiveOperationException | RuntimeException | StackOverflowError e) {
            reply.put("ok", false);
            reply.put("error", describe(e));
            return;
        }
        Map<String, Object> result = new LinkedHashMap<>();
        for (String member : subscriptions.keySet())
            if (assignments.containsKey(member))
                result.put(member, partitionsOf(assignments.get(member)));
        for (String member : new TreeMap<>(assignments).keySet())
            if (!result.containsKey(member))
                result.put(member, partitionsOf(assignments.get(member)));
        reply.put("ok", true);
        reply.put("assignment", result);
    }

    static String classFor(String name) throws BadRequest {
        switch (name) {
            case "range": return PKG + "RangeAssignor";
            case "roundrobin": return PKG + "RoundRobinAssignor";
            case "sticky": return PKG + "StickyAssignor";
            case "cooperative-sticky": return PKG + "CooperativeStickyAssignor";
            default: throw new BadRequest("assignor: unknown " + name);
        }
    }

    /** The Subscription the leader decodes for one member; user data made by the member's own assignor if asked. */
    private Object subscription(Class<?> assignorClass, String memberId, Map<String, Object> m, String where)
        throws BadRequest, ReflectiveOperationException {
        List<String> topics = new ArrayList<>();
        for (Object t : Json.array(m.get("topics"), where + ".topics"))
            topics.add(Json.string(t, where + ".topics[]"));
        if (topics.size() > MAX_TOPICS)
            throw new BadRequest(where + ".topics: more than " + MAX_TOPICS);
        List<TopicPartition> owned = topicPartitions(m.get("owned"), where + ".owned");
        int generation = Json.integer(m.get("generation"), where + ".generation", -1, Integer.MAX_VALUE);
        ByteBuffer userData = null;
        Object prior = m.get("prior");
        Object given = m.get("user_data");
        if (prior != null && given != null)
            throw new BadRequest(where + ": give user_data or prior, not both");
        if (given != null) {
            byte[] raw;
            try {
                raw = Base64.getDecoder().decode(Json.string(given, where + ".user_data"));
            } catch (IllegalArgumentException e) {
                throw new BadRequest(where + ".user_data: not base64");
            }
            if (raw.length > MAX_USER_DATA)
                throw new BadRequest(where + ".user_data: longer than " + MAX_USER_DATA + " bytes");
            userData = ByteBuffer.wrap(raw);
        } else if (prior != null) {
            Map<String, Object> p = Json.object(prior, where + ".prior");
            List<TopicPartition> last = topicPartitions(p.get("partitions"), where + ".prior.partitions");
            int lastGeneration = Json.integer(p.get("generation"), where + ".prior.generation", -1, Integer.MAX_VALUE);
            userData = memberUserData(assignorClass, memberId, topics, last, lastGeneration);
        }
        if (!modern)
            return subscriptionClass.getConstructor(List.class, ByteBuffer.class).newInstance(topics, userData);
        try {
            Constructor<?> c = subscriptionClass.getConstructor(List.class, ByteBuffer.class, List.class, int.class, Optional.class);
            return c.newInstance(topics, userData, owned, generation, Optional.empty());
        } catch (NoSuchMethodException e) {
            return subscriptionClass.getConstructor(List.class, ByteBuffer.class, List.class).newInstance(topics, userData, owned);
        }
    }

    /** User data as the member's own assignor writes it after receiving `last` in generation `lastGeneration`. */
    private ByteBuffer memberUserData(Class<?> assignorClass, String memberId, List<String> topics,
                                      List<TopicPartition> last, int lastGeneration) throws ReflectiveOperationException {
        Object member = assignorClass.getDeclaredConstructor().newInstance();
        Object assignment = assignmentClass.getConstructor(List.class).newInstance(last);
        if (modern) {
            Class<?> metaClass = Class.forName(PKG + "ConsumerGroupMetadata");
            Object meta = metaClass.getConstructor(String.class, int.class, String.class, Optional.class)
                .newInstance("groupcheck", lastGeneration, memberId, Optional.empty());
            assignorClass.getMethod("onAssignment", assignmentClass, metaClass).invoke(member, assignment, meta);
            return (ByteBuffer) assignorClass.getMethod("subscriptionUserData", java.util.Set.class)
                .invoke(member, new HashSet<>(topics));
        }
        assignorClass.getMethod("onAssignment", assignmentClass).invoke(member, assignment);
        Object sub = assignorClass.getMethod("subscription", java.util.Set.class).invoke(member, new HashSet<>(topics));
        return (ByteBuffer) subscriptionClass.getMethod("userData").invoke(sub);
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> assign(Object leader, Cluster cluster, Map<String, Object> subscriptions)
        throws ReflectiveOperationException {
        if (!modern) {
            Method m = leader.getClass().getMethod("assign", Cluster.class, Map.class);
            return (Map<String, Object>) m.invoke(leader, cluster, subscriptions);
        }
        Class<?> groupSub = Class.forName(PKG + "ConsumerPartitionAssignor$GroupSubscription");
        Object group = groupSub.getConstructor(Map.class).newInstance(subscriptions);
        Object result = leader.getClass().getMethod("assign", Cluster.class, groupSub).invoke(leader, cluster, group);
        return (Map<String, Object>) result.getClass().getMethod("groupAssignment").invoke(result);
    }

    /** What the leader's assign() receives for one member: topics, user data, owned partitions, generation. */
    @SuppressWarnings("unchecked")
    private Map<String, Object> describe(String memberId, Object sub) throws ReflectiveOperationException {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("member_id", memberId);
        d.put("topics", new ArrayList<>((List<String>) subscriptionClass.getMethod("topics").invoke(sub)));
        ByteBuffer ud = (ByteBuffer) subscriptionClass.getMethod("userData").invoke(sub);
        if (ud == null) {
            d.put("user_data", null);
        } else {
            ByteBuffer copy = ud.duplicate();
            byte[] raw = new byte[copy.remaining()];
            copy.get(raw);
            d.put("user_data", Base64.getEncoder().encodeToString(raw));
        }
        List<Object> owned = new ArrayList<>();
        int generation = -1;
        if (modern) {
            for (TopicPartition tp : (List<TopicPartition>) subscriptionClass.getMethod("ownedPartitions").invoke(sub))
                owned.add(pair(tp));
            try {
                Optional<Integer> g = (Optional<Integer>) subscriptionClass.getMethod("generationId").invoke(sub);
                generation = g.orElse(-1);
            } catch (NoSuchMethodException e) {
                generation = -1;
            }
        }
        d.put("owned", owned);
        d.put("generation", generation);
        return d;
    }

    private List<Object> partitionsOf(Object assignment) throws IllegalArgumentException {
        List<Object> out = new ArrayList<>();
        try {
            for (Object tp : (Collection<?>) assignmentClass.getMethod("partitions").invoke(assignment))
                out.add(pair((TopicPartition) tp));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        return out;
    }

    private static List<Object> pair(TopicPartition tp) {
        List<Object> p = new ArrayList<>();
        p.add(tp.topic());
        p.add((long) tp.partition());
        return p;
    }

    private static List<TopicPartition> topicPartitions(Object value, String where) throws BadRequest {
        List<TopicPartition> out = new ArrayList<>();
        List<Object> items = Json.array(value, where);
        if (items.size() > MAX_PARTITIONS)
            throw new BadRequest(where + ": more than " + MAX_PARTITIONS + " partitions");
        for (Object item : items) {
            List<Object> tp = Json.array(item, where + "[]");
            if (tp.size() != 2)
                throw new BadRequest(where + ": each entry is [topic, partition]");
            out.add(new TopicPartition(Json.string(tp.get(0), where + "[].topic"),
                Json.integer(tp.get(1), where + "[].partition", 0, Integer.MAX_VALUE)));
        }
        return out;
    }

    /** The version kafka-clients records in its own jar (kafka/kafka-version.properties). */
    static String kafkaVersion() {
        java.util.Properties props = new java.util.Properties();
        try (InputStream in = Cluster.class.getClassLoader().getResourceAsStream("kafka/kafka-version.properties")) {
            if (in != null)
                props.load(in);
        } catch (IOException e) {
            return "unknown";
        }
        return props.getProperty("version", "unknown").trim();
    }

    static Class<?> optionalClass(String name) {
        try {
            return Class.forName(name);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    /** One line naming the exception and the first kafka-clients frame it passed through. */
    static String describe(Throwable e) {
        Throwable t = e;
        while (t instanceof InvocationTargetException && t.getCause() != null)
            t = t.getCause();
        StringBuilder s = new StringBuilder(t.getClass().getName());
        if (t.getMessage() != null)
            s.append(": ").append(t.getMessage());
        for (StackTraceElement frame : t.getStackTrace()) {
            if (frame.getClassName().startsWith("org.apache.kafka.")) {
                s.append(" at ").append(frame);
                break;
            }
        }
        String text = s.toString().replace('\n', ' ');
        return text.length() > 600 ? text.substring(0, 600) : text;
    }

    static final class BadRequest extends Exception {
        BadRequest(String message) {
            super(message);
        }
    }

    /** A strict, bounded JSON reader and a writer for the values it produces. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String text, int maxDepth) throws BadRequest {
            Json j = new Json(text);
            Object v = j.value(maxDepth);
            j.space();
            if (j.i != j.s.length())
                throw new BadRequest("trailing characters at offset " + j.i);
            return v;
        }

        private void space() {
            while (i < s.length() && " \t\r".indexOf(s.charAt(i)) >= 0)
                i++;
        }

        private Object value(int depth) throws BadRequest {
            if (depth < 0)
                throw new BadRequest("nested too deeply at offset " + i);
            space();
            if (i >= s.length())
                throw new BadRequest("unexpected end of line");
            char c = s.charAt(i);
            if (c == '{') {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                space();
                if (peek('}'))
                    return m;
                do {
                    space();
                    String k = str();
                    space();
                    expect(':');
                    if (m.put(k, value(depth - 1)) != null)
                        throw new BadRequest("duplicate key " + k);
                    space();
                } while (peek(','));
                expect('}');
                return m;
            }
            if (c == '[') {
                List<Object> a = new ArrayList<>();
                i++;
                space();
                if (peek(']'))
                    return a;
                do {
                    a.add(value(depth - 1));
                    space();
                } while (peek(','));
                expect(']');
                return a;
            }
            if (c == '"')
                return str();
            if (s.startsWith("null", i)) {
                i += 4;
                return null;
            }
            if (s.startsWith("true", i)) {
                i += 4;
                return Boolean.TRUE;
            }
            if (s.startsWith("false", i)) {
                i += 5;
                return Boolean.FALSE;
            }
            int start = i;
            if (peek('-'))
                start = i - 1;
            while (i < s.length() && Character.isDigit(s.charAt(i)))
                i++;
            if (i == start || i - start > 19)
                throw new BadRequest("bad value at offset " + start);
            try {
                return Long.parseLong(s.substring(start, i));
            } catch (NumberFormatException e) {
                throw new BadRequest("bad integer at offset " + start);
            }
        }

        private boolean peek(char c) {
            if (i < s.length() && s.charAt(i) == c) {
                i++;
                return true;
            }
            return false;
        }

        private void expect(char c) throws BadRequest {
            if (!peek(c))
                throw new BadRequest("expected '" + c + "' at offset " + i);
        }

        private String str() throws BadRequest {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (i < s.length()) {
                char c = s.charAt(i++);
                if (c == '"')
                    return b.toString();
                if (c < 0x20)
                    throw new BadRequest("control character in string at offset " + (i - 1));
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                if (i >= s.length())
                    break;
                char e = s.charAt(i++);
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u':
                        if (i + 4 > s.length())
                            throw new BadRequest("bad escape at offset " + i);
                        try {
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException x) {
                            throw new BadRequest("bad escape at offset " + i);
                        }
                        i += 4;
                        break;
                    default: throw new BadRequest("bad escape at offset " + (i - 1));
                }
            }
            throw new BadRequest("unterminated string");
        }

        @SuppressWarnings("unchecked")
        static Map<String, Object> object(Object v, String where) throws BadRequest {
            if (!(v instanceof Map))
                throw new BadRequest(where + ": expected an object");
            return (Map<String, Object>) v;
        }

        @SuppressWarnings("unchecked")
        static List<Object> array(Object v, String where) throws BadRequest {
            if (!(v instanceof List))
                throw new BadRequest(where + ": expected an array");
            return (List<Object>) v;
        }

        static String string(Object v, String where) throws BadRequest {
            if (!(v instanceof String))
                throw new BadRequest(where + ": expected a string");
            return (String) v;
        }

        static int integer(Object v, String where, long min, long max) throws BadRequest {
            if (!(v instanceof Long) || (Long) v < min || (Long) v > max)
                throw new BadRequest(where + ": expected an integer in [" + min + ", " + max + "]");
            return (int) (long) (Long) v;
        }

        static String write(Object v) {
            StringBuilder b = new StringBuilder();
            write(v, b);
            return b.toString();
        }

        private static void write(Object v, StringBuilder b) {
            if (v == null) {
                b.append("null");
            } else if (v instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    if (!first)
                        b.append(',');
                    first = false;
                    write(String.valueOf(e.getKey()), b);
                    b.append(':');
                    write(e.getValue(), b);
                }
                b.append('}');
            } else if (v instanceof List) {
                b.append('[');
                boolean first = true;
                for (Object o : (List<?>) v) {
                    if (!first)
                        b.append(',');
                    first = false;
                    write(o, b);
                }
                b.append(']');
            } else if (v instanceof String) {
                b.append('"');
                for (char c : ((String) v).toCharArray()) {
                    if (c == '"' || c == '\\')
                        b.append('\\').append(c);
                    else if (c < 0x20 || c > 0x7e)
                        b.append(String.format("\\u%04x", (int) c));
                    else
                        b.append(c);
                }
                b.append('"');
            } else {
                b.append(v);
            }
        }
    }
}
