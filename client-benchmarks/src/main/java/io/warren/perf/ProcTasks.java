package io.warren.perf;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** This process's threads as Linux lists them in {@code /proc/self/task}: one reading of each, for the readers here. */
final class ProcTasks {

    private static final Path TASKS = Path.of("/proc/self/task");

    /** Reads one thread's directory into {@code into} (or leaves the thread out). */
    @FunctionalInterface
    interface Reader<T> {
        void read(Path task, Map<String, T> into) throws IOException;
    }

    private ProcTasks() {}

    /**
     * What {@code reader} makes of every thread alive now; null without {@code /proc}. A thread that ends while it is
     * read (its files gone, or a line cut) is left out of this reading.
     */
    static <T> Map<String, T> read(Reader<T> reader) {
        if (!Files.isDirectory(TASKS)) {
            return null;
        }
        Map<String, T> result = new HashMap<>();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path task : tasks) {
                try {
                    reader.read(task, result);
                } catch (IOException | RuntimeException threadEnded) {
                    // not in this reading
                }
            }
        } catch (IOException e) {
            return null;
        }
        return result;
    }
}
