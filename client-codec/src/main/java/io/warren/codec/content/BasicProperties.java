package io.warren.codec.content;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.warren.codec.table.FieldTableEncoder;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The 14 properties of a basic-class message, immutable, with a {@link Builder}. A property is absent
 * when its accessor returns {@code null}.
 *
 * <p>The properties are encoded once, when the object is built (flags word and values, the part of
 * the content header after the body size): publishing the same {@code BasicProperties} again copies
 * those bytes instead of encoding again, and later changes to a nested header value cannot change
 * what is sent. Every value is checked by the builder: a short string over 255 UTF-8 bytes, a
 * delivery mode or priority outside 0..255, text with an unpaired surrogate, or a header value with no AMQP
 * field type is an {@link IllegalArgumentException}.
 *
 * <p>Properties read from a delivery ({@link ContentHeader#toProperties()}) are written back exactly as they
 * came, which is what a relay needs: header values keep their types ({@link #headers()}), a short string
 * that is not valid UTF-8 keeps its bytes (its accessor returns it decoded, malformed bytes as U+FFFD), and a
 * timestamp beyond {@link Instant}'s range keeps its seconds (its accessor clamps). {@link #toBuilder()}
 * keeps them too, for the properties no setter replaces.
 *
 * <p>Property order on the wire, with the flag bit announcing each:
 * <pre>
 *  bit 15 content-type      shortstr     bit  8 expiration   shortstr
 *  bit 14 content-encoding  shortstr     bit  7 message-id   shortstr
 *  bit 13 headers           table        bit  6 timestamp    timestamp (seconds)
 *  bit 12 delivery-mode     octet        bit  5 type         shortstr
 *  bit 11 priority          octet        bit  4 user-id      shortstr
 *  bit 10 correlation-id    shortstr     bit  3 app-id       shortstr
 *  bit  9 reply-to          shortstr     bit  2 cluster-id   shortstr
 * </pre>
 */
public final class BasicProperties {

    /** No properties at all. */
    public static final BasicProperties EMPTY = new Builder().build();

    /** Delivery mode 1: the broker may keep the message in memory only. */
    public static final int TRANSIENT = 1;
    /** Delivery mode 2: the broker writes the message to disk (in a durable queue). */
    public static final int PERSISTENT = 2;

    private final String contentType;
    private final String contentEncoding;
    private final Map<String, Object> headers;
    private final Integer deliveryMode;
    private final Integer priority;
    private final String correlationId;
    private final String replyTo;
    private final String expiration;
    private final String messageId;
    private final Instant timestamp;
    private final String type;
    private final String userId;
    private final String appId;
    private final String clusterId;

    /**
     * The short-string properties whose bytes are not valid UTF-8, by property index, as read from a content
     * header (null when there are none): written back as they came, while the accessors return them decoded.
     */
    private final ShortString[] raw;
    /** The timestamp's seconds as sent: {@link #timestamp} is clamped to Instant's range, this is not. */
    private final long timestampSeconds;

    /** Flags word and property values, as they go on the wire. */
    private final byte[] encoded;

    private BasicProperties(Builder b) {
        this.contentType = b.contentType;
        this.contentEncoding = b.contentEncoding;
        this.headers = b.headers == null ? null : Collections.unmodifiableMap(new LinkedHashMap<>(b.headers));
        this.deliveryMode = b.deliveryMode;
        this.priority = b.priority;
        this.correlationId = b.correlationId;
        this.replyTo = b.replyTo;
        this.expiration = b.expiration;
        this.messageId = b.messageId;
        this.timestamp = b.timestamp;
        this.timestampSeconds = b.timestampSeconds;
        this.type = b.type;
        this.userId = b.userId;
        this.appId = b.appId;
        this.clusterId = b.clusterId;
        this.raw = b.raw == null ? null : b.raw.clone();
        this.encoded = encode();
    }

    /** A builder with every property absent. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding this object's properties. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.contentType = contentType;
        b.contentEncoding = contentEncoding;
        b.headers = headers;
        b.deliveryMode = deliveryMode;
        b.priority = priority;
        b.correlationId = correlationId;
        b.replyTo = replyTo;
        b.expiration = expiration;
        b.messageId = messageId;
        b.timestamp = timestamp;
        b.timestampSeconds = timestampSeconds;
        b.type = type;
        b.userId = userId;
        b.appId = appId;
        b.clusterId = clusterId;
        b.raw = raw == null ? null : raw.clone();
        return b;
    }

    /** MIME content type, or null. */
    public String contentType() {
        return contentType;
    }

    /** MIME content encoding, or null. */
    public String contentEncoding() {
        return contentEncoding;
    }

    /**
     * Application headers (unmodifiable, wire order), or null. Values are the Java types
     * {@link io.warren.codec.table.FieldType} lists; in headers read from a delivery, a long string that is
     * not valid UTF-8 is an {@link io.warren.codec.table.LongString} (its bytes; {@code toString()} decodes
     * them) and an unsigned {@code B}/{@code u}/{@code i} value an {@link io.warren.codec.table.Unsigned}
     * (a {@code Number}), so that the same headers publish the same bytes: a relay forwards them unchanged.
     */
    public Map<String, Object> headers() {
        return headers;
    }

    /** 1 transient, 2 persistent, or null. */
    public Integer deliveryMode() {
        return deliveryMode;
    }

    /** Priority 0..255 (RabbitMQ uses 0..9 at most), or null. */
    public Integer priority() {
        return priority;
    }

    /** Correlation id (request-reply), or null. */
    public String correlationId() {
        return correlationId;
    }

    /** Queue to reply to, or null. */
    public String replyTo() {
        return replyTo;
    }

    /** Per-message TTL in milliseconds, as text (RabbitMQ's convention), or null. */
    public String expiration() {
        return expiration;
    }

    /** Application message id, or null. */
    public String messageId() {
        return messageId;
    }

    /** Message timestamp (whole seconds on the wire), or null. */
    public Instant timestamp() {
        return timestamp;
    }

    /** Application message type, or null. */
    public String type() {
        return type;
    }

    /** The publishing user, which RabbitMQ checks against the connection's user, or null. */
    public String userId() {
        return userId;
    }

    /** Application id, or null. */
    public String appId() {
        return appId;
    }

    /** Reserved (cluster id), or null. */
    public String clusterId() {
        return clusterId;
    }

    /** The size of the flags word and property values on the wire. */
    public int encodedLength() {
        return encoded.length;
    }

    /** Appends the flags word and property values (the content header after its body size). */
    public void writeTo(ByteBuf out) {
        out.writeBytes(encoded);
    }

    /** The encoded flags word and values; package-private and never modified ({@link SequenceHeader} reads them). */
    byte[] encodedBytes() {
        return encoded;
    }

    /** Where the headers table (its length word) starts in the encoded bytes, or -1 when there is none. */
    int headersOffset() {
        return (propertyFlags() & ContentHeader.HEADERS) == 0 ? -1 : headersPosition(encoded);
    }

    /** Where a headers table is, or would be, in encoded properties: after the flags and the two strings before it. */
    static int headersPosition(byte[] encoded) {
        int flags = ((encoded[0] & 0xFF) << 8) | (encoded[1] & 0xFF);
        int p = 2;
        if ((flags & ContentHeader.CONTENT_TYPE) != 0) {
            p += 1 + (encoded[p] & 0xFF);
        }
        if ((flags & ContentHeader.CONTENT_ENCODING) != 0) {
            p += 1 + (encoded[p] & 0xFF);
        }
        return p;
    }

    /** The flags word: one bit per present property, see the class comment. */
    public int propertyFlags() {
        return ((encoded[0] & 0xFF) << 8) | (encoded[1] & 0xFF);
    }

    private byte[] encode() {
        int flags = 0;
        int length = 2;
        int[] shortLengths = new int[ContentHeader.PROPERTY_COUNT];
        CharSequence[] strings = strings();
        for (int i = 0; i < strings.length; i++) {
            if (strings[i] != null) {
                shortLengths[i] = ShortString.checkedLength(ContentHeader.propertyName(i), strings[i]);
                length += 1 + shortLengths[i];
                flags |= ContentHeader.flag(i);
            }
        }
        int headersLength = 0;
        if (headers != null) {
            headersLength = FieldTableEncoder.encodedLength(headers);
            length += headersLength;
            flags |= ContentHeader.HEADERS;
        }
        if (deliveryMode != null) {
            length += 1;
            flags |= ContentHeader.DELIVERY_MODE;
        }
        if (priority != null) {
            length += 1;
            flags |= ContentHeader.PRIORITY;
        }
        if (timestamp != null) {
            length += 8;
            flags |= ContentHeader.TIMESTAMP;
        }
        byte[] bytes = new byte[length];
        ByteBuf out = Unpooled.wrappedBuffer(bytes).writerIndex(0);
        out.writeShort(flags);
        for (int i = 0; i < ContentHeader.PROPERTY_COUNT; i++) {
            if ((flags & ContentHeader.flag(i)) == 0) {
                continue;
            }
            switch (i) {
                case ContentHeader.HEADERS_INDEX:
                    FieldTableEncoder.encode(out, headers);
                    break;
                case ContentHeader.DELIVERY_MODE_INDEX:
                    out.writeByte(deliveryMode);
                    break;
                case ContentHeader.PRIORITY_INDEX:
                    out.writeByte(priority);
                    break;
                case ContentHeader.TIMESTAMP_INDEX:
                    out.writeLong(timestampSeconds);
                    break;
                default:
                    ShortString.write(out, strings[i], shortLengths[i]);
                    break;
            }
        }
        if (out.writerIndex() != length) {
            throw new IllegalStateException("a header value changed while the properties were encoded");
        }
        return bytes;
    }

    /** The short-string properties by property index (raw bytes where kept), null elsewhere. */
    private CharSequence[] strings() {
        CharSequence[] s = new CharSequence[ContentHeader.PROPERTY_COUNT];
        s[ContentHeader.CONTENT_TYPE_INDEX] = contentType;
        s[ContentHeader.CONTENT_ENCODING_INDEX] = contentEncoding;
        s[ContentHeader.CORRELATION_ID_INDEX] = correlationId;
        s[ContentHeader.REPLY_TO_INDEX] = replyTo;
        s[ContentHeader.EXPIRATION_INDEX] = expiration;
        s[ContentHeader.MESSAGE_ID_INDEX] = messageId;
        s[ContentHeader.TYPE_INDEX] = type;
        s[ContentHeader.USER_ID_INDEX] = userId;
        s[ContentHeader.APP_ID_INDEX] = appId;
        s[ContentHeader.CLUSTER_ID_INDEX] = clusterId;
        if (raw != null) {
            for (int i = 0; i < raw.length; i++) {
                if (raw[i] != null) {
                    s[i] = raw[i];
                }
            }
        }
        return s;
    }

    /** Equal when every property is: compares the encoded forms (headers by their wire bytes). */
    @Override
    public boolean equals(Object o) {
        return o instanceof BasicProperties && Arrays.equals(encoded, ((BasicProperties) o).encoded);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(encoded);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("BasicProperties(");
        String sep = "";
        Object[] values = {contentType, contentEncoding, headers, deliveryMode, priority, correlationId, replyTo,
            expiration, messageId, timestamp, type, userId, appId, clusterId};
        for (int i = 0; i < values.length; i++) {
            if (values[i] != null) {
                sb.append(sep).append(ContentHeader.propertyName(i)).append('=').append(values[i]);
                sep = ", ";
            }
        }
        return sb.append(')').toString();
    }

    /**
     * Builds {@link BasicProperties}. Setters check their value at once and accept {@code null} for
     * "absent". Not thread-safe; reusable ({@link #build()} copies).
     */
    public static final class Builder {

        private String contentType;
        private String contentEncoding;
        private Map<String, ?> headers;
        private Integer deliveryMode;
        private Integer priority;
        private String correlationId;
        private String replyTo;
        private String expiration;
        private String messageId;
        private Instant timestamp;
        private long timestampSeconds;
        private String type;
        private String userId;
        private String appId;
        private String clusterId;
        /** See {@link BasicProperties#raw}; a setter of the same property drops its entry. */
        private ShortString[] raw;

        private Builder() {
        }

        public Builder contentType(String contentType) {
            this.contentType = checkShort(ContentHeader.CONTENT_TYPE_INDEX, contentType);
            return this;
        }

        public Builder contentEncoding(String contentEncoding) {
            this.contentEncoding = checkShort(ContentHeader.CONTENT_ENCODING_INDEX, contentEncoding);
            return this;
        }

        /**
         * Application headers; values map to field types as {@link io.warren.codec.table.FieldType}
         * documents. The map is copied (shallowly) when the properties are built.
         *
         * @throws IllegalArgumentException for a value with no AMQP field type or a key over 255 bytes
         */
        public Builder headers(Map<String, ?> headers) {
            if (headers != null) {
                FieldTableEncoder.encodedLength(headers);
            }
            this.headers = headers;
            return this;
        }

        /** 1 ({@link #TRANSIENT}) or 2 ({@link #PERSISTENT}); any octet is accepted. */
        public Builder deliveryMode(Integer deliveryMode) {
            this.deliveryMode = checkOctet("delivery-mode", deliveryMode);
            return this;
        }

        /** Shorthand for {@code deliveryMode(persistent ? PERSISTENT : TRANSIENT)}. */
        public Builder persistent(boolean persistent) {
            return deliveryMode(persistent ? PERSISTENT : TRANSIENT);
        }

        public Builder priority(Integer priority) {
            this.priority = checkOctet("priority", priority);
            return this;
        }

        public Builder correlationId(String correlationId) {
            this.correlationId = checkShort(ContentHeader.CORRELATION_ID_INDEX, correlationId);
            return this;
        }

        public Builder replyTo(String replyTo) {
            this.replyTo = checkShort(ContentHeader.REPLY_TO_INDEX, replyTo);
            return this;
        }

        public Builder expiration(String expiration) {
            this.expiration = checkShort(ContentHeader.EXPIRATION_INDEX, expiration);
            return this;
        }

        public Builder messageId(String messageId) {
            this.messageId = checkShort(ContentHeader.MESSAGE_ID_INDEX, messageId);
            return this;
        }

        /** The timestamp; sub-second precision is dropped on the wire. */
        public Builder timestamp(Instant timestamp) {
            this.timestamp = timestamp;
            this.timestampSeconds = timestamp == null ? 0 : timestamp.getEpochSecond();
            return this;
        }

        /** The timestamp as the wire's seconds, kept exactly; the accessor clamps it to Instant's range. */
        Builder timestampSeconds(long epochSecond) {
            this.timestamp = Instant.ofEpochSecond(Math.max(Instant.MIN.getEpochSecond(),
                    Math.min(Instant.MAX.getEpochSecond(), epochSecond)));
            this.timestampSeconds = epochSecond;
            return this;
        }

        /**
         * Short-string property {@code index} as a content header carried it: a {@code String}, or a
         * {@link ShortString} of bytes that are not valid UTF-8, whose accessor returns them decoded and which is
         * written back unchanged.
         */
        Builder shortString(int index, CharSequence value) {
            String decoded = value.toString();
            switch (index) {
                case ContentHeader.CONTENT_TYPE_INDEX: contentType = decoded; break;
                case ContentHeader.CONTENT_ENCODING_INDEX: contentEncoding = decoded; break;
                case ContentHeader.CORRELATION_ID_INDEX: correlationId = decoded; break;
                case ContentHeader.REPLY_TO_INDEX: replyTo = decoded; break;
                case ContentHeader.EXPIRATION_INDEX: expiration = decoded; break;
                case ContentHeader.MESSAGE_ID_INDEX: messageId = decoded; break;
                case ContentHeader.TYPE_INDEX: type = decoded; break;
                case ContentHeader.USER_ID_INDEX: userId = decoded; break;
                case ContentHeader.APP_ID_INDEX: appId = decoded; break;
                case ContentHeader.CLUSTER_ID_INDEX: clusterId = decoded; break;
                default: throw new IllegalArgumentException(ContentHeader.propertyName(index) + " is not a short string");
            }
            if (value instanceof ShortString) {
                if (raw == null) {
                    raw = new ShortString[ContentHeader.PROPERTY_COUNT];
                }
                raw[index] = (ShortString) value;
            } else if (raw != null) {
                raw[index] = null;
            }
            return this;
        }

        public Builder type(String type) {
            this.type = checkShort(ContentHeader.TYPE_INDEX, type);
            return this;
        }

        public Builder userId(String userId) {
            this.userId = checkShort(ContentHeader.USER_ID_INDEX, userId);
            return this;
        }

        public Builder appId(String appId) {
            this.appId = checkShort(ContentHeader.APP_ID_INDEX, appId);
            return this;
        }

        public Builder clusterId(String clusterId) {
            this.clusterId = checkShort(ContentHeader.CLUSTER_ID_INDEX, clusterId);
            return this;
        }

        /** The properties, encoded once. */
        public BasicProperties build() {
            return new BasicProperties(this);
        }

        private String checkShort(int index, String value) {
            if (value != null) {
                ShortString.checkedLength(ContentHeader.propertyName(index), value);
            }
            if (raw != null) {
                raw[index] = null;
            }
            return value;
        }

        private static Integer checkOctet(String name, Integer value) {
            if (value != null && (value & ~0xFF) != 0) {
                throw new IllegalArgumentException(name + " must be within 0..255: " + value);
            }
            return value;
        }
    }
}
