package io.warren.codec.base;

import java.nio.charset.StandardCharsets;

/**
 * UTF-8 sizes of caller text, refusing text that has no UTF-8 form: every short string, long string, field
 * name and field value an encoder writes from a {@code CharSequence} is sized here first.
 *
 * <p>A {@code char} sequence is UTF-16; a surrogate without its partner (a high surrogate not followed by a
 * low one, or a low one on its own) is not a character and has no UTF-8 encoding. Netty's
 * {@code ByteBufUtil.utf8Bytes}/{@code writeUtf8} and {@code String.getBytes} write {@code '?'} for it, so
 * {@code "a\uD800"} and {@code "a\uDFFF"} would both name the queue {@code a?}. Here it is an
 * {@link IllegalArgumentException} naming the argument and the index, never the text (it may be a secret).
 * The check is part of the length count the encoders need anyway: the same single pass over the chars.
 */
public final class Utf8 {

    private Utf8() {}

    /**
     * The number of bytes {@code value} takes in UTF-8.
     *
     * @param what the argument's name, for the message
     * @throws IllegalArgumentException when {@code value} has an unpaired surrogate, or takes more than
     *         {@code Integer.MAX_VALUE} bytes
     */
    public static int encodedLength(String what, CharSequence value) {
        int n = value.length();
        int i = 0;
        // ASCII first: names, keys and most values are ASCII throughout
        while (i < n && value.charAt(i) < 0x80) {
            i++;
        }
        return i == n ? n : nonAsciiLength(what, value, i, n);
    }

    /**
     * The UTF-8 bytes of {@code value} (a new array).
     *
     * @throws IllegalArgumentException as {@link #encodedLength}
     */
    public static byte[] encode(String what, CharSequence value) {
        encodedLength(what, value);
        return value.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static int nonAsciiLength(String what, CharSequence value, int start, int n) {
        long bytes = start;
        for (int i = start; i < n; i++) {
            char c = value.charAt(i);
            if (c < 0x80) {
                bytes += 1;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (!Character.isSurrogate(c)) {
                bytes += 3;
            } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(value.charAt(i + 1))) {
                bytes += 4; // one supplementary character: two chars, four bytes
                i++;
            } else {
                throw new IllegalArgumentException(
                        what + " has an unpaired surrogate at index " + i + " (malformed UTF-16, no UTF-8 form)");
            }
        }
        if (bytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    what + " is " + bytes + " bytes in UTF-8, more than an AMQP length holds");
        }
        return (int) bytes;
    }
}
