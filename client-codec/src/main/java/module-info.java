/**
 * Warren's AMQP 0-9-1 wire format: frames, one flyweight view and one encoder per method, the content header
 * and field tables. Knows nothing of connections.
 */
module io.warren.codec {
    requires transitive io.netty.buffer;
    requires transitive io.netty.codec;
    requires transitive io.netty.common;
    requires transitive io.netty.transport;

    exports io.warren.codec;
    exports io.warren.codec.base;
    exports io.warren.codec.content;
    exports io.warren.codec.method;
    exports io.warren.codec.table;
}
