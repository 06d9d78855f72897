package io.warren.impl.publish;

import io.netty.buffer.ByteBuf;
import io.warren.Channel;
import io.warren.ReturnedMessage;
import io.warren.codec.content.BasicProperties;
import io.warren.codec.content.ContentHeader;
import io.warren.codec.method.BasicReturn;
import io.warren.impl.channel.AssembledContent;

/**
 * A {@link ReturnedMessage} over an {@link AssembledContent}: views wrapped on the frames' bytes, strings
 * decoded when asked. Valid until {@link Returns} releases the content after the listeners ran. Event loop only.
 */
final class ReturnedMessageImpl implements ReturnedMessage {

    private final Channel channel;
    private final AssembledContent content;
    private final BasicReturn method = new BasicReturn();
    private final ContentHeader header = new ContentHeader();

    ReturnedMessageImpl(Channel channel, AssembledContent content) {
        this.channel = channel;
        this.content = content;
        method.wrap(content.method(), content.method().readerIndex());
        header.wrap(content.header(), content.header().readerIndex());
    }

    @Override
    public Channel channel() {
        return channel;
    }

    @Override
    public int replyCode() {
        return method.replyCode();
    }

    @Override
    public String replyText() {
        return method.replyTextAsString();
    }

    @Override
    public String exchange() {
        return method.exchangeAsString();
    }

    @Override
    public String routingKey() {
        return method.routingKeyAsString();
    }

    @Override
    public ContentHeader header() {
        return header;
    }

    @Override
    public BasicProperties properties() {
        return header.toProperties();
    }

    @Override
    public ByteBuf body() {
        return content.body();
    }

    @Override
    public String toString() {
        return "ReturnedMessage(" + replyCode() + " " + replyText() + ", exchange '" + exchange() + "', routingKey '"
                + routingKey() + "', " + content.body().readableBytes() + " bytes)";
    }
}
