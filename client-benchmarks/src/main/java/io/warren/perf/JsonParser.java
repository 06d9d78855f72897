package io.warren.perf;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON parser (RFC 8259: objects, arrays, strings with escapes, numbers, true, false, null;
 * anything else throws {@link IllegalArgumentException}). Numbers come back as {@link Double}, objects
 * as insertion-ordered maps. It reads back what {@link Json} writes: {@link BenchmarksTable} uses it on
 * result files, the tests to check them.
 */
final class JsonParser {

  private final String text;
  private int at;

  private JsonParser(String text) {
    this.text = text;
  }

  static Object parse(String text) {
    JsonParser p = new JsonParser(text);
    Object value = p.value();
    p.whitespace();
    if (p.at != text.length()) {
      throw p.error("trailing characters");
    }
    return value;
  }

  private Object value() {
    whitespace();
    if (at >= text.length()) {
      throw error("unexpected end");
    }
    char c = text.charAt(at);
    switch (c) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        return string();
      case 't':
        return literal("true", Boolean.TRUE);
      case 'f':
        return literal("false", Boolean.FALSE);
      case 'n':
        return literal("null", null);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          return number();
        }
        throw error("unexpected '" + c + "'");
    }
  }

  private Map<String, Object> object() {
    Map<String, Object> map = new LinkedHashMap<>();
    at++;
    whitespace();
    if (peek() == '}') {
      at++;
      return map;
    }
    while (true) {
      whitespace();
      if (peek() != '"') {
        throw error("expected a key");
      }
      String key = string();
      whitespace();
      expect(':');
      if (map.put(key, value()) != null) {
        throw error("duplicate key " + key);
      }
      whitespace();
      char c = next();
      if (c == '}') {
        return map;
      }
      if (c != ',') {
        throw error("expected , or }");
      }
    }
  }

  private List<Object> array() {
    List<Object> list = new ArrayList<>();
    at++;
    whitespace();
    if (peek() == ']') {
      at++;
      return list;
    }
    while (true) {
      list.add(value());
      whitespace();
      char c = next();
      if (c == ']') {
        return list;
      }
      if (c != ',') {
        throw error("expected , or ]");
      }
    }
  }

  private String string() {
    expect('"');
    StringBuilder s = new StringBuilder();
    while (true) {
      char c = next();
      if (c == '"') {
        return s.toString();
      }
      if (c < 0x20) {
        throw error("control character in string");
      }
      if (c != '\\') {
        s.append(c);
        continue;
      }
      char e = next();
      switch (e) {
        case '"', '\\', '/' -> s.append(e);
        case 'b' -> s.append('\b');
        case 'f' -> s.append('\f');
        case 'n' -> s.append('\n');
        case 'r' -> s.append('\r');
        case 't' -> s.append('\t');
        case 'u' -> {
          if (at + 4 > text.length()) {
            throw error("short \\u escape");
          }
          s.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
          at += 4;
        }
        default -> throw error("bad escape \\" + e);
      }
    }
  }

  private Double number() {
    int start = at;
    if (peek() == '-') {
      at++;
    }
    digits();
    if (at < text.length() && text.charAt(at) == '.') {
      at++;
      digits();
    }
    if (at < text.length() && (text.charAt(at) == 'e' || text.charAt(at) == 'E')) {
      at++;
      if (peek() == '+' || peek() == '-') {
        at++;
      }
      digits();
    }
    return Double.valueOf(text.substring(start, at));
  }

  private void digits() {
    int start = at;
    while (at < text.length() && Character.isDigit(text.charAt(at))) {
      at++;
    }
    if (at == start) {
      throw error("expected a digit");
    }
  }

  private Object literal(String word, Object value) {
    if (!text.startsWith(word, at)) {
      throw error("expected " + word);
    }
    at += word.length();
    return value;
  }

  private void whitespace() {
    while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) {
      at++;
    }
  }

  private char peek() {
    return at < text.length() ? text.charAt(at) : '\0';
  }

  private char next() {
    if (at >= text.length()) {
      throw error("unexpected end");
    }
    return text.charAt(at++);
  }

  private void expect(char c) {
    if (next() != c) {
      throw error("expected '" + c + "'");
    }
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException("JSON: " + what + " at " + at);
  }
}
