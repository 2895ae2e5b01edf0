package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code GET /api/v1/events}: server-sent events as they happen, and resumption. */
final class EventStreamTest {
    private static final Duration WAIT = Duration.ofSeconds(10);

    private ReferenceOwner owner;
    private OwnerClient client;
    private final List<EventReader> readers = new ArrayList<>();

    /** One parsed event. */
    record Event(long id, String type, String data) {}

    /** Reads events on a thread of its own into a queue, so every wait for one is bounded. */
    private static final class EventReader implements AutoCloseable {
        private final InputStream body;
        private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
        private final Thread thread;

        EventReader(InputStream body) {
            this.body = body;
            this.thread = new Thread(this::run, "sse-reader");
            thread.setDaemon(true);
            thread.start();
        }

        private void run() {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8))) {
                long id = -1;
                String type = "message";
                StringBuilder data = new StringBuilder();
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    if (line.isEmpty()) {
                        events.add(new Event(id, type, data.toString()));
                        id = -1;
                        type = "message";
                        data.setLength(0);
                    } else if (line.startsWith("id: ")) {
                        id = Long.parseLong(line.substring(4));
                    } else if (line.startsWith("event: ")) {
                        type = line.substring(7);
                    } else if (line.startsWith("data: ")) {
                        data.append(line.substring(6));
                    }
                }
            } catch (java.io.IOException e) {
                // The stream was closed by the test or the owner.
            }
        }

        Event next() throws InterruptedException {
            Event e = events.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            if (e == null) {
                throw new AssertionError("no event within " + WAIT);
            }
            return e;
        }

        Event next(String type) throws InterruptedException {
            for (Event e = next(); ; e = next()) {
                if (e.type().equals(type)) {
                    return e;
                }
            }
        }

        @Override
        public void close() throws java.io.IOException {
            body.close();
        }
    }

    @BeforeEach
    void startOwner() {
        owner = ReferenceOwner.start(OwnerSpec.builder("owner-0").build());
        client = new OwnerClient(owner);
    }

    @AfterEach
    void stopOwner() throws Exception {
        for (EventReader r : readers) {
            r.close();
        }
        owner.close();
    }

    private HttpResponse<InputStream> open(@Nullable String lastEventId) throws Exception {
        HttpRequest.Builder b = client.request("/api/v1/events").GET();
        if (lastEventId != null) {
            b.header("Last-Event-ID", lastEventId);
        }
        return client.stream(b.build());
    }

    private EventReader read(HttpResponse<InputStream> response) {
        EventReader r = new EventReader(response.body());
        readers.add(r);
        return r;
    }

    @Test
    void shouldStreamEventsAsTheyHappenWithSseHeaders() throws Exception {
        HttpResponse<InputStream> response = open(null);
        EventReader events = read(response);

        Event tick = events.next("tick");
        client.send(client.request("/api/v1/namespaces/orders/objects/a")
                .PUT(HttpRequest.BodyPublishers.ofString("x"))
                .build());
        Event object = events.next("object");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("text/event-stream");
        assertThat(response.headers().firstValue("Cache-Control")).hasValue("no-cache");
        assertThat(response.headers().firstValue("X-Accel-Buffering")).hasValue("no");
        assertThat(response.headers().firstValue("Content-Length"))
                .as("never sized")
                .isEmpty();
        assertThat(OwnerClient.node(response)).isEqualTo("owner-0");
        assertThat(tick.data()).contains("\"node\":\"owner-0\"");
        assertThat(object.id()).as("ids increase").isGreaterThan(tick.id());
        assertThat(OwnerClient.JSON.readTree(object.data()).path("key").asText())
                .isEqualTo("a");
        assertThat(owner.node().events.subscriberCount())
                .as("the stream is still open")
                .isEqualTo(1);
    }

    @Test
    void shouldResumeAfterLastEventId() throws Exception {
        EventReader first = read(open(null));
        client.send(client.request("/api/v1/namespaces/orders/objects/a")
                .PUT(HttpRequest.BodyPublishers.ofString("x"))
                .build());
        Event written = first.next("object");
        client.send(
                client.request("/api/v1/namespaces/orders/objects/a").DELETE().build());
        Event deleted = first.next("object");
        first.close();

        EventReader resumed = read(open(Long.toString(written.id() - 1)));
        List<Event> replayed = new ArrayList<>(List.of(resumed.next()));
        while (replayed.get(replayed.size() - 1).id() < deleted.id()) {
            replayed.add(resumed.next());
        }

        assertThat(replayed.get(0)).as("the first event after the given id").isEqualTo(written);
        assertThat(replayed).as("the deleted event is replayed too").contains(deleted);
        for (int i = 1; i < replayed.size(); i++) {
            assertThat(replayed.get(i).id())
                    .as("ids without gap")
                    .isEqualTo(replayed.get(i - 1).id() + 1);
        }
    }

    @Test
    void shouldRefuseAMalformedLastEventId() throws Exception {
        HttpResponse<byte[]> r = client.send(client.request("/api/v1/events")
                .header("Last-Event-ID", "x1")
                .GET()
                .build());

        assertThat(r.statusCode()).isEqualTo(400);
    }

    @Test
    void shouldForgetASubscriberThatDisconnects() throws Exception {
        EventReader events = read(open(null));
        events.next();
        assertThat(owner.node().events.subscriberCount()).isEqualTo(1);

        events.close();

        await("the subscriber is dropped once its connection closes")
                .atMost(WAIT)
                .until(() -> owner.node().events.subscriberCount() == 0);
    }
}
