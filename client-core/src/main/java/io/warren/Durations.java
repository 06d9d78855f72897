package io.warren;

import java.time.Duration;

/** The options' checks of a duration that a timer will be set with. */
final class Durations {

    /** Long.MAX_VALUE nanoseconds, about 292 years: the longest a timer can be set for. */
    private static final Duration LONGEST = Duration.ofNanos(Long.MAX_VALUE);

    private Durations() {}

    /**
     * {@code d}, when positive and within {@link #LONGEST} (beyond it {@link Duration#toNanos()} overflows where the
     * timer is set, on the event loop).
     *
     * @throws IllegalArgumentException otherwise
     */
    static Duration positive(Duration d, String name) {
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " must be positive: " + d);
        }
        return withinTimers(d, name);
    }

    /** {@code d}, when within {@link #LONGEST}; else {@link IllegalArgumentException}. */
    static Duration withinTimers(Duration d, String name) {
        if (d.compareTo(LONGEST) > 0) {
            throw new IllegalArgumentException(name + " must be at most " + LONGEST + " (Long.MAX_VALUE ns): " + d);
        }
        return d;
    }
}
