package io.warren.impl.consume;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.warren.ConsumeOptions;
import io.warren.ConsumerHandle;
import io.warren.codec.method.MethodIds;
import io.warren.impl.channel.ChannelRpc;
import io.warren.impl.channel.ChannelState;
import io.warren.impl.connection.Requests;
import java.util.concurrent.CompletableFuture;

/**
 * What starts a consumer on a channel: basic.qos when its options have a prefetch, then basic.consume. The
 * application's start ({@link ChannelConsumers#consume}) and recovery's ({@link LostConsumers#moveTo}) both send
 * it, so the two cannot drift apart. The request owns its frames from {@link #build} until {@link #call} hands
 * them to the channel's RPC queue or {@link #release} releases them.
 */
final class ConsumeRequest {

    // written once; set to null when handed on
    private ByteBuf qos;
    private ByteBuf consume;
    // event loop only
    private boolean consumeSent;

    private ConsumeRequest(ByteBuf qos, ByteBuf consume) {
        this.qos = qos;
        this.consume = consume;
    }

    /**
     * Builds the frames. Any thread.
     *
     * @param consumerTag the tag asked for ({@code ""}: the broker names one)
     * @param frameMax the connection's frame-max (0: no limit), which basic.consume's frame must fit
     * @throws IllegalArgumentException for what a frame cannot carry (a name or tag over 255 bytes, an argument a
     *         field table cannot carry, arguments over frame-max); then nothing is kept: a frame already built is
     *         released
     */
    static ConsumeRequest build(
            ByteBufAllocator alloc,
            int channel,
            String queue,
            String consumerTag,
            ConsumeOptions options,
            int frameMax) {
        ByteBuf qos = options.prefetch() >= 0 ? ConsumeFrames.basicQos(alloc, channel, options.prefetch()) : null;
        try {
            return new ConsumeRequest(
                    qos,
                    Requests.checkFits(
                            ConsumeFrames.basicConsume(
                                    alloc,
                                    channel,
                                    queue,
                                    consumerTag,
                                    options.noAck(),
                                    options.exclusive(),
                                    options.arguments()),
                            frameMax,
                            channel));
        } catch (RuntimeException | Error e) {
            if (qos != null) {
                qos.release();
            }
            throw e;
        }
    }

    /**
     * Queues basic.qos then basic.consume on {@code state}, which takes the frames (and releases them if it is
     * closed). The RPC queue is first in, first out: consume goes out once qos-ok is in, and a refused qos closes
     * the channel, which fails the consume too. {@code onConsumeOk} completes {@code result} with the reply; any
     * failure fails it. Event loop.
     */
    void call(
            ChannelState state,
            ChannelRpc.ReplyHandler<ConsumerHandle> onConsumeOk,
            CompletableFuture<ConsumerHandle> result) {
        call(state, onConsumeOk, null, result);
    }

    /**
     * {@link #call(ChannelState, ChannelRpc.ReplyHandler, CompletableFuture)}, with {@code onLateConsumeOk} for a
     * consume-ok that comes after the request timed out (null: dropped; see {@link ChannelRpc.Request#onLateReply}).
     */
    void call(
            ChannelState state,
            ChannelRpc.ReplyHandler<ConsumerHandle> onConsumeOk,
            ChannelRpc.ReplyHandler<ConsumerHandle> onLateConsumeOk,
            CompletableFuture<ConsumerHandle> result) {
        assert state.outbound().inEventLoop() : "consume request off the event loop";
        ByteBuf q = qos;
        ByteBuf c = consume;
        qos = null;
        consume = null;
        if (q != null) {
            // its own outcome is the consume's: a refusal closes the channel
            state.call(ChannelRpc.Request.of(
                    MethodIds.BASIC_QOS,
                    MethodIds.BASIC_QOS_OK,
                    -1,
                    q,
                    (reply, f) -> f.complete(null),
                    new CompletableFuture<Void>()));
        }
        state.call(
                ChannelRpc.Request.of(MethodIds.BASIC_CONSUME, MethodIds.BASIC_CONSUME_OK, -1, c, onConsumeOk, result)
                        .onLateReply(onLateConsumeOk)
                        .onSend(() -> consumeSent = true));
    }

    /**
     * Whether basic.consume went on the wire: only then can the broker's refusal of a basic.consume that closes the
     * channel be this one's (one request at a time is on the wire). Event loop.
     */
    boolean consumeSent() {
        return consumeSent;
    }

    /** The request will not be sent: its frames are released. Once, and not after {@link #call}. */
    void release() {
        if (qos != null) {
            qos.release();
            qos = null;
        }
        if (consume != null) {
            consume.release();
            consume = null;
        }
    }
}
