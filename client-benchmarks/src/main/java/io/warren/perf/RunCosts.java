package io.warren.perf;

import com.sun.management.OperatingSystemMXBean;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Map;

/**
 * What a run cost the machine, read at its start and at its end: this process's CPU time (the client's threads, the
 * JIT's and the GC's) and its threads' context switches (but those of threads named in {@code excluded}, a tool's
 * own samplers), and the CPU time of the RabbitMQ nodes serving the run when they run on this machine
 * ({@link BrokerCpu}). With the broker on the same cores, this tells which side a message's cost is on. Linux only
 * for the switches and the broker; those figures read "-" elsewhere.
 */
public final class RunCosts {

    private final long cpuNanos;
    private final Map<String, long[]> switches;
    private final BrokerCpu broker;
    private final long brokerNanos;

    private RunCosts(long cpuNanos, Map<String, long[]> switches, BrokerCpu broker, long brokerNanos) {
        this.cpuNanos = cpuNanos;
        this.switches = switches;
        this.broker = broker;
        this.brokerNanos = brokerNanos;
    }

    /** A first reading: this process, and the nodes of the broker at {@code brokerUri} when they are on this machine. */
    public static RunCosts start(String brokerUri) {
        return start(BrokerCpu.find(BrokerCpu.localPorts(List.of(brokerUri))));
    }

    /** A first reading of this process and of {@code broker}'s nodes (null: none). */
    static RunCosts start(BrokerCpu broker) {
        return read(broker);
    }

    /** A later reading of the same process and nodes. */
    public RunCosts now() {
        return read(broker);
    }

    private static RunCosts read(BrokerCpu broker) {
        long cpu = ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os
                ? os.getProcessCpuTime()
                : -1;
        return new RunCosts(cpu, ContextSwitches.perThread(), broker, broker == null ? -1 : broker.read());
    }

    /**
     * The costs from {@code start} to this reading per message, as "process CPU 123.4 us, 2.20 context switches,
     * broker CPU 456.7 us per message"; the switches leave out threads whose (native, 15-character) name is
     * {@code excluded}.
     */
    public String perMessage(RunCosts start, long messages, String excluded) {
        Long voluntary = ContextSwitches.since(start.switches, switches, excluded::equals, 0);
        Long involuntary = ContextSwitches.since(start.switches, switches, excluded::equals, 1);
        Double cpu = cpuNanos < 0 || start.cpuNanos < 0 ? null : (cpuNanos - start.cpuNanos) / 1e3 / messages;
        Double cs = voluntary == null ? null : (voluntary + involuntary) / (double) messages;
        Double broker = start.brokerNanos < 0 || brokerNanos < start.brokerNanos
                ? null
                : (brokerNanos - start.brokerNanos) / 1e3 / messages;
        return "process CPU " + Format.number(cpu, 1) + " us, " + Format.number(cs, 2)
                + " context switches, broker CPU " + Format.number(broker, 1) + " us per message";
    }
}
