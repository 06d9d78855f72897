package io.warren.codec.spec;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The AMQP 0-9-1 spec JSON from the test resources, parsed by a minimal reader (the test classpath has
 * no JSON library, and the file needs only objects, arrays, strings, numbers and booleans).
 */
public final class SpecJson {

    public static final String RESOURCE = "/spec/amqp-rabbitmq-0.9.1.json";

    private final String text;
    private int pos;

    private SpecJson(String text) {
        this.text = text;
    }

    /** The whole spec as maps, lists, strings, numbers ({@code Long}/{@code BigDecimal}) and booleans. */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> load() {
        try (InputStream in = SpecJson.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is missing from the test resources");
            }
            SpecJson parser = new SpecJson(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            Object value = parser.value();
            parser.skipSpace();
            if (parser.pos != parser.text.length()) {
                throw parser.error("trailing text");
            }
            return (Map<String, Object>) value;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Domain name to type ({@code "exchange-name" -> "shortstr"}). */
    @SuppressWarnings("unchecked")
    public static Map<String, String> domains(Map<String, Object> spec) {
        Map<String, String> domains = new LinkedHashMap<>();
        for (Object d : (List<Object>) spec.get("domains")) {
            List<Object> pair = (List<Object>) d;
            domains.put((String) pair.get(0), (String) pair.get(1));
        }
        return domains;
    }

    private Object value() {
        skipSpace();
        char c = text.charAt(pos);
        switch (c) {
            case '{':
                return object();
            case '[':
                return array();
            case '"':
                return string();
            case 't':
                expect("true");
                return Boolean.TRUE;
            case 'f':
                expect("false");
                return Boolean.FALSE;
            case 'n':
                expect("null");
                return null;
            default:
                return number();
        }
    }

    private Map<String, Object> object() {
        Map<String, Object> map = new LinkedHashMap<>();
        pos++;
        skipSpace();
        if (text.charAt(pos) == '}') {
            pos++;
            return map;
        }
        while (true) {
            skipSpace();
            String key = string();
            skipSpace();
            if (text.charAt(pos++) != ':') {
                throw error("':' expected");
            }
            map.put(key, value());
            skipSpace();
            char c = text.charAt(pos++);
            if (c == '}') {
                return map;
            }
            if (c != ',') {
                throw error("',' or '}' expected");
            }
        }
    }

    private List<Object> array() {
        List<Object> list = new ArrayList<>();
        pos++;
        skipSpace();
        if (text.charAt(pos) == ']') {
            pos++;
            return list;
        }
        while (true) {
            list.add(value());
            skipSpace();
            char c = text.charAt(pos++);
            if (c == ']') {
                return list;
            }
            if (c != ',') {
                throw error("',' or ']' expected");
            }
        }
    }

    private String string() {
        if (text.charAt(pos++) != '"') {
            throw error("string expected");
        }
        StringBuilder sb = new StringBuilder();
        while (true) {
            char c = text.charAt(pos++);
            if (c == '"') {
                return sb.toString();
            }
            if (c == '\\') {
                char e = text.charAt(pos++);
                switch (e) {
                    case 'n':
                        sb.append('\n');
                        break;
                    case 't':
                        sb.append('\t');
                        break;
                    case 'r':
                        sb.append('\r');
                        break;
                    case 'b':
                        sb.append('\b');
                        break;
                    case 'f':
                        sb.append('\f');
                        break;
                    case 'u':
                        sb.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                        pos += 4;
                        break;
                    default:
                        sb.append(e);
                }
            } else {
                sb.append(c);
            }
        }
    }

    private Object number() {
        int start = pos;
        while (pos < text.length() && "+-0123456789.eE".indexOf(text.charAt(pos)) >= 0) {
            pos++;
        }
        String n = text.substring(start, pos);
        if (n.isEmpty()) {
            throw error("value expected");
        }
        return n.matches("-?\\d+") ? (Object) Long.valueOf(n) : new BigDecimal(n);
    }

    private void expect(String word) {
        if (!text.startsWith(word, pos)) {
            throw error("'" + word + "' expected");
        }
        pos += word.length();
    }

    private void skipSpace() {
        while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) {
            pos++;
        }
    }

    private IllegalStateException error(String what) {
        return new IllegalStateException(what + " at character " + pos + " of " + RESOURCE);
    }
}
