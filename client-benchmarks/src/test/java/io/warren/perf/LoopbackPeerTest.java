package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.MessageProperties;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The loopback peer is correct enough for the official Java client, unmodified: it connects, declares,
 * publishes with confirms and gets every publish acknowledged, consumes the deliveries the peer streams.
 */
class LoopbackPeerTest {

    private static Connection connect(LoopbackPeer peer) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(peer.uri());
        factory.setAutomaticRecoveryEnabled(false);
        return factory.newConnection("loopback-peer-test");
    }

    @Test
    void amqpClientConnectsDeclaresAndGetsEveryPublishConfirmedWithMultipleAcks() throws Exception {
        try (LoopbackPeer peer = LoopbackPeer.start(LoopbackPeer.Mode.SINK, 12, 0);
                Connection connection = connect(peer)) {
            assertEquals(
                    "warren loopback peer",
                    connection.getServerProperties().get("product").toString());
            assertEquals(131072, connection.getFrameMax());
            Channel channel = connection.createChannel();
            channel.exchangeDeclare("perf-x", "direct");
            String generated = channel.queueDeclare().getQueue();
            assertTrue(generated.startsWith("amq.gen-"), generated);
            channel.queueBind(generated, "perf-x", "key");
            assertEquals(
                    "named",
                    channel.queueDeclare("named", true, false, true, Map.<String, Object>of("x-max-length", 10))
                            .getQueue());
            channel.basicQos(10);
            assertEquals(null, channel.basicGet("named", true), "basic.get answers get-empty");
            channel.confirmSelect();

            List<Boolean> multipleFlags = Collections.synchronizedList(new ArrayList<>());
            AtomicLong highestAck = new AtomicLong();
            AtomicBoolean nacked = new AtomicBoolean();
            channel.addConfirmListener(new ConfirmListener() {
                @Override
                public void handleAck(long tag, boolean multiple) {
                    multipleFlags.add(multiple);
                    highestAck.accumulateAndGet(tag, Math::max);
                }

                @Override
                public void handleNack(long tag, boolean multiple) {
                    nacked.set(true);
                }
            });
            int[] sizes = {0, 12, 1_000, 300_000}; // 300 kB spans three body frames at frame-max 128 KiB
            int count = 4_000;
            for (int i = 0; i < count; i++) {
                byte[] body = new byte[sizes[i % sizes.length]];
                channel.basicPublish("perf-x", "key", false, MessageProperties.PERSISTENT_BASIC, body);
            }
            assertTrue(channel.waitForConfirms(30_000), "every publish acknowledged");
            assertFalse(nacked.get());
            assertEquals(count, highestAck.get());
            assertFalse(multipleFlags.isEmpty());
            assertTrue(multipleFlags.stream().allMatch(m -> m), "confirms go out as multiple acks");
            assertEquals(count, peer.stats().publishes());
            assertEquals(count, peer.stats().confirms());
            assertEquals(0, peer.stats().deliveries());
            channel.close();
        }
    }

    @Test
    void sourceStreamsExactlyTheDeliveriesAskedForWithinThePrefetch() throws Exception {
        int count = 5_000;
        try (LoopbackPeer peer = LoopbackPeer.start(LoopbackPeer.Mode.SOURCE, 100, count);
                Connection connection = connect(peer)) {
            Channel channel = connection.createChannel();
            String queue = channel.queueDeclare().getQueue();
            channel.basicQos(50);
            CountDownLatch all = new CountDownLatch(count);
            AtomicLong expectedTag = new AtomicLong(1);
            AtomicBoolean wrong = new AtomicBoolean();
            channel.basicConsume(queue, false, new DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                        throws IOException {
                    if (body.length != 100 || envelope.getDeliveryTag() != expectedTag.getAndIncrement()) {
                        wrong.set(true);
                    }
                    // single acks, and a multiple ack every 10: both reopen the prefetch window
                    long t = envelope.getDeliveryTag();
                    if (t < count / 2) {
                        getChannel().basicAck(t, false);
                    } else if (t % 10 == 0 || t == count) {
                        getChannel().basicAck(t, true);
                    }
                    all.countDown();
                }
            });
            assertTrue(all.await(60, TimeUnit.SECONDS), "received " + (count - all.getCount()) + " of " + count);
            assertFalse(wrong.get(), "100-byte bodies, delivery tags 1, 2, 3, ...");
            channel.close();
            assertEquals(count, peer.stats().deliveries(), "no delivery beyond the count");
        }
    }

    @Test
    void sourceSplitsLargeBodiesIntoFramesAndStreamsToEveryConsumerWithAutoAck() throws Exception {
        int count = 40;
        int size = 300_000;
        try (LoopbackPeer peer = LoopbackPeer.start(LoopbackPeer.Mode.SOURCE, size, count);
                Connection connection = connect(peer)) {
            CountDownLatch all = new CountDownLatch(2 * count);
            AtomicBoolean wrong = new AtomicBoolean();
            for (int c = 0; c < 2; c++) {
                Channel channel = connection.createChannel();
                channel.basicConsume(channel.queueDeclare().getQueue(), true, new DefaultConsumer(channel) {
                    @Override
                    public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                        if (body.length != size || MessageBody.publishNanos(body) != MessageBody.NO_STAMP) {
                            wrong.set(true);
                        }
                        all.countDown();
                    }
                });
            }
            assertTrue(
                    all.await(60, TimeUnit.SECONDS), "received " + (2 * count - all.getCount()) + " of " + 2 * count);
            assertFalse(wrong.get(), "300 kB zero bodies, without a publish time");
        }
    }

    @Test
    void batchBuffersAreNotPatchedWhileAWriteStillHoldsThemUnderNoAck() throws Exception {
        // noAck: nothing holds the peer back but the socket, so batch buffers are still being written when
        // the next batch is due; a tag patched into one of those would show as a skipped or repeated tag
        int count = 100_000;
        try (LoopbackPeer peer = LoopbackPeer.start(LoopbackPeer.Mode.SOURCE, 16, count);
                Connection connection = connect(peer)) {
            CountDownLatch all = new CountDownLatch(2 * count);
            AtomicBoolean wrong = new AtomicBoolean();
            for (int c = 0; c < 2; c++) {
                Channel channel = connection.createChannel();
                long[] expected = {1};
                channel.basicConsume(channel.queueDeclare().getQueue(), true, new DefaultConsumer(channel) {
                    @Override
                    public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
                        if (envelope.getDeliveryTag() != expected[0]++ || body.length != 16) {
                            wrong.set(true);
                        }
                        all.countDown();
                    }
                });
            }
            assertTrue(
                    all.await(60, TimeUnit.SECONDS), "received " + (2 * count - all.getCount()) + " of " + 2 * count);
            assertFalse(wrong.get(), "each channel's delivery tags run 1, 2, 3, ... without a gap or a repeat");
            assertEquals(2L * count, peer.stats().deliveries());
        }
    }

    @Test
    void heartbeatsKeepAnIdleConnectionOpenAndCloseIsAnswered() throws Exception {
        try (LoopbackPeer peer = LoopbackPeer.start(LoopbackPeer.Mode.SINK, 12, 0)) {
            ConnectionFactory factory = new ConnectionFactory();
            factory.setUri(peer.uri());
            factory.setAutomaticRecoveryEnabled(false);
            // the client gives up after two silent intervals: its ninth 250 ms read timeout in a row, past 2.25 s
            // without a frame. The peer heartbeats every 0.5 s from tune-ok, its sixth 3 s later at the soonest (a
            // fixed rate never runs early): by then a client that heard none would have closed.
            factory.setRequestedHeartbeat(1);
            Connection connection = factory.newConnection();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (peer.heartbeatsSent() < 6 && connection.isOpen() && System.nanoTime() - deadline < 0) {
                Thread.sleep(10);
            }
            assertTrue(connection.isOpen(), "the peer's heartbeats kept it open");
            assertTrue(peer.heartbeatsSent() >= 6, "heartbeats sent: " + peer.heartbeatsSent());
            Channel channel = connection.createChannel();
            channel.txSelect();
            channel.txCommit();
            connection.close(10_000);
            for (int i = 0; i < 100 && peer.connections() > 0; i++) {
                Thread.sleep(50);
            }
            assertEquals(0, peer.connections());
        }
    }
}
