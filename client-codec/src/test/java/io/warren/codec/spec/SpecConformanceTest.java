package io.warren.codec.spec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.util.AsciiString;
import io.warren.codec.Frames;
import io.warren.codec.base.FrameType;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.ArgumentType;
import io.warren.codec.method.MethodEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.MethodInfo;
import io.warren.codec.method.MethodTable;
import io.warren.codec.method.MethodView;
import io.warren.codec.table.FieldTable;
import java.io.ByteArrayOutputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Walks every class and method of the spec JSON (test resources) and checks the codec against it: ids,
 * flags, argument names, order and types, defaults, bit packing, and a full encode / validate / view
 * round trip with non-default values, compared byte for byte with an encoding this test derives from
 * the JSON on its own.
 */
class SpecConformanceTest {

    private static final Map<String, Object> SPEC = SpecJson.load();
    private static final Map<String, String> DOMAINS = SpecJson.domains(SPEC);

    /** One method of the JSON with its arguments resolved to types. */
    record SpecMethod(
            String className,
            int classId,
            String name,
            int id,
            boolean synchronous,
            boolean content,
            List<SpecArg> args) {
        String key() {
            return className + "." + name;
        }

        String javaName() {
            return camel(className, true) + camel(name, true);
        }
    }

    record SpecArg(String name, String type, boolean hasDefault, Object defaultValue) {
        String camelName() {
            return camel(name, false);
        }
    }

    @SuppressWarnings("unchecked")
    static List<SpecMethod> methods() {
        List<SpecMethod> methods = new ArrayList<>();
        for (Object c : (List<Object>) SPEC.get("classes")) {
            Map<String, Object> cls = (Map<String, Object>) c;
            for (Object m : (List<Object>) cls.get("methods")) {
                Map<String, Object> method = (Map<String, Object>) m;
                List<SpecArg> args = new ArrayList<>();
                for (Object a : (List<Object>) method.get("arguments")) {
                    Map<String, Object> arg = (Map<String, Object>) a;
                    String type = arg.containsKey("type") ? (String) arg.get("type") : DOMAINS.get(arg.get("domain"));
                    args.add(new SpecArg(
                            (String) arg.get("name"),
                            type,
                            arg.containsKey("default-value"),
                            arg.get("default-value")));
                }
                methods.add(new SpecMethod(
                        (String) cls.get("name"),
                        ((Long) cls.get("id")).intValue(),
                        (String) method.get("name"),
                        ((Long) method.get("id")).intValue(),
                        Boolean.TRUE.equals(method.get("synchronous")),
                        Boolean.TRUE.equals(method.get("content")),
                        args));
            }
        }
        return methods;
    }

    @Test
    void everyClassOfTheSpecIsCovered() {
        Set<String> classes = new HashSet<>();
        for (SpecMethod m : methods()) {
            classes.add(m.className());
        }
        assertEquals(Set.of("connection", "channel", "access", "exchange", "queue", "basic", "confirm", "tx"), classes);
        assertEquals(methods().size(), MethodTable.size());
        Set<Integer> indexes = new HashSet<>();
        for (MethodInfo info : MethodTable.all()) {
            assertTrue(indexes.add(info.index()), "dense unique index " + info);
            assertTrue(info.index() >= 0 && info.index() < MethodTable.size());
        }
    }

