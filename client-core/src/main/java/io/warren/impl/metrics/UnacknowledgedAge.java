package io.warren.impl.metrics;

/**
 * A consumer whose oldest unacknowledged delivery has an age, for {@code ClientMetrics#oldestUnacknowledgedMillis}.
 * Implemented by the consume room's consumer. Any thread.
 */
public interface UnacknowledgedAge {

    /** How long the oldest delivery not yet settled has waited, in nanoseconds; 0 when there is none. */
    long oldestUnacknowledgedAgeNanos();
}
