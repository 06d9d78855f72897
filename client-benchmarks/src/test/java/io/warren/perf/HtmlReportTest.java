package io.warren.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The --report page's data, without a browser (HtmlReportChromiumTest opens the page in one). */
class HtmlReportTest {

    private static final String DATA_OPEN = "<script id=\"data\" type=\"application/json\">";

    private static Map<String, Object> run(String client, String target, double sentRate) {
        Map<String, Object> m = new HashMap<>();
        m.put("client", client);
        m.put("target", target);
        m.put("sent_rate", sentRate);
        return m;
    }

    /** The JSON in the page's data element. */
    private static String data(String page) {
        int start = page.indexOf(DATA_OPEN) + DATA_OPEN.length();
        return page.substring(start, page.indexOf("</script>", start));
    }

    @Test
    void aLessThanInALabelIsEscapedAndReadsBackTheSame() {
        String label = "<b>x</b></script><script>alert(1)</script>";
        String page = HtmlReport.render(List.of(run(label, "peer:sink", 100)));
        String json = data(page);
        assertFalse(json.contains("<"), "no '<' in the data element, so no tag can end it: " + json);
        assertTrue(json.contains("\\u003cb>x\\u003c/b>"), json);
        Map<String, Object> data = PeerRunTest.asObject(Json.parse(json));
        assertEquals(List.of(label), data.get("clients"), "the escape reads back as the label");
    }

    /** Sink and source runs measure different sides of a client: never in one comparison, table or chart. */
    @Test
    void runsAreGroupedByTargetEachWithItsOwnComparison() {
        List<Map<String, Object>> runs = List.of(
                run("amqp-client", "peer:sink", 100),
                run("warren", "peer:sink", 300),
                run("amqp-client", "peer:source", 1),
                run("warren", "peer:source", 2));
        List<Map<String, Object>> groups = HtmlReport.byTarget(runs);
        assertEquals(2, groups.size());
        assertEquals("peer:sink", groups.get(0).get("target"));
        assertEquals(List.of(0, 1), groups.get(0).get("runs"));
        assertEquals("peer:source", groups.get(1).get("target"));
        assertEquals(List.of(2, 3), groups.get(1).get("runs"));
        assertEquals(
                List.of("sent msg/s", "100", "300", "3.00"),
                ((List<?>) groups.get(0).get("comparison")).get(1),
                "the sink's runs only");
        assertEquals(
                List.of("sent msg/s", "1", "2", "2.00"),
                ((List<?>) groups.get(1).get("comparison")).get(1),
                "the source's runs only");

        List<Map<String, Object>> one = HtmlReport.byTarget(List.of(run("warren", "amqp://localhost", 5)));
        assertEquals(1, one.size());
        assertNull(one.get(0).get("comparison"), "one client: nothing to compare");
    }
}
