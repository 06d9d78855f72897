package io.warren.codec.content;

import io.netty.buffer.ByteBuf;

/**
 * Writes a content header's payload (class basic) from {@link BasicProperties}, whose flags word and
 * values were encoded once when the properties were built: writing one is a few fixed fields and one
 * copy.
 *
 * <pre>
 * +----------+--------+-----------+------------------------------------------+
 * | class-id | weight | body-size | property-flags + values                  |
 * | 60       | 0      | longlong  | BasicProperties.encodedLength() bytes    |
 * | 2        | 2      | 8         |                                          |
 * +----------+--------+-----------+------------------------------------------+
 * </pre>
 *
 * <p>For whole frames see {@link io.warren.codec.Frames#contentHeader} and {@link io.warren.codec.PublishFraming}.
 */
public final class ContentHeaderEncoder {

    /** Class id, weight and body size. */
    public static final int FIXED_LENGTH = 12;

    private ContentHeaderEncoder() {}

    /** The exact payload length for {@code properties}. */
    public static int encodedLength(BasicProperties properties) {
        return FIXED_LENGTH + properties.encodedLength();
    }

    /** The exact payload length for {@code properties} with {@code added} (null: none) added to their headers. */
    public static int encodedLength(BasicProperties properties, SequenceHeader added) {
        return FIXED_LENGTH + (added == null ? properties.encodedLength() : added.encodedLength(properties));
    }

    /**
     * Appends the payload announcing {@code bodySize} bytes of body, with header {@code added} (null: none) set to
     * {@code value} in the properties' headers table.
     *
     * @throws IllegalArgumentException for a negative body size
     */
    public static void encode(
            ByteBuf out, long bodySize, BasicProperties properties, SequenceHeader added, long value) {
        if (added == null) {
            encode(out, bodySize, properties);
            return;
        }
        if (bodySize < 0) {
            throw new IllegalArgumentException("body size must not be negative: " + bodySize);
        }
        out.writeInt(ContentHeader.BASIC_CLASS_ID << 16);
        out.writeLong(bodySize);
        added.writeTo(out, properties, value);
    }

    /**
     * Appends the payload announcing {@code bodySize} bytes of body.
     *
     * @throws IllegalArgumentException for a negative body size
     */
    public static void encode(ByteBuf out, long bodySize, BasicProperties properties) {
        if (bodySize < 0) {
            throw new IllegalArgumentException("body size must not be negative: " + bodySize);
        }
        out.writeInt(ContentHeader.BASIC_CLASS_ID << 16); // class id, then weight 0
        out.writeLong(bodySize);
        properties.writeTo(out);
    }
}
