package io.warren.it.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README's code is the examples' code: every {@code <!-- snippet: Class region -->} block in README.md must be
 * the text between {@code // [region]} and {@code // [/region]} in {@code examples/Class.java} (indentation
 * removed), and every such region must be quoted in the README. The examples themselves run against the broker
 * (their ITs), so a README snippet cannot rot. No broker needed here.
 */
class ReadmeSnippetsTest {

    private static final Path EXAMPLES = Path.of("src/test/java/io/warren/it/examples");
    private static final Path README = Path.of("../README.md");
    private static final Pattern SNIPPET =
            Pattern.compile("<!-- snippet: (\\w+) ([\\w-]+) -->\\R```java\\R(.*?)\\R```", Pattern.DOTALL);
    private static final Pattern REGION = Pattern.compile("^\\s*// \\[([\\w-]+)]\\s*$");

    @Test
    void everyReadmeSnippetIsItsExampleVerbatim() throws IOException {
        String readme = Files.readString(README, StandardCharsets.UTF_8);
        Matcher m = SNIPPET.matcher(readme);
        int count = 0;
        while (m.find()) {
            count++;
            String file = m.group(1) + ".java";
            Map<String, String> regions = regions(EXAMPLES.resolve(file));
            String region = regions.get(m.group(2));
            assertTrue(
                    region != null,
                    "README quotes region '" + m.group(2) + "' of " + file + ", which has only " + regions.keySet());
            assertEquals(
                    region,
                    m.group(3).replace("\r\n", "\n"),
                    "README snippet " + m.group(1) + " " + m.group(2) + " differs from the example");
        }
        assertTrue(count >= 8, "README has only " + count + " example snippets");
    }

    @Test
    void everyExampleRegionIsQuotedInTheReadme() throws IOException {
        String readme = Files.readString(README, StandardCharsets.UTF_8);
        List<String> missing = new ArrayList<>();
        try (Stream<Path> files = Files.list(EXAMPLES)) {
            for (Path f : files.filter(p -> p.toString().endsWith("Example.java"))
                    .sorted()
                    .toList()) {
                String name = f.getFileName().toString().replace(".java", "");
                for (String region : regions(f).keySet()) {
                    if (!readme.contains("<!-- snippet: " + name + " " + region + " -->")) {
                        missing.add(name + " " + region);
                    }
                }
            }
        }
        assertEquals(List.of(), missing, "example regions the README does not quote");
    }

    @Test
    void everyQuotedExampleLinksToItsWholeFile() throws IOException {
        // the snippets leave out imports: the link to the file is where a reader finds them
        String readme = Files.readString(README, StandardCharsets.UTF_8);
        Matcher m = SNIPPET.matcher(readme);
        List<String> unlinked = new ArrayList<>();
        while (m.find()) {
            String link = "](client-it/" + EXAMPLES.resolve(m.group(1) + ".java") + ")";
            if (!readme.contains(link) && !unlinked.contains(m.group(1))) {
                unlinked.add(m.group(1));
            }
        }
        assertEquals(List.of(), unlinked, "examples the README quotes without linking to their file");
    }

    @Test
    void regionsAreFoundAndDedented() {
        Map<String, String> r = regions(List.of(
                "class X {",
                "    void f() {",
                "        // [a]",
                "        int x = 1;",
                "          int y = 2;",
                "",
                "        // [/a]",
                "    }",
                "}"));
        assertEquals(Map.of("a", "int x = 1;\n  int y = 2;\n"), r);
        assertFalse(regions(List.of("// [b]", "x")).containsKey("b"), "an unclosed region is not a region");
    }

    /** The marked regions of an example file, dedented. */
    static Map<String, String> regions(Path file) {
        try {
            return regions(Files.readAllLines(file, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new AssertionError("cannot read " + file.toAbsolutePath(), e);
        }
    }

    static Map<String, String> regions(List<String> lines) {
        Map<String, String> regions = new LinkedHashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            Matcher open = REGION.matcher(lines.get(i));
            if (!open.matches() || open.group(1).startsWith("/")) {
                continue;
            }
            String name = open.group(1);
            for (int j = i + 1; j < lines.size(); j++) {
                if (lines.get(j).trim().equals("// [/" + name + "]")) {
                    regions.put(name, dedent(lines.subList(i + 1, j)));
                    break;
                }
            }
        }
        return regions;
    }

    private static String dedent(List<String> lines) {
        int indent = lines.stream()
                .filter(l -> !l.isBlank())
                .mapToInt(l -> l.length() - l.stripLeading().length())
                .min()
                .orElse(0);
        List<String> out = new ArrayList<>();
        for (String l : lines) {
            out.add(l.isBlank() ? "" : l.substring(indent));
        }
        return String.join("\n", out);
    }
}
