package io.warren.testing;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.core.importer.Location;

/**
 * The architecture tests' view: production classes only. ArchUnit's own {@code DoNotIncludeTests} knows test classes
 * by Maven's default directory ({@code target/test-classes}) and so takes them in when the build directory is another
 * one (CI's second run on a newer JDK builds into {@code target-jdk21}); any {@code test-classes} directory, or a
 * module's test jar, is a test location here.
 */
public final class MainClassesOnly implements ImportOption {

    @Override
    public boolean includes(Location location) {
        return !location.contains("/test-classes/") && !location.contains("-tests.jar");
    }
}
