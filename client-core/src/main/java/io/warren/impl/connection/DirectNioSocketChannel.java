package io.warren.impl.connection;

import io.netty.channel.ChannelId;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Netty's NIO socket channel, with its JDK socket open to {@link OutboundPath}: a publishing thread that holds the
 * path's writer token writes a message to it directly instead of handing it to the event loop (see the path's class
 * comment for why that is safe), and with a cheap {@link ChannelId}. Nothing else is changed.
 */
public final class DirectNioSocketChannel extends NioSocketChannel {

    /** The JDK channel under this one. */
    SocketChannel socket() {
        return javaChannel();
    }

    /**
     * A {@link SequenceId} instead of Netty's {@code DefaultChannelId}, whose first use reads the machine's MAC
     * address (every network interface listed) and the process id: about a tenth of the first connect's time in a
     * fresh JVM, for an id that only names the channel in logs. Called by Netty's constructor, so it reads
     * static state only.
     */
    @Override
    protected ChannelId newId() {
        return SequenceId.next();
    }

    /**
     * A channel id unique within the JVM: a counter, behind a random prefix drawn once per JVM so that the long
     * text tells two processes' logs apart. Short text: the counter in 8 hex digits; long text: prefix and
     * counter.
     */
    static final class SequenceId implements ChannelId {

        private static final long serialVersionUID = 1L;
        private static final AtomicLong NEXT = new AtomicLong();
        // no String.format: its first use loads the regex and formatter classes
        private static final String PREFIX = hex8(ThreadLocalRandom.current().nextInt() & 0xFFFFFFFFL);

        private final long sequence;

        private SequenceId(long sequence) {
            this.sequence = sequence;
        }

        static SequenceId next() {
            return new SequenceId(NEXT.incrementAndGet());
        }

        @Override
        public String asShortText() {
            return hex8(sequence);
        }

        /** {@code value} in hex, at least 8 digits. */
        private static String hex8(long value) {
            String hex = Long.toHexString(value);
            return hex.length() >= 8 ? hex : "00000000".substring(hex.length()).concat(hex);
        }

        @Override
        public String asLongText() {
            return PREFIX.concat("-").concat(asShortText());
        }

        @Override
        public int compareTo(ChannelId other) {
            if (other instanceof SequenceId s) {
                return Long.compare(sequence, s.sequence);
            }
            return asLongText().compareTo(other.asLongText());
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof SequenceId s && s.sequence == sequence;
        }

        @Override
        public int hashCode() {
            // spread the counter: Netty hashes channels by their id (channel groups, maps keyed by channel)
            return Long.hashCode(sequence * 0x9E3779B97F4A7C15L);
        }

        @Override
        public String toString() {
            return asShortText();
        }
    }
}
