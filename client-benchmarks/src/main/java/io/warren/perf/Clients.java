package io.warren.perf;

import java.lang.reflect.InvocationTargetException;
import java.util.List;

/**
 * The clients warren-perf can drive, by the name given to {@code --client} and {@code --compare}.
 *
 * <p>The Warren driver is found by name, {@value #WARREN_DRIVER}, so it drops into this package as one
 * class with a public no-argument constructor implementing {@link ClientDriver}, and nothing else
 * changes: once it is there it becomes the default client.
 */
final class Clients {

    static final String WARREN = "warren";
    static final String AMQP_CLIENT = "amqp-client";
    /** Not a client: pre-encoded frames, the reference point ({@link RawDriver}). */
    static final String RAW = "raw";

    static final String WARREN_DRIVER = "io.warren.perf.WarrenDriver";

    /** Every name the options accept. */
    static final List<String> NAMES = List.of(WARREN, AMQP_CLIENT, RAW);

    private Clients() {}

    /** Warren when its driver is in this build, amqp-client until then. */
    static String defaultClient() {
        return available(WARREN) ? WARREN : AMQP_CLIENT;
    }

    /** Whether {@link #create} can make this client's driver. */
    static boolean available(String name) {
        return switch (name) {
            case AMQP_CLIENT, RAW -> true;
            case WARREN -> warrenDriverClass() != null;
            default -> false;
        };
    }

    /** A new driver for one run. */
    static ClientDriver create(String name) {
        switch (name) {
            case AMQP_CLIENT:
                return new AmqpClientDriver();
            case RAW:
                return new RawDriver();
            case WARREN:
                Class<?> type = warrenDriverClass();
                if (type == null) {
                    throw new IllegalStateException(
                            "the Warren driver (" + WARREN_DRIVER
                                    + ") is not in this build: it needs Warren's publish and consume API; use --client amqp-client");
                }
                try {
                    return (ClientDriver) type.getConstructor().newInstance();
                } catch (InvocationTargetException e) {
                    throw new IllegalStateException("the Warren driver failed to start", e.getCause());
                } catch (ReflectiveOperationException | ClassCastException e) {
                    throw new IllegalStateException(
                            WARREN_DRIVER + " must implement ClientDriver and have a public no-argument constructor",
                            e);
                }
            default:
                throw new IllegalArgumentException("unknown client '" + name + "'; known: " + NAMES);
        }
    }

    private static Class<?> warrenDriverClass() {
        try {
            return Class.forName(WARREN_DRIVER, false, Clients.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            return null;
        }
    }
}
