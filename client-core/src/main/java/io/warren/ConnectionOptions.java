package io.warren;

import io.warren.codec.base.Utf8;
import io.warren.codec.content.ShortString;
import io.warren.codec.table.FieldTableEncoder;
import io.warren.credentials.CredentialsProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What to connect to and how. Mutable with fluent setters, copied by {@link AmqpClient#connect}: changing
 * an options object afterwards does not affect a connection already started.
 *
 * <p>Defaults follow RabbitMQ's clients: guest/guest on {@code localhost:5672}, virtual host {@code /},
 * heartbeat 60 s, frame-max 131072, channel-max 2047, PLAIN authentication.
 */
public final class ConnectionOptions {

    /** The default limit on an inbound message body: 64 MiB. */
    public static final long DEFAULT_MAX_INBOUND_MESSAGE_BODY_SIZE = 64L * 1024 * 1024;

    private final List<Address> addresses = new ArrayList<>();
    private boolean shuffleAddresses;
    private String username = "guest";
    private String password = "guest";
    private CredentialsProvider credentialsProvider;
    private String virtualHost = "/";
    private AuthMechanism authMechanism = AuthMechanism.PLAIN;
    private int requestedHeartbeat = 60;
    private int requestedFrameMax = 131_072;
    private int requestedChannelMax = 2047;
    private Duration connectionTimeout = Duration.ofSeconds(30);
    private Duration rpcTimeout = Duration.ofSeconds(60);
    private Duration closeTimeout = Duration.ofSeconds(10);
    private long maxInboundMessageBodySize = DEFAULT_MAX_INBOUND_MESSAGE_BODY_SIZE;
    private TlsOptions tls;
    private String connectionName;
    private final Map<String, Object> clientProperties = new LinkedHashMap<>();
    private PublishOptions publishOptions = new PublishOptions();
    private RecoveryOptions recovery = new RecoveryOptions();

    public ConnectionOptions() {}

    public ConnectionOptions(ConnectionOptions other) {
        this.addresses.addAll(other.addresses);
        this.shuffleAddresses = other.shuffleAddresses;
        this.username = other.username;
        this.password = other.password;
        this.credentialsProvider = other.credentialsProvider;
        this.virtualHost = other.virtualHost;
        this.authMechanism = other.authMechanism;
        this.requestedHeartbeat = other.requestedHeartbeat;
        this.requestedFrameMax = other.requestedFrameMax;
        this.requestedChannelMax = other.requestedChannelMax;
        this.connectionTimeout = other.connectionTimeout;
        this.rpcTimeout = other.rpcTimeout;
        this.closeTimeout = other.closeTimeout;
        this.maxInboundMessageBodySize = other.maxInboundMessageBodySize;
        this.tls = other.tls == null ? null : new TlsOptions(other.tls);
        this.connectionName = other.connectionName;
        this.clientProperties.putAll(other.clientProperties);
        this.publishOptions = new PublishOptions(other.publishOptions);
        this.recovery = new RecoveryOptions(other.recovery);
    }

    /** Options from an AMQP URI as RabbitMQ specifies it; see {@link AmqpUri}. */
    public static ConnectionOptions fromUri(String uri) {
        return AmqpUri.parse(uri).applyTo(new ConnectionOptions());
    }

    /** Replaces the address list with one address. */
    public ConnectionOptions address(String host, int port) {
        addresses.clear();
        addresses.add(new Address(host, port));
        return this;
    }

    /** Replaces the address list. Addresses are tried in order (or shuffled) until one connects. */
    public ConnectionOptions addresses(List<Address> list) {
        Objects.requireNonNull(list, "addresses");
        addresses.clear();
        addresses.addAll(list);
        return this;
    }

    /** The addresses to try; {@code localhost:5672} (5671 with TLS) when none were given. */
    public List<Address> addresses() {
        if (addresses.isEmpty()) {
            return List.of(new Address("localhost", tls == null ? 5672 : 5671));
        }
        return List.copyOf(addresses);
    }

    /** Try the addresses in random order (spreads clients over a cluster). Off by default. */
    public ConnectionOptions shuffleAddresses(boolean shuffleAddresses) {
        this.shuffleAddresses = shuffleAddresses;
        return this;
    }

    public boolean shuffleAddresses() {
        return shuffleAddresses;
    }

    /**
     * The user name.
     *
     * @throws IllegalArgumentException when it has an unpaired surrogate (it would be sent as {@code '?'})
     */
    public ConnectionOptions username(String username) {
        Utf8.encodedLength("username", Objects.requireNonNull(username, "username"));
        this.username = username;
        return this;
    }

    public String username() {
        return username;
    }

    /**
     * The password. Never logged, and left out of {@link #toString()}.
     *
     * @throws IllegalArgumentException when it has an unpaired surrogate (it would be sent as {@code '?'}); the
     *         message names the index, never the password
     */
    public ConnectionOptions password(String password) {
        Utf8.encodedLength("password", Objects.requireNonNull(password, "password"));
        this.password = password;
        return this;
    }

    public String password() {
        return password;
    }

    /**
     * Where each connection attempt gets its user name and secret, instead of {@link #username()} and
     * {@link #password()}: asked at every connect (recovery included) and, for a secret that expires, again
     * before it does, the fresh secret going to the broker in connection.update-secret. {@code null} (the
     * default) uses the user name and password. See {@link CredentialsProvider}.
     */
    public ConnectionOptions credentialsProvider(CredentialsProvider provider) {
        this.credentialsProvider = provider;
        return this;
    }

    public CredentialsProvider credentialsProvider() {
        return credentialsProvider;
    }

    /**
     * The virtual host connection.open asks for ({@code "/"} by default).
     *
     * @throws IllegalArgumentException over 255 UTF-8 bytes (a short string) or with an unpaired surrogate
     */
    public ConnectionOptions virtualHost(String virtualHost) {
        ShortString.checkedLength("virtualHost", Objects.requireNonNull(virtualHost, "virtualHost"));
        this.virtualHost = virtualHost;
        return this;
    }

    public String virtualHost() {
        return virtualHost;
    }

    public ConnectionOptions authMechanism(AuthMechanism authMechanism) {
        this.authMechanism = Objects.requireNonNull(authMechanism, "authMechanism");
        return this;
    }

    public AuthMechanism authMechanism() {
        return authMechanism;
    }

    /** Heartbeat interval in seconds the client asks for; 0 asks for none. Negotiated as the lower non-zero. */
    public ConnectionOptions requestedHeartbeat(int seconds) {
        if (seconds < 0 || seconds > 0xFFFF) {
            throw new IllegalArgumentException("heartbeat out of range 0..65535: " + seconds);
        }
        this.requestedHeartbeat = seconds;
        return this;
    }

    public int requestedHeartbeat() {
        return requestedHeartbeat;
    }

    /** Largest frame the client accepts, in bytes; 0 for no limit. At least 4096 (the spec's frame-min-size). */
    public ConnectionOptions requestedFrameMax(int bytes) {
        if (bytes != 0 && bytes < 4096) {
            throw new IllegalArgumentException("frame_max must be 0 or at least 4096: " + bytes);
        }
        this.requestedFrameMax = bytes;
        return this;
    }

    public int requestedFrameMax() {
        return requestedFrameMax;
    }

    /** Highest channel number the client wants; 0 for no limit (then 65535). */
    public ConnectionOptions requestedChannelMax(int channelMax) {
        if (channelMax < 0 || channelMax > 0xFFFF) {
            throw new IllegalArgumentException("channel_max out of range 0..65535: " + channelMax);
        }
        this.requestedChannelMax = channelMax;
        return this;
    }

    public int requestedChannelMax() {
        return requestedChannelMax;
    }

    /** Time for one whole attempt (TCP, TLS, AMQP handshake) to one address. */
    public ConnectionOptions connectionTimeout(Duration timeout) {
        this.connectionTimeout = positive(timeout, "connectionTimeout");
        return this;
    }

    public Duration connectionTimeout() {
        return connectionTimeout;
    }

    /** Time a synchronous method (declare, bind, ...) waits for its reply, counted from the call. */
    public ConnectionOptions rpcTimeout(Duration timeout) {
        this.rpcTimeout = positive(timeout, "rpcTimeout");
        return this;
    }

    public Duration rpcTimeout() {
        return rpcTimeout;
    }

    /**
     * Time {@link Connection#close()} waits for connection.close-ok before dropping the socket. A blocked
     * connection may never get close-ok from RabbitMQ.
     */
    public ConnectionOptions closeTimeout(Duration timeout) {
        this.closeTimeout = positive(timeout, "closeTimeout");
        return this;
    }

    public Duration closeTimeout() {
        return closeTimeout;
    }

    /**
     * Largest inbound message body accepted, as announced by its content header (64 MiB by default). A
     * larger message closes its channel with 311 CONTENT_TOO_LARGE before any body byte is kept.
     */
    public ConnectionOptions maxInboundMessageBodySize(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("maxInboundMessageBodySize must not be negative: " + bytes);
        }
        this.maxInboundMessageBodySize = bytes;
        return this;
    }

    public long maxInboundMessageBodySize() {
        return maxInboundMessageBodySize;
    }

    /** TLS settings; {@code null} (the default) for plain TCP. {@code amqps} URIs set default TLS options. */
    public ConnectionOptions tls(TlsOptions tls) {
        this.tls = tls;
        return this;
    }

    public TlsOptions tls() {
        return tls;
    }

    /**
     * Sent as {@code connection_name} in the client properties; shown by the management UI and rabbitmqctl.
     *
     * @throws IllegalArgumentException when it has no UTF-8 form (an unpaired surrogate), here rather than at every
     *         connect
     */
    public ConnectionOptions connectionName(String connectionName) {
        if (connectionName != null) {
            Utf8.encodedLength("connectionName", connectionName);
        }
        this.connectionName = connectionName;
        return this;
    }

    public String connectionName() {
        return connectionName;
    }

    /** An extra client property (added to, or overriding, product/version/platform/capabilities). */
    /**
     * A client property sent in connection.start-ok (the management UI shows them). A nested map or list is sent as
     * it is when the connection is made.
     *
     * @throws IllegalArgumentException when {@code value} has no AMQP field type (a {@code UUID}, say: send its
     *     string) or the key is not a valid field name
     */
    public ConnectionOptions clientProperty(String key, Object value) {
        FieldTableEncoder.encodedLength(java.util.Collections.singletonMap(Objects.requireNonNull(key, "key"), value));
        clientProperties.put(key, value);
        return this;
    }

    public Map<String, Object> clientProperties() {
        return java.util.Collections.unmodifiableMap(new LinkedHashMap<>(clientProperties));
    }

    /**
     * How the connection's channels publish: the confirm window, the bound on bytes not yet written, and what
     * a publish does while the broker blocks the connection. Copied.
     */
    public ConnectionOptions publishOptions(PublishOptions options) {
        this.publishOptions = new PublishOptions(Objects.requireNonNull(options, "options"));
        return this;
    }

    /** A copy of the publish options. */
    public PublishOptions publishOptions() {
        return new PublishOptions(publishOptions);
    }

    /** Automatic recovery after a connection loss (on by default); see {@link RecoveryOptions}. Copied. */
    public ConnectionOptions recovery(RecoveryOptions options) {
        this.recovery = new RecoveryOptions(Objects.requireNonNull(options, "options"));
        return this;
    }

    /** A copy of the recovery options. */
    public RecoveryOptions recovery() {
        return new RecoveryOptions(recovery);
    }

    /** Turns automatic recovery on (the default) or off, keeping the other recovery options. */
    public ConnectionOptions automaticRecovery(boolean on) {
        recovery.enabled(on);
        return this;
    }

    private static Duration positive(Duration d, String name) {
        return Durations.positive(Objects.requireNonNull(d, name), name);
    }

    @Override
    public String toString() {
        return "ConnectionOptions{addresses=" + addresses() + ", username=" + username + ", virtualHost="
                + virtualHost + ", authMechanism=" + authMechanism + ", heartbeat=" + requestedHeartbeat
                + ", frameMax=" + requestedFrameMax + ", channelMax=" + requestedChannelMax
                + ", tls=" + (tls != null) + ", connectionName=" + connectionName + "}";
    }
}
