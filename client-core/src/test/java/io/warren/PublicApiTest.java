package io.warren;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Member;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The public API is what a user can see: every public or protected member of every public type outside
 * {@code io.warren.impl}. Nothing there may name an {@code io.warren.impl} type (as a parameter, return type,
 * exception, field, supertype, bound or type argument), and {@code module-info} exports exactly the packages
 * that hold public API. Both are checked by reflection over the compiled classes, so a new public method that
 * leaks an internal type, or a new public package left unexported, fails here.
 */
class PublicApiTest {

    private static final String IMPL = "io.warren.impl";

    private static Path classesRoot;
    private static List<Class<?>> apiTypes;

    @BeforeAll
    static void scan() throws IOException, URISyntaxException {
        classesRoot = Paths.get(AmqpClient.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
        List<Class<?>> types = new ArrayList<>();
        try (Stream<Path> files = Files.walk(classesRoot)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".class")).collect(Collectors.toList())) {
                String relative = classesRoot.relativize(file).toString().replace(java.io.File.separatorChar, '/');
                if (relative.equals("module-info.class")) {
                    continue;
                }
                String name = relative.substring(0, relative.length() - ".class".length())
                        .replace('/', '.');
                if (isImpl(name)) {
                    continue;
                }
                Class<?> type = load(name);
                if (type != null && isVisible(type)) {
                    types.add(type);
                }
            }
        }
        apiTypes = types;
    }

    @Test
    void theScanSeesTheApi() {
        Set<String> names = apiTypes.stream().map(Class::getName).collect(Collectors.toSet());
        assertTrue(names.contains(AmqpClient.class.getName()), "scan of " + classesRoot + " found " + names);
        assertTrue(names.contains(Channel.class.getName()));
        assertTrue(apiTypes.size() > 20, "only " + apiTypes.size() + " public types found under " + classesRoot);
    }

    @Test
    void noPublicSignatureNamesAnImplType() {
        List<String> leaks = new ArrayList<>();
        for (Class<?> type : apiTypes) {
            String where = type.getName();
            check(type.getGenericSuperclass(), where + " extends", leaks);
            for (Type t : type.getGenericInterfaces()) {
                check(t, where + " implements", leaks);
            }
            for (TypeVariable<?> v : type.getTypeParameters()) {
                check(v, where + " type parameter " + v.getName(), leaks);
            }
            if (type.isRecord()) {
                for (RecordComponent c : type.getRecordComponents()) {
                    check(c.getGenericType(), where + " record component " + c.getName(), leaks);
                }
            }
            for (Field f : type.getDeclaredFields()) {
                if (isVisible(f)) {
                    check(f.getGenericType(), where + "." + f.getName(), leaks);
                }
            }
            for (Constructor<?> c : type.getDeclaredConstructors()) {
                if (isVisible(c)) {
                    checkExecutable(c, where + ".<init>", leaks);
                }
            }
            for (Method m : type.getDeclaredMethods()) {
                if (isVisible(m) && !m.isSynthetic() && !m.isBridge()) {
                    check(m.getGenericReturnType(), where + "." + m.getName() + " returns", leaks);
                    checkExecutable(m, where + "." + m.getName(), leaks);
                }
            }
        }
        assertEquals(List.of(), leaks, "internal types in the public API");
    }

    @Test
    void theModuleExportsExactlyTheApiPackages() throws IOException {
        ModuleDescriptor descriptor;
        try (InputStream in = Files.newInputStream(classesRoot.resolve("module-info.class"))) {
            descriptor = ModuleDescriptor.read(in);
        }
        assertEquals("io.warren.core", descriptor.name());
        Set<String> exported = new TreeSet<>();
        for (ModuleDescriptor.Exports e : descriptor.exports()) {
            assertTrue(e.targets().isEmpty(), "qualified export " + e);
            exported.add(e.source());
        }
        Set<String> apiPackages =
                apiTypes.stream().map(Class::getPackageName).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(apiPackages, exported, "module-info must export every package with public API and no other");
        assertTrue(exported.stream().noneMatch(PublicApiTest::isImpl), "an impl package is exported: " + exported);
    }

    // ---- helpers -----------------------------------------------------------------------------------------

    private static void checkExecutable(Executable e, String where, List<String> leaks) {
        for (Type p : e.getGenericParameterTypes()) {
            check(p, where + " parameter", leaks);
        }
        for (Type x : e.getGenericExceptionTypes()) {
            check(x, where + " throws", leaks);
        }
        for (TypeVariable<?> v : e.getTypeParameters()) {
            check(v, where + " type parameter " + v.getName(), leaks);
        }
    }

    private static void check(Type type, String where, List<String> leaks) {
        check(type, where, leaks, new HashSet<>());
    }

    private static void check(Type type, String where, List<String> leaks, Set<TypeVariable<?>> seen) {
        if (type == null) {
            return;
        }
        if (type instanceof Class<?> c) {
            while (c.isArray()) {
                c = c.getComponentType();
            }
            if (isImpl(c.getName())) {
                leaks.add(where + ": " + c.getName());
            }
        } else if (type instanceof ParameterizedType p) {
            check(p.getRawType(), where, leaks, seen);
            check(p.getOwnerType(), where, leaks, seen);
            for (Type a : p.getActualTypeArguments()) {
                check(a, where, leaks, seen);
            }
        } else if (type instanceof WildcardType w) {
            for (Type b : w.getUpperBounds()) {
                check(b, where, leaks, seen);
            }
            for (Type b : w.getLowerBounds()) {
                check(b, where, leaks, seen);
            }
        } else if (type instanceof GenericArrayType a) {
            check(a.getGenericComponentType(), where, leaks, seen);
        } else if (type instanceof TypeVariable<?> v && seen.add(v)) {
            for (Type b : v.getBounds()) {
                check(b, where, leaks, seen);
            }
        }
    }

    private static boolean isImpl(String name) {
        return name.equals(IMPL) || name.startsWith(IMPL + ".");
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

    private static boolean isVisible(Member member) {
        int m = member.getModifiers();
        return Modifier.isPublic(m)
                || Modifier.isProtected(m)
                        && !Modifier.isFinal(member.getDeclaringClass().getModifiers());
    }

    private static Class<?> load(String name) {
        try {
            return Class.forName(name, false, PublicApiTest.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            // an optional adapter whose dependency is absent from the test class path: not loadable, so not
            // checkable; the adapters' own tests have their dependency
            return null;
        }
    }
}