    @Test
    void rabbitmqExtensionsArePresent() {
        for (String name : List.of(
                "connection.blocked",
                "connection.unblocked",
                "connection.update-secret",
                "connection.update-secret-ok",
                "exchange.bind",
                "exchange.unbind",
                "basic.nack",
                "basic.recover-async",
                "confirm.select",
                "confirm.select-ok")) {
            assertTrue(MethodTable.all().stream().anyMatch(i -> i.name().equals(name)), name);
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void constantsMatchTheSpec() throws Exception {
        for (Object c : (List<Object>) SPEC.get("constants")) {
            Map<String, Object> constant = (Map<String, Object>) c;
            String name = (String) constant.get("name");
            int value = ((Long) constant.get("value")).intValue();
            switch (name) {
                case "FRAME-METHOD":
                    assertEquals(value, FrameType.METHOD.id());
                    break;
                case "FRAME-HEADER":
                    assertEquals(value, FrameType.HEADER.id());
                    break;
                case "FRAME-BODY":
                    assertEquals(value, FrameType.BODY.id());
                    break;
                case "FRAME-HEARTBEAT":
                    assertEquals(value, FrameType.HEARTBEAT.id());
                    break;
                case "FRAME-MIN-SIZE":
                    assertEquals(value, Frames.FRAME_MIN_SIZE);
                    break;
                case "FRAME-END":
                    assertEquals(value, Frames.FRAME_END);
                    break;
                default:
                    String field = name.replace('-', '_');
                    assertEquals(value, ReplyCode.class.getField(field).getInt(null), name);
                    assertEquals(field, ReplyCode.name(value));
                    Object errorClass = constant.get("class");
                    assertEquals("hard-error".equals(errorClass), ReplyCode.isHardError(value), name);
                    assertEquals("soft-error".equals(errorClass), ReplyCode.isSoftError(value), name);
            }
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void contentPropertiesMatchTheSpecInWireOrder() {
        for (Object c : (List<Object>) SPEC.get("classes")) {
            Map<String, Object> cls = (Map<String, Object>) c;
            List<Object> properties = (List<Object>) cls.get("properties");
            if (!"basic".equals(cls.get("name"))) {
                assertTrue(properties == null || properties.isEmpty(), cls.get("name") + " has no content");
                continue;
            }
            assertEquals(ContentHeader.PROPERTY_COUNT, properties.size());
            for (int i = 0; i < properties.size(); i++) {
                Map<String, Object> p = (Map<String, Object>) properties.get(i);
                assertEquals(p.get("name"), ContentHeader.propertyName(i));
                assertEquals(1 << (15 - i), ContentHeader.flag(i));
            }
            assertEquals(ContentHeader.BASIC_CLASS_ID, ((Long) cls.get("id")).intValue());
        }
    }

    @TestFactory
    Stream<DynamicTest> methodTableMatchesTheSpec() {
        return methods().stream()
                .map(m -> dynamicTest(m.key(), () -> {
                    MethodInfo info = MethodTable.lookup(m.classId(), m.id());
                    assertNotNull(info, m.key());
                    assertEquals(m.key(), info.name());
                    assertEquals(m.className(), info.className());
                    assertEquals(m.name(), info.methodName());
                    assertEquals(m.synchronous(), info.isSynchronous(), "synchronous");
                    assertEquals(m.content(), info.hasContent(), "content");
                    assertEquals(m.args().size(), info.argumentCount());
                    for (int i = 0; i < m.args().size(); i++) {
                        assertEquals(
                                m.args().get(i).name(), info.argumentNames().get(i));
                        assertEquals(
                                m.args().get(i).type(), info.argumentType(i).specName());
                    }
                    String constant =
                            (m.className() + "_" + m.name()).replace('-', '_').toUpperCase();
                    assertEquals(
                            MethodIds.key(m.classId(), m.id()),
                            MethodIds.class.getField(constant).getInt(null));
                    assertEquals(
                            m.classId(),
                            MethodIds.class
                                    .getField("CLASS_" + m.className().toUpperCase())
                                    .getInt(null));
                    assertEquals(info, MethodTable.class.getField(constant).get(null));
                }));
    }

    @TestFactory
    Stream<DynamicTest> viewsAndEncodersAreNamedFromTheSpec() {
        return methods().stream()
                .map(m -> dynamicTest(m.javaName(), () -> {
                    Class<?> view = Class.forName("io.warren.codec.method." + m.javaName());
                    Class<?> encoder = Class.forName("io.warren.codec.method." + m.javaName() + "Encoder");
                    assertTrue(Modifier.isFinal(view.getModifiers()) && MethodView.class.isAssignableFrom(view));
                    assertTrue(
                            Modifier.isFinal(encoder.getModifiers()) && MethodEncoder.class.isAssignableFrom(encoder));
                    assertEquals(m.classId(), view.getField("CLASS_ID").getInt(null));
                    assertEquals(m.id(), view.getField("METHOD_ID").getInt(null));
                    assertEquals(
                            view,
                            view.getMethod("wrap", ByteBuf.class, int.class).getReturnType());
                    // the view's public accessors are exactly the spec's arguments (plus the xxxAsString twins)
                    Set<String> expected = new HashSet<>(List.of("wrap", "info"));
                    for (SpecArg a : m.args()) {
                        expected.add(a.camelName());
                        if (a.type().endsWith("str")) {
                            expected.add(a.camelName() + "AsString");
                        }
                    }
                    Set<String> actual = new HashSet<>();
                    for (Method method : view.getDeclaredMethods()) {
                        if (Modifier.isPublic(method.getModifiers())
                                && !method.isSynthetic()
                                && !method.isBridge()
                                && !method.getName().equals("toString")) {
                            actual.add(method.getName());
                        }
                    }
                    assertEquals(expected, actual);
                }));
    }

    @TestFactory
    Stream<DynamicTest> defaultsEncodeAsTheSpecSays() {
        return methods().stream()
                .map(m -> dynamicTest(m.key(), () -> {
                    MethodEncoder encoder =
                            MethodTable.lookup(m.classId(), m.id()).newEncoder();
                    List<Object> values = new ArrayList<>();
                    for (SpecArg a : m.args()) {
                        values.add(defaultValue(a));
                    }
                    assertArrayEquals(expectedPayload(m, values), encode(encoder), m.key());
                }));
    }

    @TestFactory
    Stream<DynamicTest> nonDefaultValuesRoundTrip() {
        return methods().stream().map(m -> dynamicTest(m.key(), () -> roundTrip(m)));
    }

    private static void roundTrip(SpecMethod m) throws Exception {
        MethodInfo info = MethodTable.lookup(m.classId(), m.id());
        MethodEncoder encoder = info.newEncoder();
        List<Object> values = new ArrayList<>();
        for (int i = 0; i < m.args().size(); i++) {
            SpecArg a = m.args().get(i);
            Object value = nonDefaultValue(a, i);
            values.add(value);
            encoder.getClass().getMethod(a.camelName(), setterType(a.type())).invoke(encoder, value);
        }
        byte[] expected = expectedPayload(m, values);
        byte[] actual = encode(encoder);
        assertArrayEquals(expected, actual, m.key() + " bytes");

        // the same through a whole frame, validated and read back through the view
        ByteBuf frame = Frames.method(Unpooled.buffer().alloc(), 7, encoder);
        try {
            assertEquals(FrameType.METHOD.id(), frame.getUnsignedByte(0));
            assertEquals(7, frame.getUnsignedShort(1));
            assertEquals(expected.length, frame.getInt(3));
            assertEquals(Frames.FRAME_END, frame.getUnsignedByte(frame.writerIndex() - 1));
            int payload = Frames.FRAME_HEADER_SIZE;
            assertEquals(info, MethodTable.validate(frame, payload, expected.length, 7));
            MethodView view = info.newView().wrap(frame, payload);
            for (int i = 0; i < m.args().size(); i++) {
                SpecArg a = m.args().get(i);
                Object read = view.getClass().getMethod(a.camelName()).invoke(view);
                assertRead(a, values.get(i), read, view);
            }
            assertTrue(view.toString().startsWith(m.key() + "("));
        } finally {
            frame.release();
        }
    }

    private static void assertRead(SpecArg a, Object written, Object read, MethodView view) throws Exception {
        String what = a.name();
        switch (a.type()) {
            case "octet":
            case "short":
                assertEquals(written, read, what);
                break;
            case "long":
            case "longlong":
            case "timestamp":
                assertEquals(written, read, what);
                break;
            case "bit":
                assertEquals(written, read, what);
                break;
            case "shortstr":
                assertArrayEquals(
                        ((String) written).getBytes(StandardCharsets.UTF_8), ((AsciiString) read).toByteArray(), what);
                assertEquals(
                        written,
                        view.getClass().getMethod(a.camelName() + "AsString").invoke(view),
                        what);
                break;
            case "longstr":
                assertArrayEquals((byte[]) written, ByteBufUtil.getBytes((ByteBuf) read), what);
                break;
            case "table":
                assertEquals(written, ((FieldTable) read).toMap(), what);
                break;
            default:
                throw new AssertionError(a.type());
        }
    }

    private static Class<?> setterType(String type) {
        switch (type) {
            case "bit":
                return boolean.class;
            case "octet":
            case "short":
                return int.class;
            case "long":
            case "longlong":
            case "timestamp":
                return long.class;
            case "shortstr":
                return CharSequence.class;
            case "longstr":
                return byte[].class;
            case "table":
                return Map.class;
            default:
                throw new AssertionError(type);
        }
    }

    private static Object defaultValue(SpecArg a) {
        Object d = a.defaultValue();
        switch (a.type()) {
            case "bit":
                return Boolean.TRUE.equals(d);
            case "octet":
            case "short":
                return d == null ? 0 : ((Long) d).intValue();
            case "long":
            case "longlong":
            case "timestamp":
                return d == null ? 0L : (Long) d;
            case "shortstr":
                return d == null ? "" : (String) d;
            case "longstr":
                return d == null ? new byte[0] : ((String) d).getBytes(StandardCharsets.UTF_8);
            case "table":
                return Map.of();
            default:
                throw new AssertionError(a.type());
        }
    }

    /** A value that differs from the default and exercises the type's range (unsigned tops, UTF-8). */
    private static Object nonDefaultValue(SpecArg a, int index) {
        Object d = defaultValue(a);
        switch (a.type()) {
            case "bit":
                return !(Boolean) d;
            case "octet":
                return 0xA5 + index;
            case "short":
                return 0xBE00 + index;
            case "long":
                return 0xDEADBE00L + index;
            case "longlong":
            case "timestamp":
                return 0x8123456789ABCD00L + index;
            case "shortstr":
                return "x-" + a.name() + "-\u00e9\u2713";
            case "longstr":
                return new byte[] {0, 1, (byte) 0xFF, (byte) index, 'L'};
            case "table": {
                Map<String, Object> table = new LinkedHashMap<>();
                table.put("text", "caf\u00e9");
                table.put("count", 42);
                table.put("big", Long.MIN_VALUE);
                table.put("nested", Map.of("flag", true));
                table.put("list", List.of(1, "two"));
                return table;
            }
            default:
                throw new AssertionError(a.type());
        }
    }

    private static byte[] encode(MethodEncoder encoder) {
        int length = encoder.encodedLength();
        ByteBuf out = Unpooled.buffer(length, length);
        try {
            encoder.encode(out);
            assertEquals(length, out.readableBytes(), "encodedLength() is exact");
            return ByteBufUtil.getBytes(out);
        } finally {
            out.release();
        }
    }

    /**
     * The payload this test expects from the JSON alone: ids, then arguments in spec order, consecutive
     * bits packed least significant first into one octet.
     */
    static byte[] expectedPayload(SpecMethod m, List<Object> values) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        writeShort(out, m.classId());
        writeShort(out, m.id());
        int bits = 0;
        int bitCount = 0;
        for (int i = 0; i < m.args().size(); i++) {
            SpecArg a = m.args().get(i);
            Object v = values.get(i);
            if (a.type().equals("bit")) {
                if ((Boolean) v) {
                    bits |= 1 << bitCount;
                }
                bitCount++;
                if (bitCount == 8) {
                    out.write(bits);
                    bits = 0;
                    bitCount = 0;
                }
                continue;
            }
            if (bitCount > 0) {
                out.write(bits);
                bits = 0;
                bitCount = 0;
            }
            switch (a.type()) {
                case "octet":
                    out.write((Integer) v);
                    break;
                case "short":
                    writeShort(out, (Integer) v);
                    break;
                case "long":
                    writeInt(out, (int) (long) (Long) v);
                    break;
                case "longlong":
                case "timestamp":
                    writeInt(out, (int) ((Long) v >>> 32));
                    writeInt(out, (int) (long) (Long) v);
                    break;
                case "shortstr": {
                    byte[] b = ((String) v).getBytes(StandardCharsets.UTF_8);
                    out.write(b.length);
                    out.writeBytes(b);
                    break;
                }
                case "longstr": {
                    byte[] b = (byte[]) v;
                    writeInt(out, b.length);
                    out.writeBytes(b);
                    break;
                }
                case "table":
                    out.writeBytes(ReferenceTable.encode((Map<?, ?>) v));
                    break;
                default:
                    throw new AssertionError(a.type());
            }
        }
        if (bitCount > 0) {
            out.write(bits);
        }
        return out.toByteArray();
    }

    static void writeShort(ByteArrayOutputStream out, int v) {
        out.write(v >>> 8);
        out.write(v);
    }

    static void writeInt(ByteArrayOutputStream out, int v) {
        writeShort(out, v >>> 16);
        writeShort(out, v);
    }

    static String camel(String name, boolean upperFirst) {
        StringBuilder sb = new StringBuilder();
        boolean up = upperFirst;
        for (char c : name.toCharArray()) {
            if (c == '-') {
                up = true;
            } else {
                sb.append(up ? Character.toUpperCase(c) : c);
                up = false;
            }
        }
        return sb.toString();
    }

    /** An independent field-table writer for the few value types the conformance values use. */
    static final class ReferenceTable {
        static byte[] encode(Map<?, ?> table) {
            ByteArrayOutputStream entries = new ByteArrayOutputStream();
            for (Map.Entry<?, ?> e : table.entrySet()) {
                byte[] key = e.getKey().toString().getBytes(StandardCharsets.UTF_8);
                entries.write(key.length);
                entries.writeBytes(key);
                value(entries, e.getValue());
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            writeInt(out, entries.size());
            out.writeBytes(entries.toByteArray());
            return out.toByteArray();
        }

        static void value(ByteArrayOutputStream out, Object v) {
            if (v instanceof String) {
                byte[] b = ((String) v).getBytes(StandardCharsets.UTF_8);
                out.write('S');
                writeInt(out, b.length);
                out.writeBytes(b);
            } else if (v instanceof Integer) {
                out.write('I');
                writeInt(out, (Integer) v);
            } else if (v instanceof Long) {
                out.write('l');
                writeInt(out, (int) ((Long) v >>> 32));
                writeInt(out, (int) (long) (Long) v);
            } else if (v instanceof Boolean) {
                out.write('t');
                out.write((Boolean) v ? 1 : 0);
            } else if (v instanceof Map) {
                out.write('F');
                out.writeBytes(encode((Map<?, ?>) v));
            } else if (v instanceof List) {
                ByteArrayOutputStream values = new ByteArrayOutputStream();
                for (Object o : (List<?>) v) {
                    value(values, o);
                }
                out.write('A');
                writeInt(out, values.size());
                out.writeBytes(values.toByteArray());
            } else {
                throw new AssertionError(v.getClass());
            }
        }
    }

    @Test
    void argumentTypesCoverTheSpecTypes() {
        Set<String> specTypes = new HashSet<>(DOMAINS.values());
        for (ArgumentType t : ArgumentType.values()) {
            specTypes.remove(t.specName());
        }
        assertTrue(specTypes.isEmpty(), "types without an ArgumentType: " + specTypes);
    }
}
