/**
 * Warren: an asynchronous AMQP 0-9-1 client for RabbitMQ on Netty.
 *
 * <p>Exported: the public API ({@code io.warren}) and the optional adapters. {@code io.warren.impl} and its
 * subpackages are internal, not exported, and may change at will. The adapters' dependencies (Vert.x,
 * Micrometer, OpenTelemetry) are optional: {@code requires static}, needed only by an application that uses
 * the adapter.
 */
module io.warren.core {
    requires transitive io.warren.codec;
    requires transitive io.netty.buffer;
    requires transitive io.netty.common;
    requires transitive io.netty.transport;
    requires io.netty.handler;
    requires org.jctools.core;
    requires org.slf4j;
    // the Vert.x adapter's public API is made of Vert.x types: its users read io.vertx.core through us
    requires static transitive io.vertx.core;
    requires static micrometer.core;
    requires static io.opentelemetry.api;
    requires static io.opentelemetry.context;

    exports io.warren;
    exports io.warren.vertx;
    exports io.warren.credentials;
    exports io.warren.flow;
    exports io.warren.micrometer;
    exports io.warren.otel;
    exports io.warren.rpc;
}
