package io.warren.codec.content;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.util.AsciiString;
import io.warren.codec.base.Utf8;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * An AMQP short string encoded once: its length octet and UTF-8 bytes, ready to be copied into every
 * frame that names the same exchange, routing key or consumer tag.
 *
 * <pre>
 * +--------+---------------------+
 * | length | bytes (UTF-8)       |
 * | 1      | length (0..255)     |
 * +--------+---------------------+
 * </pre>
 *
 * <p>Encoders accept any {@link CharSequence} for a shortstr argument; given a {@code ShortString}
 * they copy its bytes instead of encoding characters, so a publisher that keeps its exchange and
 * routing key as {@code ShortString}s encodes nothing per message. Immutable and thread-safe.
 *
 * <p>The static helpers are the one place shortstr arguments are checked and written, shared by every
 * encoder: a {@code String} is encoded as UTF-8; an {@link AsciiString} (what the views return) is
 * taken as raw bytes, so a name read from a frame is written back byte for byte.
 */
public final class ShortString implements CharSequence {

    /** The largest number of bytes a short string holds. */
    public static final int MAX_LENGTH = 255;

    /** The empty short string (the default exchange's name). */
    public static final ShortString EMPTY = new ShortString("", new byte[] {0});

    private final String string;
    private final byte[] encoded;

    private ShortString(String string, byte[] encoded) {
        this.string = string;
        this.encoded = encoded;
    }

    /**
     * {@code value} encoded once.
     *
     * @throws IllegalArgumentException when {@code value} is null, longer than 255 UTF-8 bytes or has an
     *         unpaired surrogate
     */
    public static ShortString of(CharSequence value) {
        if (value instanceof ShortString) {
            return (ShortString) value;
        }
        int length = checkedLength("short string", value);
        if (length == 0) {
            return EMPTY;
        }
        byte[] encoded = new byte[1 + length];
        encoded[0] = (byte) length;
        String string;
        if (value instanceof AsciiString) {
            AsciiString a = (AsciiString) value;
            System.arraycopy(a.array(), a.arrayOffset(), encoded, 1, length);
            string = new String(encoded, 1, length, StandardCharsets.UTF_8);
        } else {
            string = value.toString();
            byte[] utf8 = string.getBytes(StandardCharsets.UTF_8);
            System.arraycopy(utf8, 0, encoded, 1, length);
        }
        return new ShortString(string, encoded);
    }

    /** The number of UTF-8 bytes (without the length octet). */
    public int byteLength() {
        return encoded.length - 1;
    }

    /** The number of bytes written: length octet plus bytes. */
    public int encodedLength() {
        return encoded.length;
    }

    /** Appends the length octet and the bytes to {@code out}. */
    public void writeTo(ByteBuf out) {
        out.writeBytes(encoded);
    }

    /** The bytes as an {@code AsciiString} (a new instance sharing nothing with this one). */
    public AsciiString toAsciiString() {
        return new AsciiString(encoded, 1, encoded.length - 1, true);
    }

    @Override
    public int length() {
        return string.length();
    }

    @Override
    public char charAt(int index) {
        return string.charAt(index);
    }

    @Override
    public CharSequence subSequence(int start, int end) {
        return string.subSequence(start, end);
    }

    @Override
    public String toString() {
        return string;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ShortString && Arrays.equals(encoded, ((ShortString) o).encoded);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(encoded);
    }

    // ------------------------------------------------------------------ helpers for encoders

    /**
     * The byte length {@code value} takes as a shortstr (without the length octet).
     *
     * @param what the argument's spec name, for the message
     * @throws IllegalArgumentException when {@code value} is null, longer than 255 UTF-8 bytes or not
     *         well-formed UTF-16 (an unpaired surrogate, see {@link Utf8})
     */
    public static int checkedLength(String what, CharSequence value) {
        if (value == null) {
            throw new IllegalArgumentException(what + " must not be null");
        }
        int length;
        if (value instanceof ShortString) {
            return ((ShortString) value).byteLength();
        } else if (value instanceof AsciiString) {
            length = value.length();
        } else {
            length = Utf8.encodedLength(what, value);
        }
        if (length > MAX_LENGTH) {
            throw new IllegalArgumentException(
                    what + " is " + length + " bytes in UTF-8; a short string holds at most 255");
        }
        return length;
    }

    /**
     * {@code value} in a form that cannot change after it was checked: {@code String},
     * {@code AsciiString} and {@code ShortString} as they are, any other sequence as a {@code String}.
     */
    public static CharSequence immutable(CharSequence value) {
        return value instanceof String || value instanceof ShortString || value instanceof AsciiString
                ? value
                : value.toString();
    }

    /**
     * Appends {@code value} as a shortstr of {@code byteLength} bytes, the length a previous
     * {@link #checkedLength} returned for it.
     */
    public static void write(ByteBuf out, CharSequence value, int byteLength) {
        if (value instanceof ShortString) {
            out.writeBytes(((ShortString) value).encoded);
        } else if (value instanceof AsciiString) {
            AsciiString a = (AsciiString) value;
            out.writeByte(byteLength).writeBytes(a.array(), a.arrayOffset(), byteLength);
        } else {
            out.writeByte(byteLength);
            // reserve exactly: writeUtf8 alone reserves 3 bytes per char, too much for an exactly sized buffer
            ByteBufUtil.reserveAndWriteUtf8(out, value, byteLength);
        }
    }
}
