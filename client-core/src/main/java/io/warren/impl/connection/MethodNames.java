package io.warren.impl.connection;

import io.warren.codec.method.MethodIds;
import io.warren.codec.method.MethodTable;

/** Method names for messages: {@code "queue.declare (50/10)"}. */
public final class MethodNames {

    private MethodNames() {}

    public static String describe(int key) {
        return MethodTable.describe(MethodIds.classId(key), MethodIds.methodId(key));
    }
}
