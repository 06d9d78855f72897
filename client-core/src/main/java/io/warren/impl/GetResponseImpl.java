package io.warren.impl;

import io.netty.buffer.ByteBuf;
import io.warren.GetResponse;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicGetOk;

/**
 * A basic.get response over an {@link AssembledContent}: the envelope is read from the get-ok payload at
 * construction, the properties from the content header on first use, and the body is the assembled one.
 */
final class GetResponseImpl implements GetResponse {

    private final AssembledContent content;
    private final long deliveryTag;
    private final boolean redelivered;
    private final String exchange;
    private final String routingKey;
    private final long messageCount;
    private BasicProperties properties;
    private boolean released;

    GetResponseImpl(AssembledContent content) {
        this.content = content;
        ByteBuf m = content.method();
        BasicGetOk ok = new BasicGetOk().wrap(m, m.readerIndex());
        this.deliveryTag = ok.deliveryTag();
        this.redelivered = ok.redelivered();
        this.exchange = ok.exchangeAsString();
        this.routingKey = ok.routingKeyAsString();
        this.messageCount = ok.messageCount();
    }

    @Override
    public long deliveryTag() {
        return deliveryTag;
    }

    @Override
    public boolean redelivered() {
        return redelivered;
    }

    @Override
    public String exchange() {
        return exchange;
    }

    @Override
    public String routingKey() {
        return routingKey;
    }

    @Override
    public long messageCount() {
        return messageCount;
    }

    @Override
    public synchronized BasicProperties properties() {
        if (properties == null) {
            checkNotReleased();
            ByteBuf h = content.header();
            properties = new ContentHeader().wrap(h, h.readerIndex()).toProperties();
        }
        return properties;
    }

    @Override
    public ByteBuf body() {
        checkNotReleased();
        return content.body();
    }

    @Override
    public synchronized void release() {
        if (released) {
            throw new IllegalStateException("GetResponse already released");
        }
        released = true;
        content.release();
    }

    private void checkNotReleased() {
        if (released) {
            throw new IllegalStateException("GetResponse already released");
        }
    }

    @Override
    public String toString() {
        return "GetResponse(deliveryTag " + deliveryTag + ", exchange '" + exchange + "', routingKey '" + routingKey
                + "', " + content.body().readableBytes() + " bytes)";
    }
}
