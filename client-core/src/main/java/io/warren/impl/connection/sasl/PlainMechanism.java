package io.warren.impl.connection.sasl;

import java.nio.charset.StandardCharsets;

/** RFC 4616 PLAIN: {@code authzid NUL authcid NUL passwd}, with an empty authorization identity. */
public final class PlainMechanism implements SaslMechanism {

    private final String username;
    private final String password;

    public PlainMechanism(String username, String password) {
        this.username = username;
        this.password = password;
    }

    @Override
    public String name() {
        return "PLAIN";
    }

    @Override
    public byte[] initialResponse() {
        return ("\0" + username + "\0" + password).getBytes(StandardCharsets.UTF_8);
    }

    /** PLAIN has no challenges; a broker that sends one gets the same response again. */
    @Override
    public byte[] respond(byte[] challenge) {
        return initialResponse();
    }

    @Override
    public String toString() {
        return "PLAIN";
    }
}
