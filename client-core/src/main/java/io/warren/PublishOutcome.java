package io.warren;

import java.util.Objects;

/**
 * What became of one publish, as far as the broker told the client.
 *
 * <ul>
 *   <li>{@link Status#SENT}: the channel is not in confirm mode; the message's frames were written to the
 *       socket. The broker promised nothing.</li>
 *   <li>{@link Status#CONFIRMED}: confirm mode; the broker acknowledged the message (basic.ack): it was routed
 *       to every queue it had to go to and those queues took responsibility for it.</li>
 *   <li>{@link Status#RETURNED}: confirm mode, a mandatory publish that no queue took: the broker sent it back
 *       (basic.return, {@link #replyCode()} 312 NO_ROUTE) and then acknowledged it. Not a success for most
 *       applications: check {@link #isReturned()}.</li>
 * </ul>
 *
 * A broker's basic.nack fails the publish's stage with a {@link PublishNackedException} instead, and a channel or
 * connection that closes first fails it with a {@link PublishNotConfirmedException}. Immutable; {@link #SENT} and
 * {@link #CONFIRMED} are shared instances, so completing a publish allocates nothing.
 */
public final class PublishOutcome {

    /** The kinds of outcome. */
    public enum Status {
        /** Written to the socket; the channel is not in confirm mode. */
        SENT,
        /** Acknowledged by the broker (confirm mode). */
        CONFIRMED,
        /** Returned by the broker as unroutable (mandatory), then acknowledged (confirm mode). */
        RETURNED
    }

    /** The outcome of every publish on a channel that is not in confirm mode. */
    public static final PublishOutcome SENT = new PublishOutcome(Status.SENT, 0, null);

    /** The outcome of every confirmed publish that was not returned. */
    public static final PublishOutcome CONFIRMED = new PublishOutcome(Status.CONFIRMED, 0, null);

    private final Status status;
    private final int replyCode;
    private final String replyText;

    private PublishOutcome(Status status, int replyCode, String replyText) {
        this.status = status;
        this.replyCode = replyCode;
        this.replyText = replyText;
    }

    /** The outcome of a mandatory publish the broker returned (basic.return) and then acknowledged. */
    public static PublishOutcome returned(int replyCode, String replyText) {
        return new PublishOutcome(Status.RETURNED, replyCode, Objects.requireNonNull(replyText, "replyText"));
    }

    public Status status() {
        return status;
    }

    /** True when the broker acknowledged the message and did not return it. */
    public boolean isConfirmed() {
        return status == Status.CONFIRMED;
    }

    /** True when the broker returned the message: no queue took it. */
    public boolean isReturned() {
        return status == Status.RETURNED;
    }

    /** basic.return's reply code (312 NO_ROUTE), or 0 unless {@link #isReturned()}. */
    public int replyCode() {
        return replyCode;
    }

    /** basic.return's reply text ("NO_ROUTE"), or {@code null} unless {@link #isReturned()}. */
    public String replyText() {
        return replyText;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PublishOutcome p
                && p.status == status
                && p.replyCode == replyCode
                && Objects.equals(p.replyText, replyText);
    }

    @Override
    public int hashCode() {
        return Objects.hash(status, replyCode, replyText);
    }

    @Override
    public String toString() {
        return status == Status.RETURNED ? "RETURNED(" + replyCode + " " + replyText + ")" : status.name();
    }
}
