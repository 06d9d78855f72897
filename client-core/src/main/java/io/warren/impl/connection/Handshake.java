package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.warren.AmqpException;
import io.warren.AuthenticationException;
import io.warren.ConnectionClosedException;
import io.warren.ConnectionOptions;
import io.warren.codec.Frame;
import io.warren.codec.Frames;
import io.warren.codec.ProtocolHeader;
import io.warren.codec.base.AmqpProtocolException;
import io.warren.codec.base.ReplyCode;
import io.warren.codec.method.ConnectionOpenEncoder;
import io.warren.codec.method.ConnectionSecure;
import io.warren.codec.method.ConnectionSecureOkEncoder;
import io.warren.codec.method.ConnectionStart;
import io.warren.codec.method.ConnectionStartOkEncoder;
import io.warren.codec.method.ConnectionTune;
import io.warren.codec.method.ConnectionTuneOkEncoder;
import io.warren.codec.method.MethodIds;
import io.warren.credentials.Credentials;
import io.warren.credentials.CredentialsProvider;
import io.warren.impl.connection.sasl.SaslMechanism;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client side of the AMQP 0-9-1 handshake. Event loop only.
 *
 * <pre>
 * client                               broker
 *   AMQP 0 0 9 1          ------------>
 *                         <------------  connection.start (server properties, mechanisms, locales)
 *   connection.start-ok   ------------>  (client properties, mechanism, response, locale)
 *                         <------------  connection.secure   \ zero or more rounds
 *   connection.secure-ok  ------------>                      /
 *                         <------------  connection.tune (channel-max, frame-max, heartbeat)
 *   connection.tune-ok    ------------>  (negotiated values)
 *   connection.open       ------------>  (virtual host)
 *                         <------------  connection.open-ok
 * </pre>
 *
 * Tune is negotiated as RabbitMQ's clients do: for each value the lower of the two when both are
 * non-zero, else the non-zero one (0 means "no limit" for channel-max and frame-max, "none" for heartbeat).
 */
final class Handshake {

    private static final Logger LOG = LoggerFactory.getLogger(Handshake.class);

    /** Where the handshake is; named in connection-timeout messages. */
    enum Stage {
        AWAITING_START("waiting for connection.start (is this an AMQP 0-9-1 port?)"),
        AWAITING_CREDENTIALS("waiting for the credentials provider"),
        AUTHENTICATING("waiting for connection.tune after start-ok (authentication)"),
        AWAITING_OPEN_OK("waiting for connection.open-ok (virtual host access)"),
        DONE("open");

        final String description;

        Stage(String description) {
            this.description = description;
        }
    }

    /** What the handshake negotiated. */
    record Tuned(int channelMax, int frameMax, int heartbeat) {}

    /** Told by the handshake; implemented by the connection handler. */
    interface Callbacks {
        void tuned(Tuned tuned);

        void opened(Map<String, Object> serverProperties);

        /** The handshake cannot go on (the credentials provider failed). */
        void failed(AmqpException cause);
    }

    private final ConnectionOptions options;
    private final OutboundPath outbound;
    private final io.netty.buffer.ByteBufAllocator alloc;
    private final Callbacks callbacks;

    // event loop only
    private Stage stage = Stage.AWAITING_START;
    /** The size of the start-ok frame sent, for {@link #oversizedStartOk()}. */
    private int startOkBytes;

    private SaslMechanism mechanism;
    private Credentials credentials;
    private Map<String, Object> serverProperties = Map.of();
    /** Read off the client properties start-ok sent. */
    private boolean clientAdvertisedAuthenticationFailureClose;

    Handshake(
            ConnectionOptions options,
            OutboundPath outbound,
            io.netty.buffer.ByteBufAllocator alloc,
            Callbacks callbacks) {
        this.options = options;
        this.outbound = outbound;
        this.alloc = alloc;
        this.callbacks = callbacks;
    }

    Stage stage() {
        return stage;
    }

    Map<String, Object> serverProperties() {
        return serverProperties;
    }

    /**
     * Whether the broker said (capability authentication_failure_close, RabbitMQ since 3.2) that it refuses credentials
     * with connection.close 403 rather than by dropping the socket: then a drop while authenticating is no refusal.
     */
    boolean closesOnAuthenticationFailure() {
        // both sides must say so: RabbitMQ closes with 403 only for a client that advertised it (an application's
        // own "capabilities" client property replaces Warren's)
        return advertises(serverProperties) && clientAdvertisedAuthenticationFailureClose;
    }

    private static boolean advertises(Map<String, Object> properties) {
        return properties.get("capabilities") instanceof Map<?, ?> capabilities
                && Boolean.TRUE.equals(capabilities.get("authentication_failure_close"));
    }

    /** The credentials this handshake authenticated with (null before start-ok). */
    Credentials credentials() {
        return credentials;
    }

    /** The user name authenticated with (the options' before the provider answered). */
    String username() {
        return credentials != null ? credentials.username() : options.username();
    }

