package io.warren;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import io.warren.testing.MainClassesOnly;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The package structure of client-core, as rules a change cannot break unnoticed (a failure names the classes).
 *
 * <p>The implementation ({@code io.warren.impl}) is made of rooms, each a package, with one-way arrows:
 * <pre>
 *   impl (the client: the handles the application holds, the connector)
 *     -> recovery -> publish, consume -> channel -> connection -> metrics, queue
 * </pre>
 * A lower room that must call up does so through a small interface it owns, implemented above. The public
 * packages have no cycles among them; the one arrow against the grain is {@code io.warren -> io.warren.impl}: the
 * API creating its implementation.
 */
class ArchitectureTest {

    private static final JavaClasses CORE =
            new ClassFileImporter().withImportOption(new MainClassesOnly()).importPackages("io.warren");

    /** The packages module-info exports, read from it so that the rules follow it. */
    private static final Set<String> EXPORTED = exportedPackages();

    // ---- (a) no cycles ------------------------------------------------------------------------------------------

    @Test
    void theImplementationRoomsHaveNoCycles() {
        slices().assignedFrom(new SliceAssignment() {
                    @Override
                    public SliceIdentifier getIdentifierOf(JavaClass c) {
                        String p = c.getPackageName();
                        if (p.equals("io.warren.impl")) {
                            return SliceIdentifier.of("impl (client)");
                        }
                        if (p.startsWith("io.warren.impl.")) {
                            return SliceIdentifier.of("impl."
                                    + p.substring("io.warren.impl.".length()).split("\\.")[0]);
                        }
                        return SliceIdentifier.ignore();
                    }

                    @Override
                    public String getDescription() {
                        return "the rooms of io.warren.impl";
                    }
                })
                .should()
                .beFreeOfCycles()
                .check(CORE);
    }

    @Test
    void thePublicPackagesHaveNoCyclesButTheApiCreatingItsImplementation() {
        slices().assignedFrom(new SliceAssignment() {
                    @Override
                    public SliceIdentifier getIdentifierOf(JavaClass c) {
                        String p = c.getPackageName();
                        if (p.equals("io.warren")) {
                            return SliceIdentifier.of("io.warren");
                        }
                        if (p.startsWith("io.warren.impl")) {
                            return SliceIdentifier.of("io.warren.impl..");
                        }
                        if (p.startsWith("io.warren.codec")) {
                            return SliceIdentifier.ignore();
                        }
                        if (p.startsWith("io.warren.")) {
                            return SliceIdentifier.of("io.warren."
                                    + p.substring("io.warren.".length()).split("\\.")[0]);
                        }
                        return SliceIdentifier.ignore();
                    }

                    @Override
                    public String getDescription() {
                        return "the packages of client-core";
                    }
                })
                .should()
                .beFreeOfCycles()
                // the one arrow against the grain: the API (AmqpClient) creates its implementation
                .ignoreDependency(
                        DescribedPredicate.describe(
                                "io.warren", (JavaClass c) -> c.getPackageName().equals("io.warren")),
                        DescribedPredicate.describe(
                                "io.warren.impl..",
                                (JavaClass c) -> c.getPackageName().startsWith("io.warren.impl")))
                .check(CORE);
    }

    // ---- (b) the rooms' allowed dependencies ----------------------------------------------------------------------

    @Test
    void eachRoomUsesOnlyTheRoomsBelowIt() {
        layeredArchitecture()
                .consideringOnlyDependenciesInLayers()
                .layer("client")
                .definedBy("io.warren.impl")
                .layer("recovery")
                .definedBy("io.warren.impl.recovery..")
                .layer("publish")
                .definedBy("io.warren.impl.publish..")
                .layer("consume")
                .definedBy("io.warren.impl.consume..")
                .layer("channel")
                .definedBy("io.warren.impl.channel..")
                .layer("connection")
                .definedBy("io.warren.impl.connection..")
                .layer("metrics")
                .definedBy("io.warren.impl.metrics..")
                .layer("queue")
                .definedBy("io.warren.impl.queue..")
                .whereLayer("recovery")
                .mayOnlyAccessLayers("publish", "consume", "channel", "connection", "metrics", "queue")
                .whereLayer("publish")
                .mayOnlyAccessLayers("channel", "connection", "metrics")
                .whereLayer("consume")
                .mayOnlyAccessLayers("channel", "connection", "metrics", "queue")
                .whereLayer("channel")
                .mayOnlyAccessLayers("connection", "metrics")
                .whereLayer("connection")
                .mayOnlyAccessLayers("metrics", "queue")
                .whereLayer("metrics")
                .mayNotAccessAnyLayer()
                .whereLayer("queue")
                .mayNotAccessAnyLayer()
                .check(CORE);
    }

    @Test
    void theImplementationUsesNoAdapter() {
        // io.warren.impl implements io.warren (and reads io.warren.credentials); the adapters sit on top of the API
        classes()
                .that()
                .resideInAPackage("io.warren.impl..")
                .should()
                .onlyDependOnClassesThat(DescribedPredicate.describe(
                        "no adapter package", (JavaClass c) -> !isAdapter(c.getPackageName())))
                .check(CORE);
    }

