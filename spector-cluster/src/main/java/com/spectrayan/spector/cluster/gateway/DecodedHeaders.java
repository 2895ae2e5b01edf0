package com.spectrayan.spector.cluster.gateway;

import io.netty.handler.codec.DateFormatter;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValidationUtil;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;
import io.netty.util.AsciiString;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Calendar;
import java.util.Collections;
import java.util.Date;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The headers of a message that a decoder fills from the wire, then the gateway edits in place
 * (a client's request becomes the owner's; an owner's response becomes the client's), kept as one
 * flat array of names and values in the order they arrived.
 *
 * <p>Design notes. A message carries a handful of fields, and the gateway asks for a dozen
 * constant names per exchange. Netty's {@code DefaultHttpHeaders} hashes every name into a table of
 * 16 buckets and links an entry object per field into two lists: per exchange three such maps (the
 * client's request, the owner's response, the response's empty trailers) made 31 objects and 1.4 KB
 * of the 5.4 KB a 1 KiB exchange allocated (issue 14, bench/README.md, "The allocator's low-memory
 * mode"). Here a field is two slots of one array, a look-up compares the lengths first and then the
 * letters without case (RFC 9110 §5.1), and an empty map (the trailers, nearly always) has no array
 * at all. Every operation is linear in the number of fields, which the decoder bounds (a head is at
 * most {@code spector.server.max-header-size} bytes), and {@code Connection} can name at most
 * {@code HeaderPolicy.MAX_CONNECTION_TOKENS} fields to remove. Order and answers are those of
 * Netty's map, field for field ({@code DecodedHeadersTest} runs both side by side): {@code get}
 * gives the first value, {@code set} removes every field of the name and appends one, an
 * iteration gives the fields as added.
 *
 * <p>Checks. While the decoder adds them, every name is checked as Netty's default headers check
 * it: a token (RFC 9110 §5.6.2), so a name with a space, a colon or a control byte is a malformed
 * message. Once the message is decoded the gateway {@link #seal seals} them: from then on only the
 * gateway's own code sets names, and every name it sets is a constant, so a name is no longer
 * checked on each {@code set} (the checks of those constants were 3 % of a 1 KiB request's
 * samples, issue 14). Values are checked always: a value the gateway sets may come from the
 * client (a {@code Host}, an address), and a CR or LF in one would split the message (CWE-113).
 *
 * <p>Threading: a message's headers are filled, sealed and edited on one event loop; nothing here
 * is guarded.
 */
public class DecodedHeaders extends HttpHeaders {
    /** Builds these for the messages a decoder reads ({@code HttpDecoderConfig#setHeadersFactory}). */
    public static final HttpHeadersFactory FACTORY = new HttpHeadersFactory() {
        @Override
        public HttpHeaders newHeaders() {
            return new DecodedHeaders();
        }

        @Override
        public HttpHeaders newEmptyHeaders() {
            return new DecodedHeaders();
        }
    };

    /**
     * Builds the trailers a decoder reads ({@code HttpDecoderConfig#setTrailersFactory}): as {@link
     * #FACTORY}, and a trailer never names {@code Content-Length}, {@code Transfer-Encoding} or
     * {@code Trailer} (RFC 9110 §6.5.1; Netty's trailer rule, which its decoder also applies by
     * skipping those fields). Most messages have none, and an empty one holds no array.
     */
    public static final HttpHeadersFactory TRAILERS = new HttpHeadersFactory() {
        @Override
        public HttpHeaders newHeaders() {
            return new DecodedHeaders(true);
        }

        @Override
        public HttpHeaders newEmptyHeaders() {
            return new DecodedHeaders(true);
        }
    };

    /** Fields an array starts with room for: most requests and responses have fewer. */
    static final int INITIAL_FIELDS = 8;

    private static final CharSequence[] NONE = new CharSequence[0];

    /** Names and values, field {@code i} at {@code 2i} and {@code 2i + 1}; no array until the first add. */
    private CharSequence[] fields = NONE;

    /** How many fields {@link #fields} holds. */
    private int size;

    /** Set once the decoder is done: names are the gateway's constants from then on. */
    private boolean sealed;

    /** Whether these are trailers (see {@link #TRAILERS}). */
    private final boolean trailers;

    protected DecodedHeaders() {
        this(false);
    }

    private DecodedHeaders(boolean trailers) {
        this.trailers = trailers;
    }

    /**
     * Ends the decoder's part of {@code headers} when they are {@code DecodedHeaders}: names set
     * after this are the gateway's constants and are not checked again. Others are left as they
     * are (they check every name).
     */
    public static void seal(HttpHeaders headers) {
        if (headers instanceof DecodedHeaders d) {
            d.sealed = true;
        }
    }

    /** Answers whether names set on these now are checked (test hook). */
    public boolean checksNames() {
        return !sealed;
    }

    // ---- the checks ----

    private void checkName(@Nullable CharSequence name) {
        if (name == null) {
            throw new NullPointerException("name");
        }
        if (sealed) {
            return;
        }
        if (name.length() == 0) {
            throw new IllegalArgumentException("empty headers are not allowed [" + name + ']');
        }
        int index = HttpHeaderValidationUtil.validateToken(name);
        if (index != -1) {
            throw new IllegalArgumentException("a header name can only contain \"token\" characters, "
                    + "but found invalid character 0x" + Integer.toHexString(name.charAt(index))
                    + " at index " + index + " of header '" + name + "'.");
        }
        if (trailers
                && (HttpHeaderNames.CONTENT_LENGTH.contentEqualsIgnoreCase(name)
                        || HttpHeaderNames.TRANSFER_ENCODING.contentEqualsIgnoreCase(name)
                        || HttpHeaderNames.TRAILER.contentEqualsIgnoreCase(name))) {
            throw new IllegalArgumentException("prohibited trailing header: " + name);
        }
    }

    /** Netty's conversion of a value (DefaultHttpHeaders' converter) and its check (its default validator). */
    @SuppressWarnings("JavaUtilDate") // Netty's converter accepts a Date
    private static CharSequence value(@Nullable Object value) {
        if (value == null) {
            throw new NullPointerException("value");
        }
        CharSequence v;
        if (value instanceof CharSequence s) {
            v = s;
        } else if (value instanceof Date d) {
            v = DateFormatter.format(d);
        } else if (value instanceof Calendar c) {
            v = DateFormatter.format(c.getTime());
        } else {
            v = value.toString();
        }
        int index = HttpHeaderValidationUtil.validateValidHeaderValue(v);
        if (index != -1) {
            throw new IllegalArgumentException("a header value contains prohibited character 0x"
                    + Integer.toHexString(v.charAt(index)) + " at index " + index + '.');
        }
        return v;
    }

    // ---- the array ----

    private static boolean sameName(CharSequence a, CharSequence b) {
        return a == b || (a.length() == b.length() && AsciiString.contentEqualsIgnoreCase(a, b));
    }

    /** The index of the first field named {@code name} at or after {@code from}, or -1. */
    private int find(CharSequence name, int from) {
        CharSequence[] f = fields;
        for (int i = from; i < size; i++) {
            if (sameName(f[2 * i], name)) {
                return i;
            }
        }
        return -1;
    }

    private void append(CharSequence name, CharSequence value) {
        CharSequence[] f = fields;
        if (2 * size == f.length) {
            f = Arrays.copyOf(f, Math.max(2 * INITIAL_FIELDS, 2 * f.length));
            fields = f;
        }
        f[2 * size] = name;
        f[2 * size + 1] = value;
        size++;
    }

    /** Removes every field named {@code name}, keeping the others in order; answers how many went. */
    private int removeAll(CharSequence name) {
        CharSequence[] f = fields;
        int kept = 0;
        for (int i = 0; i < size; i++) {
            if (!sameName(f[2 * i], name)) {
                if (kept != i) {
                    f[2 * kept] = f[2 * i];
                    f[2 * kept + 1] = f[2 * i + 1];
                }
                kept++;
            }
        }
        int removed = size - kept;
        if (removed > 0) {
            Arrays.fill(f, 2 * kept, 2 * size, null);
            size = kept;
        }
        return removed;
    }

    // ---- reading ----

    @Override
    public @Nullable String get(String name) {
        return get((CharSequence) name);
    }

    @Override
    public @Nullable String get(CharSequence name) {
        int i = find(name, 0);
        return i < 0 ? null : fields[2 * i + 1].toString();
    }

    @Override
    public @Nullable Integer getInt(CharSequence name) {
        String v = get(name);
        try {
            return v == null ? null : Integer.parseInt(v);
        } catch (RuntimeException e) {
            return null;
        }
    }

    @Override
    public int getInt(CharSequence name, int defaultValue) {
        Integer v = getInt(name);
        return v == null ? defaultValue : v;
    }

    @Override
    public @Nullable Short getShort(CharSequence name) {
        String v = get(name);
        try {
            return v == null ? null : Short.parseShort(v);
        } catch (RuntimeException e) {
            return null;
        }
    }

    @Override
    public short getShort(CharSequence name, short defaultValue) {
        Short v = getShort(name);
        return v == null ? defaultValue : v;
    }

    @Override
    @SuppressWarnings("JavaUtilDate") // Netty's date parser answers a Date
    public @Nullable Long getTimeMillis(CharSequence name) {
        String v = get(name);
        if (v == null) {
            return null;
        }
        Date date = DateFormatter.parseHttpDate(v);
        return date == null ? null : date.getTime();
    }

    @Override
    public long getTimeMillis(CharSequence name, long defaultValue) {
        Long v = getTimeMillis(name);
        return v == null ? defaultValue : v;
    }

    @Override
    public List<String> getAll(String name) {
        return getAll((CharSequence) name);
    }

    @Override
    public List<String> getAll(CharSequence name) {
        int i = find(name, 0);
        if (i < 0) {
            return Collections.emptyList();
        }
        int next = find(name, i + 1);
        if (next < 0) {
            return Collections.singletonList(fields[2 * i + 1].toString());
        }
        List<String> all = new ArrayList<>(4);
        for (; i >= 0; i = find(name, i + 1)) {
            all.add(fields[2 * i + 1].toString());
        }
        return Collections.unmodifiableList(all);
    }

    @Override
    public Iterator<String> valueStringIterator(CharSequence name) {
        return getAll(name).iterator();
    }

    @Override
    public Iterator<? extends CharSequence> valueCharSequenceIterator(CharSequence name) {
        return getAll(name).iterator();
    }

    @Override
    public List<Map.Entry<String, String>> entries() {
        if (size == 0) {
            return Collections.emptyList();
        }
        List<Map.Entry<String, String>> all = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            all.add(new AbstractMap.SimpleImmutableEntry<>(fields[2 * i].toString(), fields[2 * i + 1].toString()));
        }
        return Collections.unmodifiableList(all);
    }

    @Override
    public boolean contains(String name) {
        return find(name, 0) >= 0;
    }

    @Override
    public boolean contains(CharSequence name) {
        return find(name, 0) >= 0;
    }

    @Override
    public boolean contains(String name, String value, boolean ignoreCase) {
        return contains((CharSequence) name, value, ignoreCase);
    }

    /** Answers whether a field named {@code name} has exactly {@code value} (no list splitting). */
    @Override
    public boolean contains(CharSequence name, CharSequence value, boolean ignoreCase) {
        for (int i = find(name, 0); i >= 0; i = find(name, i + 1)) {
            CharSequence v = fields[2 * i + 1];
            if (ignoreCase ? AsciiString.contentEqualsIgnoreCase(v, value) : AsciiString.contentEquals(v, value)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Answers whether a field named {@code name} has {@code value} as one of its comma-separated
     * members, each trimmed (as Netty's {@code HttpHeaders.containsValue}; {@code Connection: close},
     * {@code Transfer-Encoding: chunked}), without cutting the value into pieces.
     */
    @Override
    public boolean containsValue(CharSequence name, CharSequence value, boolean ignoreCase) {
        for (int i = find(name, 0); i >= 0; i = find(name, i + 1)) {
            if (hasMember(fields[2 * i + 1], value, ignoreCase)) {
                return true;
            }
        }
        return false;
    }

    static boolean hasMember(CharSequence list, CharSequence expected, boolean ignoreCase) {
        int begin = 0;
        int length = list.length();
        while (true) {
            int end = begin;
            while (end < length && list.charAt(end) != ',') {
                end++;
            }
            int from = begin;
            int to = end;
            while (from < to && list.charAt(from) <= ' ') {
                from++;
            }
            while (to > from && list.charAt(to - 1) <= ' ') {
                to--;
            }
            if (to - from == expected.length() && regionMatches(list, from, expected, ignoreCase)) {
                return true;
            }
            if (end >= length) {
                return false;
            }
            begin = end + 1;
            if (begin == length) {
                return false; // a trailing comma: Netty's split has no empty last member
            }
        }
    }

    /** Compares as Netty's {@code AsciiString.contentEquals[IgnoreCase]}: case folded for ASCII letters only. */
    private static boolean regionMatches(CharSequence s, int from, CharSequence expected, boolean ignoreCase) {
        for (int k = 0; k < expected.length(); k++) {
            char a = s.charAt(from + k);
            char b = expected.charAt(k);
            if (a != b && (!ignoreCase || AsciiString.toLowerCase(a) != AsciiString.toLowerCase(b))) {
                return false;
            }
        }
        return true;
    }

    @Override
    public boolean isEmpty() {
        return size == 0;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public Set<String> names() {
        Set<String> names = new LinkedHashSet<>(size * 2);
        for (int i = 0; i < size; i++) {
            names.add(fields[2 * i].toString());
        }
        return names;
    }

    @Override
    @Deprecated // as HttpHeaders.iterator(): Netty prefers iteratorCharSequence()
    public Iterator<Map.Entry<String, String>> iterator() {
        return new Fields<String>() {
            @Override
            String convert(CharSequence s) {
                return s.toString();
            }
        };
    }

    /** The fields in the order they were added; what the encoders write. */
    @Override
    public Iterator<Map.Entry<CharSequence, CharSequence>> iteratorCharSequence() {
        return new Fields<CharSequence>() {
            @Override
            CharSequence convert(CharSequence s) {
                return s;
            }
        };
    }

    /** Iterates the fields as immutable entries (a change while iterating is not supported). */
    private abstract class Fields<T> implements Iterator<Map.Entry<T, T>> {
        private int next;

        abstract T convert(CharSequence s);

        @Override
        public boolean hasNext() {
            return next < size;
        }

        @Override
        public Map.Entry<T, T> next() {
            if (next >= size) {
                throw new NoSuchElementException();
            }
            int i = next++;
            return new AbstractMap.SimpleImmutableEntry<>(convert(fields[2 * i]), convert(fields[2 * i + 1]));
        }
    }

    // ---- writing ----

    @Override
    public HttpHeaders add(String name, Object value) {
        return add((CharSequence) name, value);
    }

    @Override
    public HttpHeaders add(CharSequence name, Object value) {
        checkName(name);
        append(name, value(value));
        return this;
    }

    @Override
    public HttpHeaders add(String name, Iterable<?> values) {
        return add((CharSequence) name, values);
    }

    @Override
    public HttpHeaders add(CharSequence name, Iterable<?> values) {
        checkName(name);
        for (Object v : values) {
            append(name, value(v));
        }
        return this;
    }

    @Override
    public HttpHeaders addInt(CharSequence name, int value) {
        return add(name, Integer.toString(value));
    }

    @Override
    public HttpHeaders addShort(CharSequence name, short value) {
        return add(name, Short.toString(value));
    }

    @Override
    public HttpHeaders set(String name, Object value) {
        return set((CharSequence) name, value);
    }

    @Override
    public HttpHeaders set(CharSequence name, Object value) {
        checkName(name);
        CharSequence v = value(value);
        removeAll(name);
        append(name, v);
        return this;
    }

    @Override
    public HttpHeaders set(String name, Iterable<?> values) {
        return set((CharSequence) name, values);
    }

    @Override
    public HttpHeaders set(CharSequence name, Iterable<?> values) {
        checkName(name);
        removeAll(name);
        for (Object v : values) {
            append(name, value(v));
        }
        return this;
    }

    @Override
    public HttpHeaders setInt(CharSequence name, int value) {
        return set(name, Integer.toString(value));
    }

    @Override
    public HttpHeaders setShort(CharSequence name, short value) {
        return set(name, Short.toString(value));
    }

    @Override
    public HttpHeaders remove(String name) {
        return remove((CharSequence) name);
    }

    @Override
    public HttpHeaders remove(CharSequence name) {
        if (size > 0) {
            removeAll(name);
        }
        return this;
    }

    @Override
    public HttpHeaders clear() {
        Arrays.fill(fields, 0, 2 * size, null);
        size = 0;
        return this;
    }
}
