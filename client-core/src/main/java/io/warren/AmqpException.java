package io.warren;

/**
 * Base of every failure Warren reports. When the failure comes from an AMQP close (connection.close or
 * channel.close, sent by either side), it carries the close's reply code and text and the class and
 * method that caused it; otherwise the reply code is 0.
 */
public class AmqpException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final int replyCode;
    private final String replyText;
    private final int classId;
    private final int methodId;
    private final int channelNumber;

    public AmqpException(String message) {
        this(message, null, 0, null, 0, 0, 0);
    }

    public AmqpException(String message, Throwable cause) {
        this(message, cause, 0, null, 0, 0, 0);
    }

    /**
     * @param channelNumber the channel the failure belongs to, 0 for the connection
     * @param classId the AMQP class id of the method that caused the failure, 0 if none
     * @param methodId the AMQP method id of the method that caused the failure, 0 if none
     */
    public AmqpException(
            String message,
            Throwable cause,
            int replyCode,
            String replyText,
            int classId,
            int methodId,
            int channelNumber) {
        super(message, cause);
        this.replyCode = replyCode;
        this.replyText = replyText;
        this.classId = classId;
        this.methodId = methodId;
        this.channelNumber = channelNumber;
    }

    /** The AMQP reply code (for example 404 NOT_FOUND, 406 PRECONDITION_FAILED, 320 CONNECTION_FORCED), 0 if none. */
    public int replyCode() {
        return replyCode;
    }

    /** The reply text the closing peer gave, or {@code null}. */
    public String replyText() {
        return replyText;
    }

    /** The class id of the method the close blames (e.g. 50 for queue), 0 if none. */
    public int classId() {
        return classId;
    }

    /** The method id of the method the close blames (e.g. 10 for declare), 0 if none. */
    public int methodId() {
        return methodId;
    }

    /** The channel the failure happened on; 0 for the connection itself. */
    public int channelNumber() {
        return channelNumber;
    }
}
