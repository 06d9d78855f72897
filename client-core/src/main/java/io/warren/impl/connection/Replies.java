package io.warren.impl.connection;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.FastThreadLocal;
import io.warren.DeclaredQueue;
import io.warren.codec.Frame;
import io.warren.codec.method.ChannelClose;
import io.warren.codec.method.ChannelFlow;
import io.warren.codec.method.ConnectionClose;
import io.warren.codec.method.MethodIds;
import io.warren.codec.method.MethodTable;
import io.warren.codec.method.QueueDeleteOk;
import io.warren.codec.method.QueuePurgeOk;

/**
 * Reads the replies client-core needs through the codec's flyweight views. Event loop only: the views
 * are reused, one per event-loop thread. The frame is borrowed, never released here.
 */
public final class Replies {

    /** A connection.close or channel.close, copied out of its frame. */
    public record Close(int replyCode, String replyText, int classId, int methodId) {

        /** {@code "404 NOT_FOUND - no queue 'q' in vhost '/' (queue.declare (50/10))"}. */
        public String describe() {
            String method = classId == 0 && methodId == 0 ? "" : " (" + MethodTable.describe(classId, methodId) + ")";
            return replyCode + " " + replyText + method;
        }
    }

    private static final FastThreadLocal<Views> VIEWS = new FastThreadLocal<>() {
        @Override
        protected Views initialValue() {
            return new Views();
        }
    };

    private Replies() {}

    public static Close close(Frame frame) {
        ByteBuf p = frame.payload();
        Views v = VIEWS.get();
        if (frame.channel() == 0) {
            ConnectionClose c = v.connectionClose.wrap(p, p.readerIndex());
            return new Close(c.replyCode(), c.replyTextAsString(), c.classId(), c.methodId());
        }
        ChannelClose c = v.channelClose.wrap(p, p.readerIndex());
        return new Close(c.replyCode(), c.replyTextAsString(), c.classId(), c.methodId());
    }

    public static boolean channelFlowActive(Frame frame) {
        ByteBuf p = frame.payload();
        return VIEWS.get().channelFlow.wrap(p, p.readerIndex()).active();
    }

    public static DeclaredQueue queueDeclareOk(Frame frame) {
        ByteBuf p = frame.payload();
        io.warren.codec.method.QueueDeclareOk ok = VIEWS.get().queueDeclareOk.wrap(p, p.readerIndex());
        return new DeclaredQueue(ok.queueAsString(), ok.messageCount(), ok.consumerCount());
    }

    /** The message-count of queue.purge-ok or queue.delete-ok. */
    public static long messageCount(Frame frame) {
        ByteBuf p = frame.payload();
        Views v = VIEWS.get();
        return p.getInt(p.readerIndex()) == MethodIds.QUEUE_DELETE_OK
                ? v.queueDeleteOk.wrap(p, p.readerIndex()).messageCount()
                : v.queuePurgeOk.wrap(p, p.readerIndex()).messageCount();
    }

    private static final class Views {
        final ConnectionClose connectionClose = new ConnectionClose();
        final ChannelClose channelClose = new ChannelClose();
        final ChannelFlow channelFlow = new ChannelFlow();
        public final io.warren.codec.method.QueueDeclareOk queueDeclareOk = new io.warren.codec.method.QueueDeclareOk();
        final QueuePurgeOk queuePurgeOk = new QueuePurgeOk();
        final QueueDeleteOk queueDeleteOk = new QueueDeleteOk();
    }
}
