package io.warren.impl.consume;

import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;

/**
 * Turns the {@link AsciiString}s the codec's cache returns for shortstr fields (exchange, routing key) into
 * {@link String}s without allocating in the steady state: the cache hands out the same {@code AsciiString}
 * for the same bytes, so the last one and its decoded string are kept and matched by identity. A channel
 * usually sees one exchange and one routing key per consumer, which makes one entry enough.
 *
 * <p>Any thread: the entry is an immutable object published through a volatile field, so a racing reader sees
 * a whole entry, and the worst a race costs is one more decode.
 */
final class ShortStrings {

    private volatile Entry last;

    String get(AsciiString raw) {
        Entry e = last;
        if (e != null && e.raw == raw) {
            return e.string;
        }
        // AsciiString.toString() would read the bytes as Latin-1; names are UTF-8 on the wire.
        String s = new String(raw.array(), raw.arrayOffset(), raw.length(), StandardCharsets.UTF_8);
        last = new Entry(raw, s);
        return s;
    }

    private record Entry(AsciiString raw, String string) {}
}
