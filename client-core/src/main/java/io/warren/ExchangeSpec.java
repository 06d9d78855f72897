package io.warren;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The arguments of exchange.declare. Spec defaults: not passive, not durable, not auto-delete, not
 * internal, no arguments, wait for declare-ok.
 *
 * <pre>{@code
 * channel.exchangeDeclare(ExchangeSpec.of("orders", "topic").durable(true))
 * }</pre>
 */
public final class ExchangeSpec {

    private final String exchange;
    private final String type;
    private boolean passive;
    private boolean durable;
    private boolean autoDelete;
    private boolean internal;
    private boolean noWait;
    private final Map<String, Object> arguments = new LinkedHashMap<>();

    private ExchangeSpec(String exchange, String type) {
        this.exchange = Objects.requireNonNull(exchange, "exchange");
        this.type = Objects.requireNonNull(type, "type");
    }

    /** Declares {@code exchange} of {@code type} (direct, fanout, topic, headers, or a plugin's type). */
    public static ExchangeSpec of(String exchange, String type) {
        return new ExchangeSpec(exchange, type);
    }

    /** Checks that {@code exchange} exists (404 NOT_FOUND closes the channel if not); creates nothing. */
    public static ExchangeSpec passive(String exchange) {
        ExchangeSpec d = new ExchangeSpec(exchange, "");
        d.passive = true;
        return d;
    }

    public ExchangeSpec durable(boolean durable) {
        this.durable = durable;
        return this;
    }

    public ExchangeSpec autoDelete(boolean autoDelete) {
        this.autoDelete = autoDelete;
        return this;
    }

    public ExchangeSpec internal(boolean internal) {
        this.internal = internal;
        return this;
    }

    /** Do not wait for declare-ok: the returned stage completes once the method is written. */
    public ExchangeSpec noWait(boolean noWait) {
        this.noWait = noWait;
        return this;
    }

    /** An argument such as {@code alternate-exchange}; a null value removes the key. */
    public ExchangeSpec argument(String key, Object value) {
        Objects.requireNonNull(key, "key");
        if (value == null) {
            arguments.remove(key); // as QueueSpec: the broker refuses a void value for its own arguments
        } else {
            arguments.put(key, value);
        }
        return this;
    }

    public ExchangeSpec arguments(Map<String, ?> arguments) {
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
