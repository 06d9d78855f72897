package io.warren.codec.base;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.warren.codec.method.MethodInfo;
import io.warren.codec.method.MethodTable;
import org.junit.jupiter.api.Test;

/** The names in exception messages are MethodTable's, though this package cannot ask it. */
class MethodNamesTest {

    @Test
    void everyMethodIsDescribedAsMethodTableDescribesIt() {
        for (MethodInfo info : MethodTable.all()) {
            assertEquals(
                    MethodTable.describe(info.classId(), info.methodId()),
                    MethodNames.describe(info.classId(), info.methodId()));
        }
    }

    @Test
    void anUnknownMethodIsDescribedAsMethodTableDescribesIt() {
        assertEquals(MethodTable.describe(50, 99), MethodNames.describe(50, 99));
        assertEquals(MethodTable.describe(999, 10), MethodNames.describe(999, 10));
    }
}
