package io.warren.it.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.warren.AmqpClient;
import io.warren.codec.Frame;
import java.io.IOException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReader;
import java.lang.module.ModuleReference;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Member;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The public API of client-core and client-codec, compared with the baselines committed in
 * {@code src/test/resources/api}: a change to the API (a type, a supertype, a public or protected field,
 * constructor or method, a constant's value, an export) fails here until it is accepted on purpose. Warren has no
 * released artifact for japicmp or revapi to compare with, so the baseline is a listing made by reflection over the
 * compiled classes: the packages each module descriptor exports (unqualified), their public types and the public
 * and protected members a user can reach, with full generic signatures, one per line, sorted.
 *
 * <p>To accept a change, run this test with {@code -Dwarren.api.accept=true} ({@link #ACCEPT_COMMAND}): it
 * rewrites the baseline files, which are then committed with the change (and reviewed as its API diff). No broker
 * needed.
 *
 * <p>That no public type of client-core shares its simple name with one of client-codec is client-core's
 * {@code ArchitectureTest}'s to check.
 */
class ApiBaselineTest {

    static final String ACCEPT = "warren.api.accept";
    /** From the repository's root: rewrites both baselines, without a broker or the provisioning of one. */
    static final String ACCEPT_COMMAND = "WARREN_PROVISION=0 ./mvnw -B verify -pl client-codec,client-core,client-it"
            + " -am -DskipITs -Dtest=ApiBaselineTest -Dsurefire.failIfNoSpecifiedTests=false -D" + ACCEPT + "=true";

    private static final Path BASELINES = Path.of("src/test/resources/api");

    @Test
    void clientCoreMatchesItsBaseline() throws Exception {
        check(AmqpClient.class, "client-core.api");
    }

    @Test
    void clientCodecMatchesItsBaseline() throws Exception {
        check(Frame.class, "client-codec.api");
    }

    // ---- the listing -------------------------------------------------------------------------------------------

    private static void check(Class<?> anchor, String baselineName) throws Exception {
        ModuleReference module = module(anchor);
        List<String> actual = listing(module);
        assertTrue(actual.size() > 50, "only " + actual.size() + " API lines found in " + module.location());
        Path baseline = BASELINES.resolve(baselineName);
        String header = "# The public API of " + module.descriptor().name() + ", checked by "
                + ApiBaselineTest.class.getSimpleName() + ". Do not edit: rewrite it with -D" + ACCEPT + "=true";
        if (Boolean.getBoolean(ACCEPT)) {
            Files.createDirectories(baseline.getParent());
            List<String> lines = new ArrayList<>();
            lines.add(header);
            lines.addAll(actual);
            Files.write(baseline, lines, StandardCharsets.UTF_8);
            return;
        }
        if (!Files.exists(baseline)) {
            fail("no API baseline " + baseline.toAbsolutePath() + ": create it with " + ACCEPT_COMMAND);
        }
        List<String> expected = Files.readAllLines(baseline, StandardCharsets.UTF_8).stream()
                .filter(l -> !l.startsWith("#") && !l.isBlank())
                .collect(Collectors.toList());
        if (!expected.equals(actual)) {
            Set<String> removed = new LinkedHashSet<>(expected);
            removed.removeAll(actual);
            Set<String> added = new LinkedHashSet<>(actual);
            added.removeAll(expected);
            StringBuilder message = new StringBuilder("The public API of ")
                    .append(module.descriptor().name())
                    .append(" differs from its baseline ")
                    .append(baseline)
                    .append('\n');
            removed.forEach(l -> message.append("- ").append(l.strip()).append('\n'));
            added.forEach(l -> message.append("+ ").append(l.strip()).append('\n'));
            if (removed.isEmpty() && added.isEmpty()) {
                message.append("(the same lines in another order)\n");
            }
            message.append("If the change is intended, accept it from the repository's root with\n    ")
                    .append(ACCEPT_COMMAND)
                    .append("\nand commit the rewritten baseline with the change.");
            fail(message.toString());
        }
    }

    /** The module the class was loaded from: a jar, or the exploded classes directory of the reactor build. */
    private static ModuleReference module(Class<?> anchor) throws URISyntaxException {
        Path location = Path.of(
                anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
        Set<ModuleReference> found = ModuleFinder.of(location).findAll();
        assertEquals(1, found.size(), "one module at " + location);
        return found.iterator().next();
    }

    private static Set<String> exportedPackages(ModuleDescriptor descriptor) {
        return descriptor.exports().stream()
                .filter(e -> !e.isQualified())
                .map(ModuleDescriptor.Exports::source)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    /** The module's header lines, then each API type's line followed by its members' lines. */
    private static List<String> listing(ModuleReference module) throws IOException {
        ModuleDescriptor descriptor = module.descriptor();
        List<String> lines = new ArrayList<>();
        lines.add("module " + descriptor.name());
        for (ModuleDescriptor.Exports e : new TreeSet<>(descriptor.exports())) {
            lines.add("exports " + e);
        }
        for (Class<?> type : apiTypes(module)) {
            lines.add(typeLine(type));
            for (String member : members(type)) {
                lines.add("  " + member);
            }
        }
        return lines;
    }

    /** The public types, and the public or protected member types of those, in the exported packages, by name. */
    private static List<Class<?>> apiTypes(ModuleReference module) throws IOException {
        Set<String> packages = exportedPackages(module.descriptor());
        List<String> names;
        try (ModuleReader reader = module.open();
                Stream<String> resources = reader.list()) {
            names = resources
                    .filter(r -> r.endsWith(".class") && !r.endsWith("module-info.class"))
                    .map(r -> r.substring(0, r.length() - ".class".length()).replace('/', '.'))
                    .filter(n -> packages.contains(n.substring(0, n.lastIndexOf('.'))))
                    .sorted()
                    .collect(Collectors.toList());
        }
        List<Class<?>> types = new ArrayList<>();
        for (String name : names) {
            Class<?> type;
            try {
                type = Class.forName(name, false, ApiBaselineTest.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new AssertionError("cannot load " + name, e);
            }
            if (isVisible(type)) {
                types.add(type);
            }
        }
        return types;
    }

    private static String typeLine(Class<?> type) {
        StringBuilder b = new StringBuilder();
        int modifiers = type.getModifiers() & Modifier.classModifiers();
        if (type.isInterface()) {
            modifiers &= ~Modifier.ABSTRACT; // every interface is
        }
        String mods = Modifier.toString(modifiers);
        if (!mods.isEmpty()) {
            b.append(mods).append(' ');
        }
        if (type.isSealed()) {
            b.append("sealed ");
        }
        b.append(
                type.isAnnotation()
                        ? "@interface"
                        : type.isInterface()
                                ? "interface"
                                : type.isEnum() ? "enum" : type.isRecord() ? "record" : "class");
        b.append(' ').append(type.getName()).append(typeParameters(type.getTypeParameters()));
        Type superclass = type.getGenericSuperclass();
        if (superclass != null) {
            b.append(" extends ").append(superclass.getTypeName());
        }
        Type[] interfaces = type.getGenericInterfaces();
        if (interfaces.length > 0) {
            b.append(type.isInterface() ? " extends " : " implements ")
                    .append(Arrays.stream(interfaces).map(Type::getTypeName).collect(Collectors.joining(", ")));
        }
        if (type.isSealed()) {
            b.append(" permits ")
                    .append(Arrays.stream(type.getPermittedSubclasses())
                            .map(Class::getName)
                            .collect(Collectors.joining(", ")));
        }
        return b.toString();
    }

    private static String typeParameters(TypeVariable<?>[] variables) {
        if (variables.length == 0) {
            return "";
        }
        return Arrays.stream(variables)
                .map(v -> {
                    List<String> bounds = Arrays.stream(v.getBounds())
                            .map(Type::getTypeName)
                            .filter(n -> !n.equals("java.lang.Object"))
                            .collect(Collectors.toList());
                    return bounds.isEmpty() ? v.getName() : v.getName() + " extends " + String.join(" & ", bounds);
                })
                .collect(Collectors.joining(",", "<", ">"));
    }

    /**
     * The type's public and protected fields (with the value of a primitive or String constant), constructors and
     * methods, sorted; with those a user reaches through a superclass that is not API itself.
     */
    private static Set<String> members(Class<?> type) {
        Set<String> members = new TreeSet<>();
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            if (c != type && isVisible(c) || c == Object.class) {
                break; // an API superclass lists its own members; Object's are everyone's
            }
            for (Field f : c.getDeclaredFields()) {
                if (!f.isSynthetic() && isVisible(f, type)) {
                    members.add(field(f));
                }
            }
            if (c == type) {
                for (Constructor<?> k : c.getDeclaredConstructors()) {
                    if (!k.isSynthetic() && isVisible(k, type)) {
                        members.add(k.toGenericString());
                    }
                }
            }
            for (Method m : c.getDeclaredMethods()) {
                if (!m.isSynthetic() && !m.isBridge() && isVisible(m, type)) {
                    members.add(m.toGenericString());
                }
            }
        }
        return members;
    }

    private static String field(Field f) {
        String line = f.toGenericString();
        int m = f.getModifiers();
        if (Modifier.isStatic(m) && Modifier.isFinal(m) && (f.getType().isPrimitive() || f.getType() == String.class)) {
            try {
                f.setAccessible(true);
                Object value = f.get(null);
                line += " = " + (value instanceof String s ? '"' + s + '"' : value);
            } catch (ReflectiveOperationException | RuntimeException e) {
                throw new AssertionError("cannot read " + f, e);
            }
        }
        return line;
    }

    /** Public, or a public/protected member type of a visible type (what a user can name). */
    private static boolean isVisible(Class<?> type) {
        if (type.isSynthetic() || type.isAnonymousClass() || type.isLocalClass()) {
            return false;
        }
        int m = type.getModifiers();
        Class<?> outer = type.getDeclaringClass();
        if (outer == null) {
            return Modifier.isPublic(m);
        }
        return (Modifier.isPublic(m) || Modifier.isProtected(m) && !Modifier.isFinal(outer.getModifiers()))
                && isVisible(outer);
    }

    /** Public, or protected in a type a user can extend. */
    private static boolean isVisible(Member member, Class<?> seenThrough) {
        int m = member.getModifiers();
        return Modifier.isPublic(m) || Modifier.isProtected(m) && !Modifier.isFinal(seenThrough.getModifiers());
    }
}
