package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The node's server-sent events: {@code tick} and {@code object} events with increasing ids, a
 * bounded history ({@link OwnerLimits#EVENT_HISTORY}) for {@code Last-Event-ID} resumption, and
 * the live subscribers.
 *
 * <p>Concurrency: {@link #publish} and {@link #subscribe} are serialised on this hub, and
 * subscribers are called while it is held, so each subscriber sees replayed events, then live
 * ones, in id order with no gap or repeat. A subscriber's {@link Subscriber#deliver} must not
 * block (the SSE response only enqueues a write on its channel).
 */
final class EventHub {
    /**
     * One event.
     *
     * @param id its id, increasing from 1 across the node's life
     * @param type the {@code event:} field, e.g. {@code tick}
     * @param data the {@code data:} field, one line of JSON
     */
    record Event(long id, String type, String data) {
        Event {
            requireNonNull(type, "type");
            requireNonNull(data, "data");
            if (type.indexOf('\n') >= 0 || data.indexOf('\n') >= 0 || data.indexOf('\r') >= 0) {
                throw new IllegalArgumentException("event: has a line break (expected: one line each)");
            }
        }

        /** Returns the event in the {@code text/event-stream} format, blank line included. */
        byte[] wire() {
            return ("id: " + id + "\nevent: " + type + "\ndata: " + data + "\n\n").getBytes(StandardCharsets.UTF_8);
        }
    }

    /** Receives events in id order; called with the hub held, so it must only enqueue. */
    interface Subscriber {
        void deliver(Event event);
    }

    private final ArrayDeque<Event> history = new ArrayDeque<>(); // Guarded by this.
    private long lastId; // Guarded by this.
    private final Set<Subscriber> subscribers = ConcurrentHashMap.newKeySet();

    /** Appends an event to the history and delivers it to every subscriber; returns it. */
    synchronized Event publish(String type, String data) {
        Event event = new Event(++lastId, type, data);
        if (history.size() == OwnerLimits.EVENT_HISTORY) {
            history.removeFirst();
        }
        history.addLast(event);
        for (Subscriber s : subscribers) {
            s.deliver(event);
        }
        return event;
    }

    /**
     * Delivers the held events with an id above {@code afterId} (none when it is negative), then
     * every later event until {@link #unsubscribe}.
     */
    synchronized void subscribe(Subscriber subscriber, long afterId) {
        requireNonNull(subscriber, "subscriber");
        if (afterId >= 0) {
            for (Event e : history) {
                if (e.id() > afterId) {
                    subscriber.deliver(e);
                }
            }
        }
        subscribers.add(subscriber);
    }

    /** Stops deliveries to a subscriber; callable from any thread, without the hub's lock. */
    void unsubscribe(Subscriber subscriber) {
        subscribers.remove(subscriber);
    }

    /** Returns how many subscribers receive live events. */
    int subscriberCount() {
        return subscribers.size();
    }

    /** Returns the id of the last event published, 0 before the first. */
    synchronized long lastId() {
        return lastId;
    }
}
