package io.warren.perf;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;
import java.io.IOException;

/**
 * warren-perf's JSON, through Jackson: the results written by {@code --json}, the data of the
 * {@code --report} page, and reading result files back ({@link BenchmarksTable}, the tests). The trees
 * are {@link java.util.Map}s (insertion-ordered), lists, strings, numbers, booleans and null.
 *
 * <p>One deviation from Jackson's defaults: a non-finite double (a second without latency samples is NaN)
 * is written as {@code null}, since JSON has no NaN and Jackson would otherwise write the string "NaN".
 */
final class Json {

    private static final ObjectMapper MAPPER = new ObjectMapper()
            .registerModule(new SimpleModule("warren-perf").addSerializer(Double.class, new FiniteDouble()))
            .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS);

    private Json() {}

    /** Indented, one field per line. */
    static String pretty(Object value) {
        try {
            return MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(value) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("no JSON form for " + value, e);
        }
    }

    /** On one line. */
    static String compact(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("no JSON form for " + value, e);
        }
    }

    /**
     * {@code text} as a tree: objects as insertion-ordered maps, integral numbers as Integer or Long, the
     * others as Double. Malformed text throws {@link IllegalArgumentException}.
     */
    static Object parse(String text) {
        try {
            return MAPPER.readValue(text, Object.class);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("JSON: " + e.getOriginalMessage(), e);
        }
    }

    /** A double as Jackson writes it, or null when it is NaN or infinite. */
    private static final class FiniteDouble extends StdSerializer<Double> {
        FiniteDouble() {
            super(Double.class);
        }

        @Override
        public void serialize(Double value, JsonGenerator gen, SerializerProvider provider) throws IOException {
            if (value.isNaN() || value.isInfinite()) {
                gen.writeNull();
            } else {
                gen.writeNumber(value);
            }
        }
    }
}
