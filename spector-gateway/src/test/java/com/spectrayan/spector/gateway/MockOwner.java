package com.spectrayan.spector.gateway;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;

/**
 * A scripted owner on a raw server socket, for the framings the reference owner never sends (a
 * HEAD's {@code Content-Length}, 304, a {@code Vary} of its own): each request is read whole
 * ({@code Content-Length} or chunked), recorded, then answered with exactly the bytes its {@link
 * Script} returns. Connections are kept alive; one daemon thread per connection. {@link #close()}
 * closes everything.
 */
final class MockOwner implements AutoCloseable {
    /** Returns a whole response (head and body, as ISO-8859-1 text) for a request. */
    @FunctionalInterface
    interface Script {
        String answer(Request request);
    }

    /**
     * A request as this owner read it.
     *
     * @param method the method
     * @param target the request target as sent
     * @param headers the fields, names lower-cased, the first value of each
     * @param body the body
     */
    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    record Request(String method, String target, Map<String, String> headers, byte[] body) {
        @Nullable
        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }

        /** Returns the target's path, without the query. */
        String path() {
            int q = target.indexOf('?');
            return q < 0 ? target : target.substring(0, q);
        }
    }

    private final Script script;
    private final List<Request> requests = new CopyOnWriteArrayList<>();
    private final SilentServer server;

    private MockOwner(Script script) throws IOException {
        this.script = script;
        this.server = SilentServer.serving("mock-owner", this::serve);
    }

    static MockOwner start(Script script) throws IOException {
        return new MockOwner(script);
    }

    URI baseUri() {
        return URI.create("http://127.0.0.1:" + server.port());
    }

    /** Returns the requests read whole so far, oldest first. */
    List<Request> requests() {
        return List.copyOf(requests);
    }

    /** Returns the requests whose path ends with {@code suffix}. */
    List<Request> requestsEndingWith(String suffix) {
        List<Request> out = new ArrayList<>();
        for (Request r : requests) {
            if (r.path().endsWith(suffix)) {
                out.add(r);
            }
        }
        return out;
    }

    private void serve(Socket s) {
        try (s) {
            InputStream in = s.getInputStream();
            OutputStream out = s.getOutputStream();
            while (true) {
                Request r = readRequest(in);
                if (r == null) {
                    return;
                }
                requests.add(r);
                out.write(script.answer(r).getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
            }
        } catch (IOException e) {
            // the gateway closed or reset the connection: nothing more to serve
        }
    }

    /** Reads one request whole (Content-Length or chunked body); null at the end of the stream. */
    static @Nullable Request readRequest(InputStream in) throws IOException {
        String requestLine = line(in);
        if (requestLine == null) {
            return null;
        }
        String[] parts = requestLine.split(" ", 3);
        Map<String, String> headers = new LinkedHashMap<>();
        for (String f = line(in); f != null && !f.isEmpty(); f = line(in)) {
            int colon = f.indexOf(':');
            headers.putIfAbsent(
                    f.substring(0, colon).strip().toLowerCase(Locale.ROOT),
                    f.substring(colon + 1).strip());
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            while (true) {
                String size = line(in);
                if (size == null) {
                    return null; // cut off: never a whole request
                }
                int n = Integer.parseInt(size.strip(), 16);
                if (n == 0) {
                    for (String t = line(in); t != null && !t.isEmpty(); t = line(in)) {
                        // trailers
                    }
                    break;
                }
                byte[] data = in.readNBytes(n);
                if (data.length < n) {
                    return null;
                }
                body.write(data);
                line(in);
            }
        } else if (headers.containsKey("content-length")) {
            int n = Integer.parseInt(headers.get("content-length"));
            byte[] data = in.readNBytes(n);
            if (data.length < n) {
                return null;
            }
            body.write(data);
        }
        return new Request(parts[0], parts.length > 1 ? parts[1] : "", headers, body.toByteArray());
    }

    private static @Nullable String line(InputStream in) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int b = in.read(); b != '\n'; b = in.read()) {
            if (b == -1) {
                return null;
            }
            if (b != '\r') {
                sb.append((char) b);
            }
        }
        return sb.toString();
    }

    /** A whole response with a {@code Content-Length} body. */
    static String response(int status, String reason, String body, String... fields) {
        StringBuilder sb = new StringBuilder("HTTP/1.1 ")
                .append(status)
                .append(' ')
                .append(reason)
                .append("\r\n");
        for (String f : fields) {
            sb.append(f).append("\r\n");
        }
        return sb.append("Content-Length: ")
                .append(body.length())
                .append("\r\n\r\n")
                .append(body)
                .toString();
    }

    @Override
    public void close() {
        server.close();
    }
}
