package io.warren.bench.publish;

/**
 * The end of a publish benchmark's command line, after its counts: an optional RUNS, then an optional broker URI.
 *
 * @param runs measured runs, at least 1 (1 when not given)
 * @param uri the broker's URI (the local broker as guest when not given)
 */
record RunsAndUri(int runs, String uri) {

    static final String LOCAL_BROKER = "amqp://guest:guest@127.0.0.1:5672";

    /**
     * Reads {@code args} from index {@code from}: nothing, RUNS, a URI, or RUNS and a URI.
     *
     * @throws IllegalArgumentException naming {@code usage}, for RUNS that is not a whole number of at least 1 or
     *     more arguments than that; never with an argument's text
     */
    static RunsAndUri parse(String[] args, int from, String usage) {
        int next = from;
        int runs = 1;
        // a URI (amqp://, amqps://, in any case) is never a count
        if (args.length > next && !args[next].contains("://")) {
            runs = positive(args[next++], "RUNS", usage);
        }
        if (args.length > next + 1) {
            throw new IllegalArgumentException(usage);
        }
        return new RunsAndUri(runs, args.length > next ? args[next] : LOCAL_BROKER);
    }

    /**
     * {@code value} as a count of at least 1.
     *
     * @throws IllegalArgumentException naming {@code name} and {@code usage}, never {@code value}
     */
    static int positive(String value, String name, String usage) {
        int n;
        try {
            n = Integer.parseInt(value);
        } catch (NumberFormatException e) {
            // the value is not echoed: a mistyped URI in its place may hold a password
            throw new IllegalArgumentException(name + " must be a whole number; " + usage);
        }
        if (n < 1) {
            throw new IllegalArgumentException(name + " must be at least 1, was " + n + "; " + usage);
        }
        return n;
    }
}
