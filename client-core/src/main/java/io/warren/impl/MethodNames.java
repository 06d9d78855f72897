package io.warren.impl;

import io.warren.codec.method.MethodIds;
import io.warren.codec.method.MethodTable;

/** Method names for messages: {@code "queue.declare (50/10)"}. */
final class MethodNames {

    private MethodNames() {
    }

    static String describe(int key) {
        return MethodTable.describe(MethodIds.classId(key), MethodIds.methodId(key));
    }
}
