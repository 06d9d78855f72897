package io.warren.testing;

import java.util.List;
import net.jqwik.api.lifecycle.AfterContainerHook;
import net.jqwik.api.lifecycle.ContainerLifecycleContext;
import net.jqwik.api.lifecycle.PropagationMode;

/**
 * The jqwik counterpart of {@link LeakFailExtension}: jqwik runs on its own engine and does not see
 * Jupiter extensions. Registered globally through service loading; fails the property container in
 * which Netty reported a leak.
 */
public final class JqwikLeakHook implements AfterContainerHook {

    static {
        LeakRecorder.install();
    }

    @Override
    public PropagationMode propagateTo() {
        return PropagationMode.ALL_DESCENDANTS;
    }

    @Override
    public boolean appliesTo(java.util.Optional<java.lang.reflect.AnnotatedElement> element) {
        // Only classes: a check per property method would run the collector once per property.
        return element.map(e -> e instanceof Class).orElse(false);
    }

    @Override
    public void afterContainer(ContainerLifecycleContext context) {
        List<String> leaks = LeakRecorder.collect();
        if (!leaks.isEmpty()) {
            throw new AssertionError("LEAK: Netty reported " + leaks.size() + " buffer leak(s) in " + context.label()
                    + ":\n" + String.join("\n\n", leaks));
        }
    }
}
