package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The fields of a /proc/<pid>/stat line, counted from the last parenthesis. */
class ProcStatTest {

    // pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
    // priority nice num_threads itrealvalue starttime vsize ...
    private static String stat(String pid, String comm, long utime, long stime, long startTime) {
        return pid + " (" + comm + ") S 1 10 10 0 -1 4194560 9000 0 12 0 " + utime + " " + stime + " 7 3 20 0 40 0 "
                + startTime + " 123456 789\n";
    }

    @Test
    void userAndSystemTicksAndTheStartTimeAreCountedFromTheLastParenthesis() {
        assertEquals(130 + 22, ProcStat.cpuTicks(stat("42", "beam.smp", 130, 22, 9)));
        assertEquals(9, ProcStat.startTime(stat("42", "beam.smp", 130, 22, 9)));
        assertEquals(5 + 6, ProcStat.cpuTicks(stat("42", "a) b (c", 5, 6, 9)), "a command name with spaces and ')'");
        assertEquals(-1, ProcStat.cpuTicks("42 (beam.smp) S 1 10"));
        assertEquals(-1, ProcStat.cpuTicks("no parenthesis"));
        assertEquals(22, ProcStat.systemTicks(stat("42", "beam.smp", 130, 22, 9)));
        assertEquals(-1, ProcStat.startTime("42 (beam.smp) S 1 10 10 0 -1 4194560 9000 0 12 0 130 22"));
    }
}
