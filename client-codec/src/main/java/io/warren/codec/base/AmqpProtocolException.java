package io.warren.codec.base;

import io.netty.handler.codec.DecoderException;

/**
 * Malformed or unexpected AMQP input. The connection must close with {@link #replyCode()}
 * ({@link ReplyCode#FRAME_ERROR 501}, {@link ReplyCode#SYNTAX_ERROR 502},
 * {@link ReplyCode#COMMAND_INVALID 503}, {@link ReplyCode#CHANNEL_ERROR 504}, a frame on a channel that is not open,
 * or {@link ReplyCode#UNEXPECTED_FRAME 505}).
 *
 * <p>The message names everything that is known: frame type, channel, class and method, and the
 * offset of the offending byte counted from the first byte of the frame (its type octet). Accessors
 * return {@code -1} (or {@code null} for the frame type) for what was not known.
 *
 * <p>It extends Netty's {@link DecoderException} so that {@link io.warren.codec.FrameDecoder} can throw it through
 * {@code ByteToMessageDecoder} unwrapped: the pipeline's {@code exceptionCaught} receives this type.
 */
public class AmqpProtocolException extends DecoderException {

    private static final long serialVersionUID = 1L;
    /**
     * A frame's type, channel and size, before its payload: {@code Frames.FRAME_HEADER_SIZE} of the frame layer,
     * which sits above this package.
     */
    private static final int FRAME_HEADER_SIZE = 7;

    private final int replyCode;
    private final String detail;
    private final transient FrameType frameType;
    private final int channel;
    private final int classId;
    private final int methodId;
    private final long offset;

    /**
     * @param replyCode the AMQP reply code the connection closes with
     * @param detail what is wrong, without the frame context
     * @param frameType the frame's type, or {@code null} when unknown
     * @param channel the frame's channel, or -1
     * @param classId the method's (or content header's) class id, or -1
     * @param methodId the method id, or -1
     * @param offset the offending byte's offset from the frame's first byte, or -1
     */
    public AmqpProtocolException(
            int replyCode, String detail, FrameType frameType, int channel, int classId, int methodId, long offset) {
        super(format(replyCode, detail, frameType, channel, classId, methodId, offset));
        this.replyCode = replyCode;
        this.detail = detail;
        this.frameType = frameType;
        this.channel = channel;
        this.classId = classId;
        this.methodId = methodId;
        this.offset = offset;
    }

    /**
     * An error found by a validator that sees only a buffer: {@code bufferIndex} is an absolute index
     * into that buffer until {@link #inFrame} turns it into an offset within the frame.
     */
    public static AmqpProtocolException atIndex(int replyCode, String detail, int bufferIndex) {
        return new AmqpProtocolException(replyCode, detail, null, -1, -1, -1, bufferIndex);
    }

    /**
     * This error placed in its frame: the frame's type and channel, the class and method, and the index
     * of the payload's first byte in the buffer this error's index refers to.
     */
    public AmqpProtocolException inFrame(FrameType type, int channel, int classId, int methodId, int payloadIndex) {
        long frameOffset = offset < 0 ? -1 : FRAME_HEADER_SIZE + (offset - payloadIndex);
        AmqpProtocolException placed =
                new AmqpProtocolException(replyCode, detail, type, channel, classId, methodId, frameOffset);
        placed.setStackTrace(getStackTrace());
        return placed;
    }

    /** The reply code the connection must close with. */
    public int replyCode() {
        return replyCode;
    }

    /** What is wrong, without the frame context that {@link #getMessage()} adds. */
    public String detail() {
        return detail;
    }

    /** The type of the offending frame, or {@code null} when it could not be read. */
    public FrameType frameType() {
        return frameType;
    }

    /** The channel of the offending frame, or -1. */
    public int channel() {
        return channel;
    }

    /** The class id of the offending method or content header, or -1. */
    public int classId() {
        return classId;
    }

    /** The method id of the offending method, or -1. */
    public int methodId() {
        return methodId;
    }

    /** The offset of the offending byte from the frame's first byte, or -1 (absolute buffer index before {@link #inFrame}). */
    public long offset() {
        return offset;
    }

    private static String format(
            int replyCode, String detail, FrameType frameType, int channel, int classId, int methodId, long offset) {
        StringBuilder sb = new StringBuilder(96)
                .append(replyCode)
                .append(' ')
                .append(ReplyCode.name(replyCode))
                .append(": ")
                .append(detail);
        String sep = " (";
        if (frameType != null) {
            sb.append(sep).append(frameType).append(" frame");
            sep = ", ";
        }
        if (channel >= 0) {
            sb.append(sep).append("channel ").append(channel);
            sep = ", ";
        }
        if (classId >= 0) {
            sb.append(sep).append(methodId >= 0 ? MethodNames.describe(classId, methodId) : "class " + classId);
            sep = ", ";
        }
        if (offset >= 0) {
            sb.append(sep).append("offset ").append(offset);
            sep = ", ";
        }
        if (!" (".equals(sep)) {
            sb.append(')');
        }
        return sb.toString();
    }
}