    @Test
    void theAdaptersUseNoImplementationButImplAdapterWhichUsesThePublicApiOnly() {
        DescribedPredicate<JavaClass> publicApiOrImplAdapter = DescribedPredicate.describe(
                "are not io.warren.impl.. but io.warren.impl.adapter",
                (JavaClass c) -> !c.getPackageName().startsWith("io.warren.impl")
                        || c.getPackageName().equals("io.warren.impl.adapter"));
        classes()
                .that(DescribedPredicate.describe(
                        "are in an adapter package or io.warren.impl.adapter",
                        (JavaClass c) -> isAdapter(c.getPackageName())
                                || c.getPackageName().equals("io.warren.impl.adapter")))
                .should()
                .onlyDependOnClassesThat(publicApiOrImplAdapter)
                .check(CORE);
    }

    // ---- (c) the exported packages expose no implementation type ---------------------------------------------------

    @Test
    void noExportedSignatureExposesAnImplementationType() {
        classes()
                .that(DescribedPredicate.describe(
                        "are public types of an exported package",
                        (JavaClass c) -> EXPORTED.contains(c.getPackageName())
                                && c.getModifiers().contains(JavaModifier.PUBLIC)))
                .should(exposeNoImplementationType())
                .check(CORE);
    }

    // ---- (d) no public API name clashes with a codec name -----------------------------------------------------------

    @Test
    void noPublicApiTypeSharesItsSimpleNameWithACodecType() {
        JavaClasses codec =
                new ClassFileImporter().withImportOption(new MainClassesOnly()).importPackages("io.warren.codec");
        Set<String> codecNames = codec.stream()
                .filter(c -> c.getModifiers().contains(JavaModifier.PUBLIC) && c.isTopLevelClass())
                .map(JavaClass::getSimpleName)
                .collect(Collectors.toSet());
        // top-level types: a nested one is named through its outer type (PublishOutcome.Status,
        // BasicProperties.Builder)
        classes()
                .that(DescribedPredicate.describe(
                        "are public top-level types of an exported package",
                        (JavaClass c) -> EXPORTED.contains(c.getPackageName())
                                && c.isTopLevelClass()
                                && c.getModifiers().contains(JavaModifier.PUBLIC)))
                .should(new ArchCondition<JavaClass>("not share a simple name with a public codec type") {
                    @Override
                    public void check(JavaClass c, ConditionEvents events) {
                        String name = c.getSimpleName();
                        if (codecNames.contains(name)) {
                            events.add(SimpleConditionEvent.violated(
                                    c, c.getName() + " has the simple name of a public type in io.warren.codec.."));
                        }
                    }
                })
                .check(CORE);
    }

    private static boolean isAdapter(String pkg) {
        return List.of("io.warren.rpc", "io.warren.flow", "io.warren.vertx", "io.warren.otel", "io.warren.micrometer")
                .stream()
                .anyMatch(a -> pkg.equals(a) || pkg.startsWith(a + "."));
    }

    private static ArchCondition<JavaClass> exposeNoImplementationType() {
        return new ArchCondition<>("expose no io.warren.impl.. type in a public or protected signature") {
            @Override
            public void check(JavaClass c, ConditionEvents events) {
                c.getRawSuperclass().ifPresent(s -> report(c, "extends", s, events));
                c.getRawInterfaces().forEach(i -> report(c, "implements", i, events));
                for (JavaField f : c.getFields()) {
                    if (visible(f.getModifiers())) {
                        f.getType().getAllInvolvedRawTypes().forEach(t -> report(c, "field " + f.getName(), t, events));
                    }
                }
                for (JavaCodeUnit m : c.getCodeUnits()) {
                    if (!visible(m.getModifiers()) || m.getName().equals("<clinit>")) {
                        continue;
                    }
                    m.getReturnType().getAllInvolvedRawTypes().forEach(t -> report(c, m.getFullName(), t, events));
                    m.getParameterTypes()
                            .forEach(p ->
                                    p.getAllInvolvedRawTypes().forEach(t -> report(c, m.getFullName(), t, events)));
                    m.getThrowsClause().getTypes().forEach(t -> report(c, m.getFullName(), t, events));
                }
            }

            private boolean visible(Set<JavaModifier> modifiers) {
                return modifiers.contains(JavaModifier.PUBLIC) || modifiers.contains(JavaModifier.PROTECTED);
            }

            private void report(JavaClass owner, String where, JavaClass type, ConditionEvents events) {
                if (type.getPackageName().startsWith("io.warren.impl")) {
                    events.add(SimpleConditionEvent.violated(
                            owner, owner.getName() + ": " + where + " exposes " + type.getName()));
                }
            }
        };
    }

    private static Set<String> exportedPackages() {
        try {
            String module = Files.readString(Path.of("src/main/java/module-info.java"));
            Matcher m = Pattern.compile("(?m)^\\s*exports\\s+([\\w.]+)\\s*;").matcher(module);
            Set<String> exported = new java.util.HashSet<>();
            while (m.find()) {
                exported.add(m.group(1));
            }
            if (exported.isEmpty()) {
                throw new IllegalStateException("module-info.java exports nothing?");
            }
            return exported;
        } catch (IOException e) {
            throw new IllegalStateException(
                    "module-info.java not found from " + Path.of("").toAbsolutePath(), e);
        }
    }
}
