package io.warren.bench;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import io.warren.testing.MainClassesOnly;
import org.junit.jupiter.api.Test;

/**
 * The benchmark tools measure what an application sees: they use the exported API only, never client-core's
 * internal {@code io.warren.impl} packages (a micro-benchmark of one internal class lives in that class's package).
 * The same holds for warren-perf ({@code io.warren.perf}), whose Warren driver is measured against amqp-client.
 */
class BenchmarkImportsTest {

    private static final JavaClasses BENCH =
            new ClassFileImporter().withImportOption(new MainClassesOnly()).importPackages("io.warren.bench");
    private static final JavaClasses PERF =
            new ClassFileImporter().withImportOption(new MainClassesOnly()).importPackages("io.warren.perf");

    @Test
    void benchmarksUseNoInternalClass() {
        noClasses()
                .that()
                .resideInAPackage("io.warren.bench..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage("io.warren.impl..")
                .check(BENCH);
    }

    @Test
    void warrenPerfUsesNoInternalClass() {
        noClasses()
                .that()
                .resideInAPackage("io.warren.perf..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage("io.warren.impl..")
                .check(PERF);
    }
}
