package io.warren.codec.base;

/**
 * The reply codes of AMQP 0-9-1 as RabbitMQ uses them, with the spec's classification.
 *
 * <p>A <em>soft error</em> closes the channel it happened on; a <em>hard error</em> closes the whole
 * connection. {@link #REPLY_SUCCESS} is neither: it is the code of an orderly close.
 */
public final class ReplyCode {

    /** An orderly close. */
    public static final int REPLY_SUCCESS = 200;

    // soft errors: the channel closes
    /** The client tried to transfer content larger than the server accepts. */
    public static final int CONTENT_TOO_LARGE = 311;
    /** A mandatory message could not be routed (basic.return). */
    public static final int NO_ROUTE = 312;
    /** An immediate message found no consumer (basic.return; RabbitMQ no longer supports immediate). */
    public static final int NO_CONSUMERS = 313;
    /** Access to the resource is refused (permissions, exclusive queue of another connection). */
    public static final int ACCESS_REFUSED = 403;
    /** The exchange or queue does not exist. */
    public static final int NOT_FOUND = 404;
    /** The resource is locked by another connection (exclusive queue). */
    public static final int RESOURCE_LOCKED = 405;
    /** A declare's arguments differ from the existing entity's, or another precondition failed. */
    public static final int PRECONDITION_FAILED = 406;

    // hard errors: the connection closes
    /** The server closed the connection (operator action, shutdown). */
    public static final int CONNECTION_FORCED = 320;
    /** The virtual host does not exist or is not reachable. */
    public static final int INVALID_PATH = 402;
    /** A malformed frame: bad size, bad end byte, unknown frame type. */
    public static final int FRAME_ERROR = 501;
    /** A frame whose fields could not be decoded: truncated, over-long, unknown field-table type. */
    public static final int SYNTAX_ERROR = 502;
    /** A method that is not valid here (unknown method, wrong channel, wrong state). */
    public static final int COMMAND_INVALID = 503;
    /** A channel that is not open, or opened twice. */
    public static final int CHANNEL_ERROR = 504;
    /** A frame that was not expected in the current state (e.g. a body without a header). */
    public static final int UNEXPECTED_FRAME = 505;
    /** The server ran out of a resource (e.g. too many channels). */
    public static final int RESOURCE_ERROR = 506;
    /** The action is not allowed (e.g. re-opening a connection, a forbidden mechanism). */
    public static final int NOT_ALLOWED = 530;
    /** The peer does not implement the method. */
    public static final int NOT_IMPLEMENTED = 540;
    /** The server hit an internal error. */
    public static final int INTERNAL_ERROR = 541;

    private ReplyCode() {}

    /** Whether {@code code} is a hard error: the connection closes. */
    public static boolean isHardError(int code) {
        switch (code) {
            case CONNECTION_FORCED:
            case INVALID_PATH:
            case FRAME_ERROR:
            case SYNTAX_ERROR:
            case COMMAND_INVALID:
            case CHANNEL_ERROR:
            case UNEXPECTED_FRAME:
            case RESOURCE_ERROR:
            case NOT_ALLOWED:
            case NOT_IMPLEMENTED:
            case INTERNAL_ERROR:
                return true;
            default:
                return false;
        }
    }

    /** Whether {@code code} is a soft error: only the channel closes. */
    public static boolean isSoftError(int code) {
        switch (code) {
            case CONTENT_TOO_LARGE:
            case NO_ROUTE:
            case NO_CONSUMERS:
            case ACCESS_REFUSED:
            case NOT_FOUND:
            case RESOURCE_LOCKED:
            case PRECONDITION_FAILED:
                return true;
            default:
                return false;
        }
    }

    /** The spec's name of {@code code} with underscores ({@code "NOT_FOUND"}), or {@code "UNKNOWN"}. */
    public static String name(int code) {
        switch (code) {
            case REPLY_SUCCESS:
                return "REPLY_SUCCESS";
            case CONTENT_TOO_LARGE:
                return "CONTENT_TOO_LARGE";
            case NO_ROUTE:
                return "NO_ROUTE";
            case NO_CONSUMERS:
                return "NO_CONSUMERS";
            case ACCESS_REFUSED:
                return "ACCESS_REFUSED";
            case NOT_FOUND:
                return "NOT_FOUND";
            case RESOURCE_LOCKED:
                return "RESOURCE_LOCKED";
            case PRECONDITION_FAILED:
                return "PRECONDITION_FAILED";
            case CONNECTION_FORCED:
                return "CONNECTION_FORCED";
            case INVALID_PATH:
                return "INVALID_PATH";
            case FRAME_ERROR:
                return "FRAME_ERROR";
            case SYNTAX_ERROR:
                return "SYNTAX_ERROR";
            case COMMAND_INVALID:
                return "COMMAND_INVALID";
            case CHANNEL_ERROR:
                return "CHANNEL_ERROR";
            case UNEXPECTED_FRAME:
                return "UNEXPECTED_FRAME";
            case RESOURCE_ERROR:
                return "RESOURCE_ERROR";
            case NOT_ALLOWED:
                return "NOT_ALLOWED";
            case NOT_IMPLEMENTED:
                return "NOT_IMPLEMENTED";
            case INTERNAL_ERROR:
                return "INTERNAL_ERROR";
            default:
                return "UNKNOWN";
        }
    }
}
