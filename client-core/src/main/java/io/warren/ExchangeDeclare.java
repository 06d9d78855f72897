package io.warren;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The arguments of exchange.declare. Spec defaults: not passive, not durable, not auto-delete, not
 * internal, no arguments, wait for declare-ok.
 *
 * <pre>{@code
 * channel.exchangeDeclare(ExchangeDeclare.of("orders", "topic").durable(true))
 * }</pre>
 */
public final class ExchangeDeclare {

    private final String exchange;
    private final String type;
    private boolean passive;
    private boolean durable;
    private boolean autoDelete;
    private boolean internal;
    private boolean noWait;
    private final Map<String, Object> arguments = new LinkedHashMap<>();

    private ExchangeDeclare(String exchange, String type) {
        this.exchange = Objects.requireNonNull(exchange, "exchange");
        this.type = Objects.requireNonNull(type, "type");
    }

    /** Declares {@code exchange} of {@code type} (direct, fanout, topic, headers, or a plugin's type). */
    public static ExchangeDeclare of(String exchange, String type) {
        return new ExchangeDeclare(exchange, type);
    }

    /** Checks that {@code exchange} exists (404 NOT_FOUND closes the channel if not); creates nothing. */
    public static ExchangeDeclare passive(String exchange) {
        ExchangeDeclare d = new ExchangeDeclare(exchange, "");
        d.passive = true;
        return d;
    }

    public ExchangeDeclare durable(boolean durable) {
        this.durable = durable;
        return this;
    }

    public ExchangeDeclare autoDelete(boolean autoDelete) {
        this.autoDelete = autoDelete;
        return this;
    }

    public ExchangeDeclare internal(boolean internal) {
        this.internal = internal;
        return this;
    }

    /** Do not wait for declare-ok: the returned stage completes once the method is written. */
    public ExchangeDeclare noWait(boolean noWait) {
        this.noWait = noWait;
        return this;
    }

    /** An argument such as {@code alternate-exchange}. */
    public ExchangeDeclare argument(String key, Object value) {
        arguments.put(Objects.requireNonNull(key, "key"), value);
        return this;
    }

    public ExchangeDeclare arguments(Map<String, ?> arguments) {
        this.arguments.putAll(arguments);
        return this;
    }

    public String exchange() {
        return exchange;
    }

    public String type() {
        return type;
    }

    public boolean passive() {
        return passive;
    }

    public boolean durable() {
        return durable;
    }

    public boolean autoDelete() {
        return autoDelete;
    }

    public boolean internal() {
        return internal;
    }

    public boolean noWait() {
        return noWait;
    }

    public Map<String, Object> arguments() {
        return java.util.Collections.unmodifiableMap(arguments);
    }
}
