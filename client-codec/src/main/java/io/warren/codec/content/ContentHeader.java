package io.warren.codec.content;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.util.AsciiString;
import io.warren.codec.AmqpProtocolException;
import io.warren.codec.AsciiStringCache;
import io.warren.codec.FrameType;
import io.warren.codec.ReplyCode;
import io.warren.codec.table.FieldTable;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;

/**
 * Flyweight view of a content-header frame's payload (class basic).
 *
 * <pre>
 * +----------+--------+-----------+----------------+---------------------------------------+
 * | class-id | weight | body-size | property-flags | property values, in flag order        |
 * | 60       | 0      | longlong  | short, short.. | only those whose flag is set          |
 * | 2        | 2      | 8         | 2 per word     | shortstr 1+n, table 4+n, octet 1, T 8 |
 * +----------+--------+-----------+----------------+---------------------------------------+
 * property-flags: bit 15 content-type ... bit 2 cluster-id (see BasicProperties);
 *                 bit 0 set: another flags word follows
 * </pre>
 *
 * <p>Nothing is decoded by {@link #wrap}: the first property accessor walks the flags and values once
 * and remembers where each present property starts (in an array the view owns, so no allocation).
 * {@code hasX()} says whether a property is present; {@code x()} returns it, or {@code null} (0 for
 * numbers) when absent. Short strings come back as {@link AsciiString}s from
 * {@link AsciiStringCache}, with allocating {@code xAsString()} twins; {@link #headers()} is a
 * {@link FieldTable} view over the frame.
 *
 * <p>The view never moves the buffer's indices and never retains it: it is valid while the frame
 * lives. Wrap only validated payloads ({@link #validate}; {@code FrameDecoder} validates by default).
 */
public final class ContentHeader {

    /** The number of basic properties. */
    public static final int PROPERTY_COUNT = 14;

    public static final int CONTENT_TYPE_INDEX = 0;
    public static final int CONTENT_ENCODING_INDEX = 1;
    public static final int HEADERS_INDEX = 2;
    public static final int DELIVERY_MODE_INDEX = 3;
    public static final int PRIORITY_INDEX = 4;
    public static final int CORRELATION_ID_INDEX = 5;
    public static final int REPLY_TO_INDEX = 6;
    public static final int EXPIRATION_INDEX = 7;
    public static final int MESSAGE_ID_INDEX = 8;
    public static final int TIMESTAMP_INDEX = 9;
    public static final int TYPE_INDEX = 10;
    public static final int USER_ID_INDEX = 11;
    public static final int APP_ID_INDEX = 12;
    public static final int CLUSTER_ID_INDEX = 13;

    /** Flag bits of the first flags word: property {@code i} is bit {@code 15 - i}. */
    public static final int CONTENT_TYPE = 1 << 15;
    public static final int CONTENT_ENCODING = 1 << 14;
    public static final int HEADERS = 1 << 13;
    public static final int DELIVERY_MODE = 1 << 12;
    public static final int PRIORITY = 1 << 11;
    public static final int CORRELATION_ID = 1 << 10;
    public static final int REPLY_TO = 1 << 9;
    public static final int EXPIRATION = 1 << 8;
    public static final int MESSAGE_ID = 1 << 7;
    public static final int TIMESTAMP = 1 << 6;
    public static final int TYPE = 1 << 5;
    public static final int USER_ID = 1 << 4;
    public static final int APP_ID = 1 << 3;
    public static final int CLUSTER_ID = 1 << 2;
    /** Bit 0: another flags word follows. */
    public static final int CONTINUATION = 1;
    /** The flag bits of the 14 properties: 15 down to 2. */
    private static final int PROPERTY_BITS = 0xFFFC;

    /** The class that carries content (the only one in 0-9-1). */
    public static final int BASIC_CLASS_ID = 60;

    private static final String[] NAMES = {"content-type", "content-encoding", "headers", "delivery-mode", "priority",
        "correlation-id", "reply-to", "expiration", "message-id", "timestamp", "type", "user-id", "app-id",
        "cluster-id"};

