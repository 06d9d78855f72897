package io.warren.impl.recovery;

import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;

/**
 * The delay before each reconnection attempt: exponential, capped, with jitter.
 *
 * <p>Attempt {@code n} (1-based) waits {@code min(max, initial * multiplier^(n-1))}, of which a fraction
 * {@code jitter} is random: the delay is uniform in {@code [base * (1 - jitter), base]}. Jitter is what keeps a
 * thousand clients that lost the same broker from reconnecting in the same millisecond; the cap keeps a long
 * outage from pushing the next attempt minutes past the broker's return. Immutable and thread-safe.
 */
public final class Backoff {

    private final long initialNanos;
    private final long maxNanos;
    private final double multiplier;
    private final double jitter;
    private final DoubleSupplier random;

    public Backoff(long initialNanos, long maxNanos, double multiplier, double jitter) {
        this(initialNanos, maxNanos, multiplier, jitter, null);
    }

    /** With a source of random numbers in [0, 1), for tests; null: {@link ThreadLocalRandom}. */
    public Backoff(long initialNanos, long maxNanos, double multiplier, double jitter, DoubleSupplier random) {
        if (initialNanos < 0 || maxNanos < initialNanos) {
            throw new IllegalArgumentException("backoff needs 0 <= initial <= max: " + initialNanos + ", " + maxNanos);
        }
        if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
            throw new IllegalArgumentException("backoff multiplier must be at least 1: " + multiplier);
        }
        if (!(jitter >= 0.0 && jitter <= 1.0)) {
            throw new IllegalArgumentException("backoff jitter must be within 0..1: " + jitter);
        }
        this.initialNanos = initialNanos;
        this.maxNanos = maxNanos;
        this.multiplier = multiplier;
        this.jitter = jitter;
        this.random = random;
    }

    /** The capped delay of attempt {@code attempt} (1-based) before jitter. */
    public long baseNanos(int attempt) {
        if (attempt <= 1) {
            return initialNanos;
        }
        // in doubles: initial * multiplier^(n-1) overflows a long long before n is large
        double d = initialNanos * Math.pow(multiplier, attempt - 1);
        return d >= maxNanos ? maxNanos : (long) d;
    }

    /** The delay before attempt {@code attempt} (1-based), jitter applied. */
    public long delayNanos(int attempt) {
        long base = baseNanos(attempt);
        if (jitter == 0.0 || base == 0) {
            return base;
        }
        // no default supplier: a lambda here would be generated at every fresh JVM's first connect
        double r = random == null ? ThreadLocalRandom.current().nextDouble() : random.getAsDouble();
        return (long) (base * (1.0 - jitter * r));
    }

    @Override
    public String toString() {
        return "Backoff{initial=" + initialNanos / 1_000_000 + "ms, max=" + maxNanos / 1_000_000 + "ms, multiplier="
                + multiplier + ", jitter=" + jitter + "}";
    }
}
