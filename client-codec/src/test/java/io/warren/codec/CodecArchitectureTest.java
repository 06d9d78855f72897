package io.warren.codec;

import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideOutsideOfPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import io.warren.testing.MainClassesOnly;

/**
 * The codec's packages are layers, each depending only on those below it:
 *
 * <pre>
 * io.warren.codec           frames: Frame, FrameDecoder, FrameReader, Frames, PublishFraming, ProtocolHeader
 * io.warren.codec.method    method views and encoders, MethodTable
 * io.warren.codec.content   ContentHeader, BasicProperties, ShortString, the content-header encoders
 * io.warren.codec.table     field tables
 * io.warren.codec.base      what every layer uses: AmqpProtocolException, ReplyCode, FrameType, Utf8, AsciiStringCache
 * io.warren.codec.impl      raw memory reads (not exported)
 * </pre>
 *
 * <p>So no two packages import each other, and the codec knows nothing of the rest of Warren.
 */
@AnalyzeClasses(packages = "io.warren.codec", importOptions = MainClassesOnly.class)
class CodecArchitectureTest {

    /** Each package of the codec is a slice of its own, the root package {@code io.warren.codec} included. */
    private static final SliceAssignment PACKAGES = new SliceAssignment() {
        @Override
        public SliceIdentifier getIdentifierOf(JavaClass javaClass) {
            String name = javaClass.getPackageName();
            return name.equals("io.warren.codec") || name.startsWith("io.warren.codec.")
                    ? SliceIdentifier.of(name)
                    : SliceIdentifier.ignore();
        }

        @Override
        public String getDescription() {
            return "the packages of io.warren.codec";
        }
    };

    @ArchTest
    static final ArchRule noPackageCycles =
            slices().assignedFrom(PACKAGES).should().beFreeOfCycles();

    @ArchTest
    static final ArchRule nothingOfWarrenOutsideTheCodec = noClasses()
            .that()
            .resideInAPackage("io.warren.codec..")
            .should()
            .dependOnClassesThat(resideInAPackage("io.warren..").and(resideOutsideOfPackage("io.warren.codec..")));

    @ArchTest
    static final ArchRule layers = layeredArchitecture()
            .consideringOnlyDependenciesInLayers()
            .layer("frames")
            .definedBy("io.warren.codec")
            .layer("method")
            .definedBy("io.warren.codec.method")
            .layer("content")
            .definedBy("io.warren.codec.content")
            .layer("table")
            .definedBy("io.warren.codec.table")
            .layer("base")
            .definedBy("io.warren.codec.base")
            .layer("impl")
            .definedBy("io.warren.codec.impl")
            .whereLayer("frames")
            .mayNotBeAccessedByAnyLayer()
            .whereLayer("method")
            .mayOnlyBeAccessedByLayers("frames")
            .whereLayer("content")
            .mayOnlyBeAccessedByLayers("method", "frames")
            .whereLayer("table")
            .mayOnlyBeAccessedByLayers("content", "method", "frames")
            .whereLayer("base")
            .mayOnlyBeAccessedByLayers("table", "content", "method", "frames")
            .whereLayer("impl")
            .mayOnlyBeAccessedByLayers("base", "frames");
}
