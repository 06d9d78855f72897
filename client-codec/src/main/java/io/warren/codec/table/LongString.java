package io.warren.codec.table;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A long string ({@code S}) kept as its bytes, which need not be UTF-8.
 *
 * <p>AMQP long strings are octets; other clients and the broker put bytes that are not UTF-8 in them.
 * {@link FieldTable#toMap()} returns such a value as a {@code LongString} (a valid UTF-8 one as a
 * {@code String}), and {@link FieldTableEncoder} writes a {@code LongString} back as {@code S} with exactly its
 * bytes: a table read from a delivery and published again is the same on the wire, where a {@code byte[]}
 * would become a byte array ({@code x}). Build one with {@link #of(byte[])} to send such bytes as {@code S}.
 *
 * <p>Immutable; equal when the bytes are.
 */
public final class LongString {

    private final byte[] bytes;

    private LongString(byte[] bytes) {
        this.bytes = bytes;
    }

    /**
     * A long string holding a copy of {@code bytes}.
     *
     * @throws NullPointerException for {@code null}
     */
    public static LongString of(byte[] bytes) {
        return new LongString(bytes.clone());
    }

    /** A long string over {@code bytes}, which the caller gives up (the decoder's new arrays). */
    static LongString own(byte[] bytes) {
        return new LongString(bytes);
    }

    /** The number of bytes. */
    public int length() {
        return bytes.length;
    }

    /** A copy of the bytes. */
    public byte[] bytes() {
        return bytes.clone();
    }

    /** The bytes themselves, for the encoder; never modified. */
    byte[] array() {
        return bytes;
    }

    /** The bytes decoded as UTF-8, each malformed sequence as U+FFFD (allocates). */
    @Override
    public String toString() {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LongString && Arrays.equals(bytes, ((LongString) o).bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }
}
