package io.warren.impl.channel;

import io.warren.codec.content.ShortString;

/**
 * The exchange (or routing key) a channel publishes to, encoded once when it repeats. Publishers name the same
 * exchange message after message, and encoding a {@code String} to UTF-8 for every frame was the largest part of
 * framing a small publish (JFR, {@code PublishRateMain}: ~9% of the event loop's samples). A {@code String} seen
 * twice in a row is turned into a {@link ShortString} (one allocation), which the encoder then copies as bytes; a
 * name that changes with every publish is never encoded here, so it allocates nothing either.
 *
 * <p>Any thread, without a lock or a volatile: both fields refer to immutable objects whose fields are final (a
 * {@code ShortString}, a {@code String}), so a thread that sees a reference sees a whole object; racing publishers
 * cost at most an extra encode.
 */
public final class RepeatedName {

    /** The last {@code String} asked for that is not encoded yet. */
    private String seen;
    /** The encoded name of the last repeated {@code String}. */
    private ShortString encoded;

    /**
     * {@code name} as a {@link ShortString} when it repeats, else {@code name} itself; never checks it (a name over
     * 255 bytes comes back as it is, for {@link ShortString#checkedLength} to refuse).
     */
    public CharSequence of(CharSequence name) {
        if (!(name instanceof String s)) {
            return name;
        }
        ShortString e = encoded;
        if (e != null && s.equals(e.toString())) {
            return e;
        }
        if (s.equals(seen)) {
            try {
                e = ShortString.of(s);
            } catch (IllegalArgumentException tooLong) {
                return name; // refused with the caller's argument name by the publisher's own check
            }
            encoded = e;
            seen = null;
            return e;
        }
        seen = s;
        return name;
    }
}
