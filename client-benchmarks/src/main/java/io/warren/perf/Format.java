package io.warren.perf;

import java.util.Locale;

/** Human-readable numbers for the progress lines and the summary. */
final class Format {

    private Format() {}

    /** {@code 123,456 msg/s}. */
    static String rate(double perSecond) {
        return String.format(Locale.ROOT, "%,.0f msg/s", perSecond);
    }

    /** {@code 850 us}, {@code 12.3 ms}, {@code 1.23 s}, or {@code -} for NaN. */
    static String micros(double micros) {
        if (Double.isNaN(micros)) {
            return "-";
        }
        // compared as printed: 999.6 us is "1.0 ms", not "1000 us"
        if (Math.round(micros) < 1_000) {
            return String.format(Locale.ROOT, "%.0f us", micros);
        }
        if (Math.round(micros / 100) < 10_000) {
            return String.format(Locale.ROOT, "%.1f ms", micros / 1e3);
        }
        return String.format(Locale.ROOT, "%.2f s", micros / 1e6);
    }

    /** {@code 512 B}, {@code 1.5 KiB}, {@code 12.3 MiB}, {@code 1.02 GiB}, or {@code -} for null. */
    static String bytes(Long bytes) {
        if (bytes == null) {
            return "-";
        }
        double b = bytes;
        if (b < 1024) {
            return String.format(Locale.ROOT, "%.0f B", b);
        }
        if (b < 1024 * 1024) {
            return String.format(Locale.ROOT, "%.1f KiB", b / 1024);
        }
        if (b < 1024.0 * 1024 * 1024) {
            return String.format(Locale.ROOT, "%.1f MiB", b / (1024 * 1024));
        }
        return String.format(Locale.ROOT, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    }

    /** A count with thousands separators. */
    static String count(long n) {
        return String.format(Locale.ROOT, "%,d", n);
    }

    /** A plain number with at most {@code decimals} decimals, or {@code -} for null/NaN. */
    static String number(Double value, int decimals) {
        if (value == null || value.isNaN() || value.isInfinite()) {
            return "-";
        }
        return String.format(Locale.ROOT, "%,." + decimals + "f", value);
    }
}
