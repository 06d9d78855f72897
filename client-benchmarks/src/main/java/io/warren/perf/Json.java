package io.warren.perf;

import java.util.Collection;
import java.util.Locale;
import java.util.Map;

/**
 * Writes a tree of {@link Map} (insertion-ordered), {@link Collection}, {@link String}, {@link Number},
 * {@link Boolean} and null as JSON text. Non-finite doubles become {@code null} (JSON has no NaN); a
 * double is written with at most three decimals, an integral one without any. Strings escape
 * {@code <} too, so the text can sit inside an HTML {@code <script>} element.
 */
final class Json {

  private Json() {}

  /** Indented, one field per line. */
  static String pretty(Object value) {
    StringBuilder out = new StringBuilder(4096);
    write(out, value, 0, true);
    return out.append('\n').toString();
  }

  /** On one line. */
  static String compact(Object value) {
    StringBuilder out = new StringBuilder(4096);
    write(out, value, 0, false);
    return out.toString();
  }

  private static void write(StringBuilder out, Object value, int depth, boolean pretty) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof String s) {
      string(out, s);
    } else if (value instanceof Boolean b) {
      out.append(b.booleanValue());
    } else if (value instanceof Double || value instanceof Float) {
      number(out, ((Number) value).doubleValue());
    } else if (value instanceof Number n) {
      out.append(n.longValue());
    } else if (value instanceof Map<?, ?> map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : map.entrySet()) {
        if (!first) {
          out.append(',');
        }
        first = false;
        newline(out, depth + 1, pretty);
        string(out, String.valueOf(e.getKey()));
        out.append(pretty ? ": " : ":");
        write(out, e.getValue(), depth + 1, pretty);
      }
      if (!map.isEmpty()) {
        newline(out, depth, pretty);
      }
      out.append('}');
    } else if (value instanceof Collection<?> list) {
      out.append('[');
      boolean first = true;
      // short lists of numbers (timeline points, percentile pairs) stay on one line
      boolean flat = !pretty || list.stream().allMatch(v -> v == null || v instanceof Number);
      for (Object v : list) {
        if (!first) {
          out.append(flat && pretty ? ", " : ",");
        }
        first = false;
        if (!flat) {
          newline(out, depth + 1, pretty);
        }
        write(out, v, depth + 1, pretty);
      }
      if (!flat && !list.isEmpty()) {
        newline(out, depth, pretty);
      }
      out.append(']');
    } else {
      throw new IllegalArgumentException("no JSON form for " + value.getClass().getName());
    }
  }

  private static void newline(StringBuilder out, int depth, boolean pretty) {
    if (pretty) {
      out.append('\n');
      out.append("  ".repeat(depth));
    }
  }

  private static void number(StringBuilder out, double d) {
    if (Double.isNaN(d) || Double.isInfinite(d)) {
      out.append("null");
    } else if (d == Math.rint(d) && Math.abs(d) < 1e15) {
      out.append((long) d);
    } else {
      String s = String.format(Locale.ROOT, "%.3f", d);
      int end = s.length();
      while (s.charAt(end - 1) == '0') {
        end--;
      }
      if (s.charAt(end - 1) == '.') {
        end--;
      }
      out.append(s, 0, end);
    }
  }

  private static void string(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '<' -> out.append("\\u003c");
        default -> {
          if (c < 0x20) {
            out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
