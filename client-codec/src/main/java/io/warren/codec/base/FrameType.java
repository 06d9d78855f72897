package io.warren.codec.base;

/**
 * The four AMQP 0-9-1 frame types, with their wire ids ({@code FRAME-METHOD} etc. in the spec).
 */
public enum FrameType {
    /** A method: class id, method id, arguments. */
    METHOD(1),
    /** A content header: class id, weight, body size, properties. */
    HEADER(2),
    /** A piece of content body. */
    BODY(3),
    /** A heartbeat: channel 0, empty payload. */
    HEARTBEAT(8);

    private static final FrameType[] BY_ID = new FrameType[9];

    static {
        for (FrameType type : values()) {
            BY_ID[type.id] = type;
        }
    }

    private final int id;

    FrameType(int id) {
        this.id = id;
    }

    /** The type octet on the wire. */
    public int id() {
        return id;
    }

    /** The type with wire id {@code id}, or {@code null} when the id is not a frame type. */
    public static FrameType fromId(int id) {
        return id >= 0 && id < BY_ID.length ? BY_ID[id] : null;
    }
}