    private static final int CLASS_ID_OFFSET = 0;
    private static final int WEIGHT_OFFSET = 2;
    private static final int BODY_SIZE_OFFSET = 4;
    private static final int FLAGS_OFFSET = 12;
    /** Class id, weight, body size and one flags word. */
    private static final int MIN_LENGTH = 14;

    private ByteBuf buf;
    private int offset;
    /** Index of each present property's value; valid when {@link #resolved}. */
    private final int[] positions = new int[PROPERTY_COUNT];
    /** Index after the last property value; valid when {@link #resolved}. */
    private int propertiesEnd;
    private boolean resolved;
    private FieldTable headersTable;

    /** The spec name of property {@code index} ({@code "content-type"}). */
    public static String propertyName(int index) {
        return NAMES[index];
    }

    /** The flag bit of property {@code index} in the first flags word. */
    public static int flag(int index) {
        return 1 << (15 - index);
    }

    /** An empty view: {@link #wrap} it onto a buffer before reading. */
    public ContentHeader() {
    }

    /**
     * Points this view at a content header.
     *
     * @param offset the index of the class-id field ({@code frame.payload().readerIndex()})
     * @return this view
     */
    public ContentHeader wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.offset = offset;
        this.resolved = false;
        return this;
    }

    /** The class id (60, basic). */
    public int classId() {
        return buf.getUnsignedShort(offset + CLASS_ID_OFFSET);
    }

    /** The weight (always 0). */
    public int weight() {
        return buf.getUnsignedShort(offset + WEIGHT_OFFSET);
    }

    /** The total size of the body frames that follow. */
    public long bodySize() {
        return buf.getLong(offset + BODY_SIZE_OFFSET);
    }

    /** The first property-flags word. */
    public int propertyFlags() {
        return buf.getUnsignedShort(offset + FLAGS_OFFSET);
    }

    /** Whether property {@code index} (0 content-type .. 13 cluster-id) is present. */
    public boolean has(int index) {
        return (propertyFlags() & flag(index)) != 0;
    }

    public boolean hasContentType() {
        return has(CONTENT_TYPE_INDEX);
    }

    public boolean hasContentEncoding() {
        return has(CONTENT_ENCODING_INDEX);
    }

    public boolean hasHeaders() {
        return has(HEADERS_INDEX);
    }

    public boolean hasDeliveryMode() {
        return has(DELIVERY_MODE_INDEX);
    }

    public boolean hasPriority() {
        return has(PRIORITY_INDEX);
    }

    public boolean hasCorrelationId() {
        return has(CORRELATION_ID_INDEX);
    }

    public boolean hasReplyTo() {
        return has(REPLY_TO_INDEX);
    }

    public boolean hasExpiration() {
        return has(EXPIRATION_INDEX);
    }

    public boolean hasMessageId() {
        return has(MESSAGE_ID_INDEX);
    }

    public boolean hasTimestamp() {
        return has(TIMESTAMP_INDEX);
    }

    public boolean hasType() {
        return has(TYPE_INDEX);
    }

    public boolean hasUserId() {
        return has(USER_ID_INDEX);
    }

    public boolean hasAppId() {
        return has(APP_ID_INDEX);
    }

    public boolean hasClusterId() {
        return has(CLUSTER_ID_INDEX);
    }

    /** content-type, or null. */
    public AsciiString contentType() {
        return shortString(CONTENT_TYPE_INDEX);
    }

    /** content-type decoded as UTF-8 (allocates), or null. */
    public String contentTypeAsString() {
        return shortStringAsString(CONTENT_TYPE_INDEX);
    }

    /** content-encoding, or null. */
    public AsciiString contentEncoding() {
        return shortString(CONTENT_ENCODING_INDEX);
    }

    /** content-encoding decoded as UTF-8 (allocates), or null. */
    public String contentEncodingAsString() {
        return shortStringAsString(CONTENT_ENCODING_INDEX);
    }

    /**
     * The headers as a view over the frame (reused by every call on this view: valid until the next
     * {@code wrap} and while the frame lives), or null when absent. {@code headers().toMap()} maps values as
     * {@link io.warren.codec.table.FieldType} documents: a long string that is not UTF-8 comes back as a
     * {@link io.warren.codec.table.LongString}, an unsigned value as an {@link io.warren.codec.table.Unsigned},
     * and both encode back to their own bytes.
     */
    public FieldTable headers() {
        int p = position(HEADERS_INDEX);
        if (p < 0) {
            return null;
        }
        FieldTable table = headersTable;
        if (table == null) {
            table = headersTable = new FieldTable();
        }
        return table.wrap(buf, p);
    }

    /** delivery-mode (1 transient, 2 persistent), or 0 when absent. */
    public int deliveryMode() {
        int p = position(DELIVERY_MODE_INDEX);
        return p < 0 ? 0 : buf.getUnsignedByte(p);
    }

    /** priority, or 0 when absent. */
    public int priority() {
        int p = position(PRIORITY_INDEX);
        return p < 0 ? 0 : buf.getUnsignedByte(p);
    }

    /** correlation-id, or null. */
    public AsciiString correlationId() {
        return shortString(CORRELATION_ID_INDEX);
    }

    /** correlation-id decoded as UTF-8 (allocates), or null. */
    public String correlationIdAsString() {
        return shortStringAsString(CORRELATION_ID_INDEX);
    }

    /** reply-to, or null. */
    public AsciiString replyTo() {
        return shortString(REPLY_TO_INDEX);
    }

    /** reply-to decoded as UTF-8 (allocates), or null. */
    public String replyToAsString() {
        return shortStringAsString(REPLY_TO_INDEX);
    }

    /** expiration, or null. */
    public AsciiString expiration() {
        return shortString(EXPIRATION_INDEX);
    }

    /** expiration decoded as UTF-8 (allocates), or null. */
    public String expirationAsString() {
        return shortStringAsString(EXPIRATION_INDEX);
    }

    /** message-id, or null. */
    public AsciiString messageId() {
        return shortString(MESSAGE_ID_INDEX);
    }

    /** message-id decoded as UTF-8 (allocates), or null. */
    public String messageIdAsString() {
        return shortStringAsString(MESSAGE_ID_INDEX);
    }

    /** timestamp in seconds since the epoch, or 0 when absent. */
    public long timestamp() {
        int p = position(TIMESTAMP_INDEX);
        return p < 0 ? 0 : buf.getLong(p);
    }

    /** type, or null. */
    public AsciiString type() {
        return shortString(TYPE_INDEX);
    }

    /** type decoded as UTF-8 (allocates), or null. */
    public String typeAsString() {
        return shortStringAsString(TYPE_INDEX);
    }

    /** user-id, or null. */
    public AsciiString userId() {
        return shortString(USER_ID_INDEX);
    }

    /** user-id decoded as UTF-8 (allocates), or null. */
    public String userIdAsString() {
        return shortStringAsString(USER_ID_INDEX);
    }

    /** app-id, or null. */
    public AsciiString appId() {
        return shortString(APP_ID_INDEX);
    }

    /** app-id decoded as UTF-8 (allocates), or null. */
    public String appIdAsString() {
        return shortStringAsString(APP_ID_INDEX);
    }

    /** cluster-id, or null. */
    public AsciiString clusterId() {
        return shortString(CLUSTER_ID_INDEX);
    }

    /** cluster-id decoded as UTF-8 (allocates), or null. */
    public String clusterIdAsString() {
        return shortStringAsString(CLUSTER_ID_INDEX);
    }

    /**
     * The flags word and property values as a slice of the frame (no copy, no retain), the form
     * {@link BasicProperties#writeTo} writes: lets a message be forwarded without decoding its
     * properties. Valid while the frame lives.
     */
    public ByteBuf propertiesSlice() {
        resolve();
        int start = offset + FLAGS_OFFSET;
        return buf.slice(start, propertiesEnd - start);
    }

    /**
     * Every property materialised (allocates), written back exactly as it is here when published: a short string
     * that is not valid UTF-8 keeps its bytes and a timestamp beyond {@link Instant}'s range its seconds (their
     * accessors return the string decoded and the time clamped), header values keep their types (see
     * {@link BasicProperties#headers()}).
     */
    public BasicProperties toProperties() {
        BasicProperties.Builder b = BasicProperties.builder();
        if (hasContentType()) {
            shortString(b, CONTENT_TYPE_INDEX);
        }
        if (hasContentEncoding()) {
            shortString(b, CONTENT_ENCODING_INDEX);
        }
        if (hasHeaders()) {
            b.headers(headers().toMap());
        }
        if (hasDeliveryMode()) {
            b.deliveryMode(deliveryMode());
        }
        if (hasPriority()) {
            b.priority(priority());
        }
        if (hasCorrelationId()) {
            shortString(b, CORRELATION_ID_INDEX);
        }
        if (hasReplyTo()) {
            shortString(b, REPLY_TO_INDEX);
        }
        if (hasExpiration()) {
            shortString(b, EXPIRATION_INDEX);
        }
        if (hasMessageId()) {
            shortString(b, MESSAGE_ID_INDEX);
        }
        if (hasTimestamp()) {
            b.timestampSeconds(timestamp());
        }
        if (hasType()) {
            shortString(b, TYPE_INDEX);
        }
        if (hasUserId()) {
            shortString(b, USER_ID_INDEX);
        }
        if (hasAppId()) {
            shortString(b, APP_ID_INDEX);
        }
        if (hasClusterId()) {
            shortString(b, CLUSTER_ID_INDEX);
        }
        return b.build();
    }

    /**
     * Short-string property {@code index} into {@code b}: as a {@code String} when its bytes are valid UTF-8 (which
     * encodes back to the same bytes), else as those bytes, so that the properties are written back unchanged.
     */
    private void shortString(BasicProperties.Builder b, int index) {
        int p = position(index);
        int length = buf.getUnsignedByte(p);
        b.shortString(index, ByteBufUtil.isText(buf, p + 1, length, StandardCharsets.UTF_8)
                ? buf.toString(p + 1, length, StandardCharsets.UTF_8)
                : ShortString.of(AsciiStringCache.shortString(buf, p)));
    }

    @Override
    public String toString() {
        return buf == null ? "ContentHeader(unwrapped)"
                : "ContentHeader(class " + classId() + ", body-size " + bodySize() + ", " + toProperties() + ")";
    }

    private AsciiString shortString(int index) {
        int p = position(index);
        return p < 0 ? null : AsciiStringCache.shortString(buf, p);
    }

    private String shortStringAsString(int index) {
        int p = position(index);
        return p < 0 ? null : buf.toString(p + 1, buf.getUnsignedByte(p), StandardCharsets.UTF_8);
    }

    /** The index of property {@code index}'s value, or -1 when absent. */
    private int position(int index) {
        if (!resolved) {
            resolve();
        }
        return positions[index];
    }

    private void resolve() {
        if (resolved) {
            return;
        }
        int flags = propertyFlags();
        int p = offset + FLAGS_OFFSET;
        // skip continuation words: no 0-9-1 property lives there (validate() rejects set bits in them)
        int word = flags;
        p += 2;
        while ((word & CONTINUATION) != 0) {
            word = buf.getUnsignedShort(p);
            p += 2;
        }
        int[] at = positions;
        Arrays.fill(at, -1);
        // only the present properties, in wire order: bit 15 (property 0) first
        for (int bits = flags & PROPERTY_BITS; bits != 0; bits ^= Integer.highestOneBit(bits)) {
            int i = Integer.numberOfLeadingZeros(bits) - 16;
            at[i] = p;
            p += valueLength(buf, p, i);
        }
        propertiesEnd = p;
        resolved = true;
    }

    private static int valueLength(ByteBuf buf, int p, int index) {
        switch (index) {
            case HEADERS_INDEX: return 4 + buf.getInt(p);
            case DELIVERY_MODE_INDEX:
            case PRIORITY_INDEX:
                return 1;
            case TIMESTAMP_INDEX: return 8;
            default: return 1 + buf.getUnsignedByte(p);
        }
    }

    /**
     * Checks a content-header payload before any view reads it: class basic (otherwise 505
     * UNEXPECTED_FRAME), the fixed fields present, no property beyond the 14 of 0-9-1 announced, every
     * announced value complete (headers table included) and nothing after the last one.
     *
     * <p>{@code FrameDecoder} calls this for every header frame unless built with validation off.
     *
     * @param offset the index of the class-id field
     * @param length the payload's length
     * @param channel the frame's channel, for the message
     * @throws AmqpProtocolException 502 SYNTAX_ERROR or 505 UNEXPECTED_FRAME, naming channel and offset
     */
    public static void validate(ByteBuf buf, int offset, int length, int channel) {
        int end = offset + length;
        if (length < MIN_LENGTH) {
            throw error(ReplyCode.SYNTAX_ERROR, "content header of " + length + " bytes, at least " + MIN_LENGTH
                    + " needed", channel, -1, offset, offset);
        }
        int classId = buf.getUnsignedShort(offset);
        if (classId != BASIC_CLASS_ID) {
            throw error(ReplyCode.UNEXPECTED_FRAME, "content header for class " + classId
                    + ", only class 60 (basic) carries content", channel, classId, offset, offset);
        }
        if (buf.getLong(offset + BODY_SIZE_OFFSET) < 0) {
            throw error(ReplyCode.SYNTAX_ERROR, "content header announces a body size beyond 2^63", channel, classId,
                    offset + BODY_SIZE_OFFSET, offset);
        }
        int flags = buf.getUnsignedShort(offset + FLAGS_OFFSET);
        int p = offset + FLAGS_OFFSET + 2;
        int word = flags;
        while ((word & CONTINUATION) != 0) {
            if (p + 2 > end) {
                throw error(ReplyCode.SYNTAX_ERROR, "property flags continue past the end of the header", channel,
                        classId, p, offset);
            }
            word = buf.getUnsignedShort(p);
            if ((word & ~CONTINUATION) != 0) {
                throw error(ReplyCode.SYNTAX_ERROR, String.format("property flags word 0x%04X announces properties "
                        + "beyond the 14 of basic", word), channel, classId, p, offset);
            }
            p += 2;
        }
        if ((flags & 0x0002) != 0) {
            throw error(ReplyCode.SYNTAX_ERROR, "property flag bit 1 is set, no basic property has it", channel,
                    classId, offset + FLAGS_OFFSET, offset);
        }
        for (int bits = flags & PROPERTY_BITS; bits != 0; bits ^= Integer.highestOneBit(bits)) {
            int i = Integer.numberOfLeadingZeros(bits) - 16;
            switch (i) {
                case HEADERS_INDEX:
                    try {
                        p = FieldTable.validate(buf, p, end);
                    } catch (AmqpProtocolException e) {
                        throw error(e.replyCode(), "property headers: " + e.detail(), channel, classId,
                                (int) e.offset(), offset);
                    }
                    break;
                case DELIVERY_MODE_INDEX:
                case PRIORITY_INDEX:
                    if (p + 1 > end) {
                        throw truncated(i, 1, p, end, channel, classId, offset);
                    }
                    p += 1;
                    break;
                case TIMESTAMP_INDEX:
                    if (p + 8 > end) {
                        throw truncated(i, 8, p, end, channel, classId, offset);
                    }
                    p += 8;
                    break;
                default: // shortstr
                    if (p + 1 > end) {
                        throw truncated(i, 1, p, end, channel, classId, offset);
                    }
                    int size = 1 + buf.getUnsignedByte(p);
                    if (p + size > end) {
                        throw truncated(i, size, p, end, channel, classId, offset);
                    }
                    p += size;
                    break;
            }
        }
        if (p != end) {
            throw error(ReplyCode.SYNTAX_ERROR, (end - p) + " unexpected bytes after the last property", channel,
                    classId, p, offset);
        }
    }

    private static AmqpProtocolException truncated(int index, int size, int p, int end, int channel, int classId,
            int offset) {
        return error(ReplyCode.SYNTAX_ERROR, "property " + NAMES[index] + " needs " + size + " bytes but only "
                + (end - p) + " remain in the header", channel, classId, p, offset);
    }

    private static AmqpProtocolException error(int replyCode, String detail, int channel, int classId, int index,
            int payloadIndex) {
        return AmqpProtocolException.atIndex(replyCode, detail, index)
                .inFrame(FrameType.HEADER, channel, classId, -1, payloadIndex);
    }
}
