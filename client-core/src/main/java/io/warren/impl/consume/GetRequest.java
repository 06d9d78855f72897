package io.warren.impl.consume;

import io.warren.GetResponse;
import io.warren.codec.Frame;
import io.warren.codec.method.MethodIds;
import io.warren.impl.channel.AssembledContent;
import io.warren.impl.channel.ContentAssembler;
import java.util.concurrent.CompletableFuture;

/**
 * The reply side of basic.get: get-empty completes with {@code null}; get-ok starts assembling the content
 * that follows and completes with a {@link GetResponse} once the body is complete. Event loop only.
 */
public final class GetRequest {

    private GetRequest() {}

    public static void onReply(
            ChannelConsumers consumers, Frame reply, CompletableFuture<GetResponse> future, boolean autoAck) {
        var p = reply.payload();
        if (p.getInt(p.readerIndex()) == MethodIds.BASIC_GET_EMPTY) {
            future.complete(null);
            return;
        }
        // the tag takes its place among the channel's deliveries now, in arrival order (ack coalescing)
        consumers.gotMessage(p.getLong(p.readerIndex() + 4), autoAck);
        // The frame is borrowed (ChannelRpc releases it): keep a retained slice of its payload.
        consumers.state().beginContent(p.retainedSlice(), new ContentAssembler.Listener() {
            @Override
            public void onContent(AssembledContent content) {
                GetResponseImpl response = GetResponseImpl.of(consumers, content, autoAck);
                if (!future.complete(response)) {
                    response.abandon(); // timed out meanwhile: nobody will release it
                }
            }

            @Override
            public void onAbort(Throwable cause) {
                future.completeExceptionally(cause);
            }
        });
    }
}
