package io.warren.impl.connection.sasl;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * RabbitMQ's AMQPLAIN: the response is the body of a field table, without the table's own 4-byte
 * size prefix, holding {@code LOGIN} and {@code PASSWORD} as long strings:
 *
 * <pre>
 * +---+-------+---+---------+------+---+----------+---+---------+----------+
 * | 5 | LOGIN | S | len(u32)| user | 8 | PASSWORD | S | len(u32)| password |
 * +---+-------+---+---------+------+---+----------+---+---------+----------+
 * </pre>
 */
public final class AmqplainMechanism implements SaslMechanism {

    private final String username;
    private final String password;

    public AmqplainMechanism(String username, String password) {
        this.username = username;
        this.password = password;
    }

    @Override
    public String name() {
        return "AMQPLAIN";
    }

    @Override
    public byte[] initialResponse() {
        ByteArrayOutputStream out = new ByteArrayOutputStream(64);
        entry(out, "LOGIN", username);
        entry(out, "PASSWORD", password);
        return out.toByteArray();
    }

    @Override
    public byte[] respond(byte[] challenge) {
        return initialResponse();
    }

    private static void entry(ByteArrayOutputStream out, String key, String value) {
        byte[] k = key.getBytes(StandardCharsets.US_ASCII);
        byte[] v = value.getBytes(StandardCharsets.UTF_8);
        out.write(k.length);
        out.write(k, 0, k.length);
        out.write('S');
        out.write(v.length >>> 24);
        out.write(v.length >>> 16);
        out.write(v.length >>> 8);
        out.write(v.length);
        out.write(v, 0, v.length);
    }

    @Override
    public String toString() {
        return "AMQPLAIN";
    }
}