    /** Sends the protocol header: the first bytes on a new connection. */
    void start() {
        assert outbound.inEventLoop() : "handshake off the event loop";
        outbound.write(ProtocolHeader.encode(alloc));
    }

    /** A connection-class method while the handshake runs; the frame is borrowed. */
    void onMethod(int key, Frame frame) {
        assert outbound.inEventLoop() : "handshake off the event loop";
        ByteBuf p = frame.payload();
        if (key == MethodIds.CONNECTION_START && stage == Stage.AWAITING_START) {
            onStart(new ConnectionStart().wrap(p, p.readerIndex()));
        } else if (key == MethodIds.CONNECTION_SECURE && stage == Stage.AUTHENTICATING) {
            ConnectionSecure secure = new ConnectionSecure().wrap(p, p.readerIndex());
            byte[] response = mechanism.respond(ByteBufUtil.getBytes(secure.challenge()));
            outbound.write(Frames.method(alloc, 0, new ConnectionSecureOkEncoder().response(response)));
        } else if (key == MethodIds.CONNECTION_TUNE && stage == Stage.AUTHENTICATING) {
            onTune(new ConnectionTune().wrap(p, p.readerIndex()));
        } else if (key == MethodIds.CONNECTION_OPEN_OK && stage == Stage.AWAITING_OPEN_OK) {
            stage = Stage.DONE;
            callbacks.opened(serverProperties);
        } else {
            throw new AmqpProtocolException(
                    ReplyCode.UNEXPECTED_FRAME,
                    MethodNames.describe(key) + " while " + stage.description,
                    null,
                    0,
                    MethodIds.classId(key),
                    MethodIds.methodId(key),
                    -1);
        }
    }

    private void onStart(ConnectionStart start) {
        if (start.versionMajor() != 0 || start.versionMinor() != 9) {
            throw new AmqpProtocolException(
                    ReplyCode.NOT_IMPLEMENTED,
                    "broker speaks AMQP " + start.versionMajor() + "-" + start.versionMinor() + ", not 0-9",
                    null,
                    0,
                    10,
                    10,
                    -1);
        }
        serverProperties = ServerProperties.shared(start.serverProperties().toMap());
        List<String> offered = words(start.mechanismsAsString());
        String wanted = options.authMechanism().saslName();
        if (!offered.contains(wanted)) {
            throw new AuthenticationException(
                    "the broker does not offer SASL mechanism " + wanted + " (it offers " + offered + ")",
                    null,
                    ReplyCode.ACCESS_REFUSED,
                    "mechanism " + wanted + " not offered",
                    10,
                    11);
        }
        CredentialsProvider provider = options.credentialsProvider();
        if (provider == null) {
            sendStartOk(Credentials.of(options.username(), options.password()));
            return;
        }
        // Asked at every connection.start: a connection made again (recovery) gets what is valid now.
        stage = Stage.AWAITING_CREDENTIALS;
        CompletionStage<Credentials> asked;
        try {
            asked = Objects.requireNonNull(provider.credentials(), "the credentials provider returned null");
        } catch (RuntimeException e) {
            asked = CompletableFuture.failedFuture(e);
        }
        asked.whenComplete((c, error) -> {
            if (outbound.inEventLoop()) {
                credentialsReady(c, error);
            } else {
                outbound.execute(() -> credentialsReady(c, error));
            }
        });
    }

    private void credentialsReady(Credentials c, Throwable error) {
        assert outbound.inEventLoop() : "handshake off the event loop";
        if (stage != Stage.AWAITING_CREDENTIALS) {
            return; // timed out or closed meanwhile
        }
        if (error != null || c == null) {
            Throwable cause =
                    error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
            // not the broker's refusal: a token endpoint that failed now may answer the next attempt
            callbacks.failed(new ConnectionClosedException(
                    "the credentials provider failed: " + (cause == null ? "it returned null" : cause.toString()),
                    cause));
            return;
        }
        try {
            sendStartOk(c);
        } catch (RuntimeException e) {
            // thrown inside the provider's callback, where nobody would see it: the attempt would wait for its timeout
            callbacks.failed(new ConnectionClosedException(
                    "connection.start-ok could not be built: " + e.getClass().getSimpleName() + ": " + e.getMessage(),
                    e));
        }
    }

