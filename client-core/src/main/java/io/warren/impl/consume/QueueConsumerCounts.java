package io.warren.impl.consume;

/**
 * The consumers per queue, as topology recovery records them: an auto-delete queue goes with its last consumer,
 * and is then not declared again. Implemented by the recovery room's topology recorder.
 */
public interface QueueConsumerCounts {

    /** A consumer started on {@code queue}. */
    void consumerStarted(String queue);

    /** A consumer of {@code queue} ended. */
    void consumerEnded(String queue);
}
