package io.warren.codec.method;

import io.netty.buffer.ByteBuf;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * What the spec says about one method: ids, names, whether it is synchronous or carries content, and
 * its arguments in wire order. One instance per method, held by {@link MethodTable}.
 */
public final class MethodInfo {

    private final int index;
    private final int classId;
    private final int methodId;
    private final String className;
    private final String methodName;
    private final String name;
    private final boolean synchronous;
    private final boolean content;
    private final List<String> argumentNames;
    private final ArgumentType[] argumentTypes;

    MethodInfo(
            int index,
            int classId,
            int methodId,
            String className,
            String methodName,
            boolean synchronous,
            boolean content,
            String[] argumentNames,
            ArgumentType[] argumentTypes) {
        this.index = index;
        this.classId = classId;
        this.methodId = methodId;
        this.className = className;
        this.methodName = methodName;
        this.name = className + "." + methodName;
        this.synchronous = synchronous;
        this.content = content;
        this.argumentNames = Collections.unmodifiableList(Arrays.asList(argumentNames.clone()));
        this.argumentTypes = argumentTypes.clone();
    }

    /** Checks the arguments of a payload whose ids were already matched; see {@link MethodTable#validate}. */
    void validateArguments(ByteBuf buf, int offset, int length) {
        MethodTable.validateArguments(index, buf, offset, length);
    }

    /** A dense index, 0 to {@code MethodTable.size() - 1}, for arrays of per-method handlers. */
    public int index() {
        return index;
    }

    /** The class id. */
    public int classId() {
        return classId;
    }

    /** The method id within its class. */
    public int methodId() {
        return methodId;
    }

    /** Class and method id in one int, as in {@link MethodIds}. */
    public int key() {
        return MethodIds.key(classId, methodId);
    }

    /** The class's spec name ({@code "queue"}). */
    public String className() {
        return className;
    }

    /** The method's spec name ({@code "declare-ok"}). */
    public String methodName() {
        return methodName;
    }

    /** {@code "queue.declare-ok"}. */
    public String name() {
        return name;
    }

    /** Whether the spec marks the method synchronous (it expects a reply). */
    public boolean isSynchronous() {
        return synchronous;
    }

    /** Whether a content header and body follow the method. */
    public boolean hasContent() {
        return content;
    }

    /** The arguments' spec names in wire order. */
    public List<String> argumentNames() {
        return argumentNames;
    }

    /** The number of arguments. */
    public int argumentCount() {
        return argumentTypes.length;
    }

    /** The wire type of argument {@code i}. */
    public ArgumentType argumentType(int i) {
        return argumentTypes[i];
    }

    /** A new view for this method. */
    public MethodView newView() {
        return MethodTable.newView(index);
    }

    /** A new encoder for this method, spec defaults preset. */
    public MethodEncoder newEncoder() {
        return MethodTable.newEncoder(index);
    }

    @Override
    public String toString() {
        return name + " (" + classId + "/" + methodId + ")";
    }
}
