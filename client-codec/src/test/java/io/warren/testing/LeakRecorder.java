package io.warren.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * Records every leak Netty's detector reports in this JVM, so that a test framework hook can turn a
 * report into a failure instead of a log line that nobody reads.
 *
 * <p>The factory must be installed before the first {@code ByteBuf} class initialises its static
 * detector; {@link #install()} is called from the static initialisers of the JUnit extension and the
 * jqwik hook, which the test engines load before any test class is initialised.
 */
public final class LeakRecorder {

    private static final List<String> LEAKS = new ArrayList<>();
    private static volatile boolean installed;

    private LeakRecorder() {}

    public static synchronized void install() {
        if (installed) {
            return;
        }
        if (ResourceLeakDetector.getLevel() != ResourceLeakDetector.Level.PARANOID) {
            // The build sets -Dio.netty.leakDetection.level=paranoid; an IDE run may not.
            ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        }
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new RecordingFactory());
        installed = true;
    }

    /**
     * Runs the collector and makes every detector look at its reference queue, then returns and clears
     * the leaks reported since the last call.
     */
    public static List<String> collect() {
        for (int round = 0; round < 3; round++) {
            System.gc();
            System.runFinalization();
            try {
                // The reference handler thread enqueues cleared references after the collection.
                Thread.sleep(15);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            // At PARANOID every tracked allocation polls the detector's queue and reports what it finds.
            ByteBuf heap = Unpooled.buffer(1);
            heap.release();
            ByteBuf pooled = PooledByteBufAllocator.DEFAULT.directBuffer(1);
            pooled.release();
        }
        synchronized (LEAKS) {
            List<String> copy = new ArrayList<>(LEAKS);
            LEAKS.clear();
            return copy;
        }
    }

    /** Removes and returns the reports whose records mention {@code marker} (for the leak self-test). */
    public static List<String> take(String marker) {
        List<String> all = collect();
        List<String> matching = new ArrayList<>();
        List<String> others = new ArrayList<>();
        for (String leak : all) {
            (leak.contains(marker) ? matching : others).add(leak);
        }
        synchronized (LEAKS) {
            LEAKS.addAll(others);
        }
        return matching;
    }

    static void record(String report) {
        synchronized (LEAKS) {
            LEAKS.add(report);
        }
    }

    private static final class RecordingFactory extends ResourceLeakDetectorFactory {
        @Override
        public <T> ResourceLeakDetector<T> newResourceLeakDetector(
                Class<T> resource, int samplingInterval, long maxActive) {
            return new RecordingDetector<>(resource, samplingInterval);
        }
    }

    private static final class RecordingDetector<T> extends ResourceLeakDetector<T> {
        RecordingDetector(Class<?> resourceType, int samplingInterval) {
            super(resourceType, samplingInterval);
        }

        @Override
        protected boolean needReport() {
            return true;
        }

        @Override
        protected void reportTracedLeak(String resourceType, String records) {
            record(resourceType + ".release() was not called before it was garbage-collected." + records);
        }

        @Override
        protected void reportUntracedLeak(String resourceType) {
            record(resourceType + ".release() was not called before it was garbage-collected (no records).");
        }
    }
}
