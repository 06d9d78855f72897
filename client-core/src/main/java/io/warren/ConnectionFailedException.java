package io.warren;

import java.util.List;
import java.util.Objects;

/**
 * A connection could not be opened: no address accepted the TCP connection (its cause is the socket's failure,
 * for example a {@link java.net.ConnectException} "Connection refused"), or, with several addresses, every
 * address failed (the cause is the last failure, the others are suppressed). Nothing was ever open, so nothing
 * is left to close; connecting again is the retry. The message names the addresses tried (host and port,
 * never credentials).
 *
 * <p>A refusal by the broker itself is not this: bad credentials are an {@link AuthenticationException}, an
 * unknown virtual host a {@link ConnectionClosedException} with the broker's reply code, and a connect that does
 * not finish in time a {@link ConnectionTimeoutException}.
 */
public class ConnectionFailedException extends AmqpException {

    private static final long serialVersionUID = 1L;

    private final List<Address> addresses;

    public ConnectionFailedException(String message, List<Address> addresses, Throwable cause) {
        super(message, cause);
        this.addresses = List.copyOf(Objects.requireNonNull(addresses, "addresses"));
    }

    /** The addresses that were tried, in the order they were tried. */
    public List<Address> addresses() {
        return addresses;
    }
}
