package io.warren.impl.connection;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The server properties of connection.start, shared by the connections that were sent the same ones. A broker sends
 * every connection the same table (product, version, capabilities, ...): decoded, it is a few KiB of maps and strings
 * per connection, a sixth of an idle connection's heap. So each decoded table is made immutable throughout and kept
 * among the last few distinct ones; a connection given an equal table takes the kept one. Like an interned string,
 * the kept values are immutable and few, so one set serves every client in the JVM. Any thread.
 */
final class ServerProperties {

    /** Distinct tables kept: a cluster's nodes may differ (their versions during an upgrade, say). */
    private static final int KEPT = 8;

    private static final AtomicReferenceArray<Map<String, Object>> KEPT_TABLES = new AtomicReferenceArray<>(KEPT);

    private ServerProperties() {}

    /**
     * {@code decoded} made immutable (its nested tables and arrays too), or an equal one kept from an earlier
     * connection.
     */
    static Map<String, Object> shared(Map<String, Object> decoded) {
        if (holdsArrays(decoded)) {
            // a byte array ('x') equals only itself and cannot be made immutable: such a table is the connection's own
            return frozenTable(decoded);
        }
        for (int i = 0; i < KEPT; i++) {
            Map<String, Object> kept = KEPT_TABLES.get(i);
            if (kept == null) {
                break;
            }
            if (kept.equals(decoded)) {
                return kept;
            }
        }
        Map<String, Object> frozen = frozenTable(decoded);
        // the newest first; a race between two connections at worst keeps one table twice
        for (int i = KEPT - 1; i > 0; i--) {
            KEPT_TABLES.set(i, KEPT_TABLES.get(i - 1));
        }
        KEPT_TABLES.set(0, frozen);
        return frozen;
    }

    private static boolean holdsArrays(Object value) {
        if (value instanceof byte[]) {
            return true;
        }
        if (value instanceof Map<?, ?> m) {
            return m.values().stream().anyMatch(ServerProperties::holdsArrays);
        }
        if (value instanceof List<?> l) {
            return l.stream().anyMatch(ServerProperties::holdsArrays);
        }
        return false;
    }

    private static Map<String, Object> frozenTable(Map<String, Object> table) {
        Map<String, Object> copy = new LinkedHashMap<>(Math.max(2, table.size() * 4 / 3 + 1));
        table.forEach((k, v) -> copy.put(k, frozen(v)));
        return Collections.unmodifiableMap(copy);
    }

    @SuppressWarnings("unchecked")
    private static Object frozen(Object value) {
        if (value instanceof Map<?, ?> m) {
            return frozenTable((Map<String, Object>) m);
        }
        if (value instanceof List<?> l) {
            List<Object> copy = new ArrayList<>(l.size());
            l.forEach(v -> copy.add(frozen(v)));
            return Collections.unmodifiableList(copy);
        }
        return value; // strings, numbers, LongString and the like are immutable already (byte arrays: see shared)
    }
}