    /**
     * The space-separated words of connection.start's mechanisms (or locales). Not {@code split("\\s+")}: the first
     * regular expression a JVM compiles costs a first connect a few milliseconds.
     */
    static List<String> words(String s) {
        List<String> words = new ArrayList<>(4);
        int n = s.length();
        int i = 0;
        while (i < n) {
            while (i < n && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
            int start = i;
            while (i < n && !Character.isWhitespace(s.charAt(i))) {
                i++;
            }
            if (i > start) {
                words.add(s.substring(start, i));
            }
        }
        return words;
    }

    private void sendStartOk(Credentials c) {
        credentials = c;
        String wanted = options.authMechanism().saslName();
        mechanism = SaslMechanism.of(options.authMechanism(), c.username(), c.secret());
        LOG.debug(
                "connection.start from {} {}; authenticating as '{}' with {}",
                serverProperties.get("product"),
                serverProperties.get("version"),
                c.username(),
                wanted);
        Map<String, Object> clientProperties = ClientProperties.of(options);
        clientAdvertisedAuthenticationFailureClose = advertises(clientProperties);
        ConnectionStartOkEncoder startOk = new ConnectionStartOkEncoder()
                .clientProperties(clientProperties)
                .mechanism(wanted)
                .response(mechanism.initialResponse())
                .locale("en_US");
        startOkBytes = Frames.methodFrameLength(startOk);
        outbound.write(Frames.method(alloc, 0, startOk));
        stage = Stage.AUTHENTICATING;
    }

    /**
     * Why a broker may have dropped the connection after start-ok, when that frame was larger than the 4,096 bytes
     * every broker takes before tune (RabbitMQ from 4.1 takes 8,192; its {@code initial_frame_max} sets it): a long
     * token or large client properties. Not a limit of Warren's, as brokers differ: said when the connection drops.
     * Empty otherwise.
     */
    String oversizedStartOk() {
        return stage == Stage.AUTHENTICATING && startOkBytes > Frames.FRAME_MIN_SIZE
                ? "; its connection.start-ok was " + startOkBytes + " bytes, over the " + Frames.FRAME_MIN_SIZE
                        + " a broker takes before tune (RabbitMQ from 4.1: 8192, or its initial_frame_max): a long"
                        + " token or large client properties?"
                : "";
    }

    private void onTune(ConnectionTune tune) {
        int channelMax = negotiate(options.requestedChannelMax(), tune.channelMax());
        long frameMaxLong = negotiate(options.requestedFrameMax(), tune.frameMax());
        int frameMax = (int) Math.min(frameMaxLong, Integer.MAX_VALUE);
        int heartbeat = negotiate(options.requestedHeartbeat(), tune.heartbeat());
        if (frameMax != 0 && frameMax < Frames.FRAME_MIN_SIZE) {
            throw new AmqpProtocolException(
                    ReplyCode.SYNTAX_ERROR,
                    "broker tuned frame-max " + frameMax + " below the minimum " + Frames.FRAME_MIN_SIZE,
                    null,
                    0,
                    10,
                    30,
                    -1);
        }
        LOG.debug(
                "tuned: channel-max {}, frame-max {}, heartbeat {} s (broker offered {}, {}, {})",
                channelMax,
                frameMax,
                heartbeat,
                tune.channelMax(),
                tune.frameMax(),
                tune.heartbeat());
        outbound.write(Frames.method(
                alloc,
                0,
                new ConnectionTuneOkEncoder()
                        .channelMax(channelMax)
                        .frameMax(frameMax)
                        .heartbeat(heartbeat)));
        outbound.write(Frames.method(alloc, 0, new ConnectionOpenEncoder().virtualHost(options.virtualHost())));
        stage = Stage.AWAITING_OPEN_OK;
        // after the writes: the heartbeat clock starts at tune, and the handshake's writes do not count
        callbacks.tuned(new Tuned(channelMax, frameMax, heartbeat));
    }

    /** The lower non-zero of the two; 0 only when both are 0. */
    static int negotiate(int client, int server) {
        return client == 0 || server == 0 ? Math.max(client, server) : Math.min(client, server);
    }

    static long negotiate(long client, long server) {
        return client == 0 || server == 0 ? Math.max(client, server) : Math.min(client, server);
    }

    /** The client properties sent in start-ok. */
    static final class ClientProperties {

        static final String VERSION = version();

        private ClientProperties() {}

        static Map<String, Object> of(ConnectionOptions options) {
            Map<String, Object> capabilities = new LinkedHashMap<>();
            capabilities.put("publisher_confirms", true);
            capabilities.put("exchange_exchange_bindings", true);
            capabilities.put("basic.nack", true);
            capabilities.put("consumer_cancel_notify", true);
            capabilities.put("connection.blocked", true);
            capabilities.put("authentication_failure_close", true);
            capabilities.put("per_consumer_qos", true);
            capabilities.put("direct_reply_to", true);
            Map<String, Object> props = new LinkedHashMap<>();
            props.put("product", "Warren");
            props.put("version", VERSION);
            props.put("platform", "Java " + System.getProperty("java.version") + " / Netty");
            props.put("capabilities", capabilities);
            if (options.connectionName() != null) {
                props.put("connection_name", options.connectionName());
            }
            props.putAll(options.clientProperties());
            return props;
        }

        private static String version() {
            String v = Handshake.class.getPackage().getImplementationVersion();
            return v == null ? "0.1.0-SNAPSHOT" : v;
        }
    }
}
