package io.warren.impl.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.warren.ExchangeSpec;
import io.warren.QueueSpec;
import io.warren.impl.recovery.TopologyRecorder.Binding;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TopologyRecorderTest {

    private final TopologyRecorder r = new TopologyRecorder();

    @Test
    void recordsInOrderAndSnapshotsArguments() {
        Map<String, Object> args = new HashMap<>(Map.of("x-max-length", 10));
        r.exchangeDeclared(ExchangeSpec.of("x1", "topic").durable(true));
        r.queueDeclared(QueueSpec.named("q1").arguments(args), "q1");
        args.put("x-max-length", 99); // the application's map changes after the declare
        r.bound(false, "q1", "x1", "a.#", null);
        assertEquals(
                List.of("x1"),
                r.exchanges().stream().map(TopologyRecorder.Exchange::name).toList());
        assertEquals(10, r.queues().get(0).arguments().get("x-max-length"));
        assertTrue(r.exchanges().get(0).durable());
        assertEquals(List.of(new Binding(false, "q1", "x1", "a.#", Map.of())), r.bindings());
        assertEquals("q1", r.queues().get(0).toDeclare().queue());
    }

    /**
     * Above an auto-delete queue: the auto-delete exchanges its bindings come from and those bound into them, nearest
     * first, with the bindings into them; a durable exchange ends the walk, and a loop of exchange bindings is walked
     * once.
     */
    @Test
    void upstreamOfAQueueIsItsAutoDeleteExchangeChain() {
        r.exchangeDeclared(ExchangeSpec.of("top", "fanout").durable(true));
        r.exchangeDeclared(ExchangeSpec.of("mid", "fanout").autoDelete(true));
        r.exchangeDeclared(ExchangeSpec.of("low", "fanout").autoDelete(true));
        r.queueDeclared(QueueSpec.named("q").autoDelete(true), "q");
        r.bound(false, "q", "low", "", Map.of());
        r.bound(true, "low", "mid", "", Map.of());
        r.bound(true, "mid", "top", "", Map.of());
        r.bound(true, "mid", "low", "loop", Map.of()); // low -> mid -> low
        TopologyRecorder.Upstream up = r.upstreamOf("q");
        assertEquals(
                List.of("low", "mid"),
                up.exchanges().stream().map(TopologyRecorder.Exchange::name).toList());
        assertEquals(
                List.of("mid -> low", "top -> mid", "low -> mid"),
                up.bindings().stream()
                        .map(b -> b.source() + " -> " + b.destination())
                        .toList());
        assertEquals(1, r.bindingsTo("q").size());
        assertEquals(List.of(), r.upstreamOf("other").exchanges());
    }

    @Test
    void passiveAndPredeclaredAreNotRecorded() {
        r.exchangeDeclared(ExchangeSpec.passive("x"));
        r.exchangeDeclared(ExchangeSpec.of("amq.direct", "direct"));
        r.exchangeDeclared(ExchangeSpec.of("", "direct"));
        r.queueDeclared(QueueSpec.passive("q"), "q");
        assertTrue(r.isEmpty());
    }

    @Test
    void redeclaringReplacesAndBindingsAreASet() {
        r.queueDeclared(QueueSpec.named("q").durable(false), "q");
        r.queueDeclared(QueueSpec.named("q").durable(true), "q");
        r.bound(false, "q", "amq.topic", "k", Map.of());
        r.bound(false, "q", "amq.topic", "k", Map.of());
        assertEquals(1, r.queues().size());
        assertTrue(r.queues().get(0).durable());
        assertEquals(1, r.bindings().size());
    }

    @Test
    void deletingAQueueForgetsItsBindings() {
        r.queueDeclared(QueueSpec.named("q"), "q");
        r.queueDeclared(QueueSpec.named("other"), "other");
        r.bound(false, "q", "amq.topic", "k", Map.of());
        r.bound(false, "other", "amq.topic", "k", Map.of());
        r.queueDeleted("q");
        assertEquals(
                List.of("other"),
                r.queues().stream().map(TopologyRecorder.Queue::name).toList());
        assertEquals(1, r.bindings().size());
        assertEquals("other", r.bindings().get(0).destination());
    }

    @Test
    void deletingAnExchangeForgetsBindingsFromAndToIt() {
        r.exchangeDeclared(ExchangeSpec.of("src", "fanout"));
        r.exchangeDeclared(ExchangeSpec.of("dst", "fanout"));
        r.queueDeclared(QueueSpec.named("q"), "q");
        r.bound(true, "dst", "src", "", Map.of());
        r.bound(false, "q", "dst", "", Map.of());
        r.bound(false, "q", "amq.fanout", "", Map.of());
        r.exchangeDeleted("dst");
        assertEquals(List.of(new Binding(false, "q", "amq.fanout", "", Map.of())), r.bindings());
    }

    @Test
    void unbindForgetsOneBindingAndTheLastOneTakesAnAutoDeleteExchange() {
        r.exchangeDeclared(ExchangeSpec.of("ad", "direct").autoDelete(true));
        r.queueDeclared(QueueSpec.named("q"), "q");
        r.bound(false, "q", "ad", "a", Map.of());
        r.bound(false, "q", "ad", "b", Map.of());
        r.unbound(false, "q", "ad", "a", Map.of());
        assertEquals(1, r.exchanges().size());
        r.unbound(false, "q", "ad", "b", Map.of());
        assertTrue(r.exchanges().isEmpty(), "the broker deleted the auto-delete exchange with its last binding");
    }

    @Test
    void anAutoDeleteQueueGoesWithItsLastConsumer() {
        r.queueDeclared(QueueSpec.named("ad").autoDelete(true), "ad");
        r.queueDeclared(QueueSpec.named("kept"), "kept");
        r.consumerStarted("ad");
        r.consumerStarted("ad");
        r.consumerStarted("kept");
        r.consumerEnded("ad");
        assertEquals(2, r.queues().size());
        r.consumerEnded("ad");
        r.consumerEnded("kept");
        assertEquals(
                List.of("kept"),
                r.queues().stream().map(TopologyRecorder.Queue::name).toList());
    }

    @Test
    void aServerNamedQueueIsRenamedWithItsBindingsAndConsumers() {
        r.queueDeclared(QueueSpec.serverNamed(), "amq.gen-1");
        r.bound(false, "amq.gen-1", "amq.topic", "k", Map.of());
        r.consumerStarted("amq.gen-1");
        TopologyRecorder.Queue q = r.queues().get(0);
        assertTrue(q.serverNamed());
        assertEquals("", q.toDeclare().queue(), "declared again with an empty name");
        assertTrue(q.toDeclare().exclusive());
        r.renameQueue("amq.gen-1", "amq.gen-2");
        assertEquals("amq.gen-2", r.queues().get(0).name());
        assertEquals("amq.gen-2", r.bindings().get(0).destination());
        assertEquals(1, r.consumers("amq.gen-2"));
        assertEquals("amq.gen-2", r.currentName("amq.gen-1"));
        r.renameQueue("amq.gen-2", "amq.gen-3");
        assertEquals("amq.gen-3", r.currentName("amq.gen-1"), "names older still follow");
        assertEquals("plain", r.currentName("plain"));
        assertFalse(r.isEmpty());
    }

    @Test
    void aConsumerEndingUnderItsQueuesOldNameCountsAgainstTheNewOne() {
        // the consumer ends before recovery points it at the new name (its cancel held while the connection was down)
        r.queueDeclared(QueueSpec.serverNamed(), "amq.gen-1");
        r.bound(false, "amq.gen-1", "amq.topic", "k", Map.of());
        r.consumerStarted("amq.gen-1");
        r.renameQueue("amq.gen-1", "amq.gen-2");
        r.consumerEnded("amq.gen-1");
        assertEquals(0, r.consumers("amq.gen-2"));
        assertTrue(r.queues().isEmpty(), "the broker deleted the auto-delete queue with its last consumer");
        assertTrue(r.bindings().isEmpty());
    }

    @Test
    void aServerNamedQueueDeclaredAgainByItsNameStaysServerNamed() {
        r.queueDeclared(QueueSpec.serverNamed(), "amq.gen-1");
        r.queueDeclared(QueueSpec.named("amq.gen-1").exclusive(true).autoDelete(true), "amq.gen-1");
        assertTrue(r.queues().get(0).serverNamed(), "declaring amq.gen-1 by name on a new connection is refused");
        assertEquals("", r.queues().get(0).toDeclare().queue());
    }

    @Test
    void deletingAnExchangeTakesAnAutoDeleteSourceWhoseLastBindingItWas() {
        r.exchangeDeclared(ExchangeSpec.of("ad", "fanout").autoDelete(true));
        r.exchangeDeclared(ExchangeSpec.of("dst", "fanout"));
        r.bound(true, "dst", "ad", "", Map.of());
        r.exchangeDeleted("dst");
        assertTrue(r.exchanges().isEmpty(), "the broker deleted the auto-delete exchange with its last binding");
    }

    @Test
    void anAutoDeleteExchangeGoneWithItsLastBindingTakesTheBindingsToIt() {
        r.exchangeDeclared(ExchangeSpec.of("x", "fanout"));
        r.exchangeDeclared(ExchangeSpec.of("ad", "fanout").autoDelete(true));
        r.queueDeclared(QueueSpec.named("q"), "q");
        r.bound(true, "ad", "x", "", Map.of());
        r.bound(false, "q", "ad", "", Map.of());
        r.queueDeleted("q");
        assertEquals(
                List.of("x"),
                r.exchanges().stream().map(TopologyRecorder.Exchange::name).toList());
        assertTrue(r.bindings().isEmpty(), "x -> ad went with ad: " + r.bindings());
    }
}
