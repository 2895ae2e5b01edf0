package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.channel.embedded.EmbeddedChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The per-loop list a full listener takes its victim from ({@code max-connections}): longest idle
 * first, busy and closed entries dropped as they are met, a close taking its entry out at once.
 * The whole-process behaviour is {@link ConnectionLimitTest}'s.
 */
final class ReusableConnectionsTest {
    private final ReusableConnections reusable = new ReusableConnections();
    private final List<EmbeddedChannel> channels = new ArrayList<>();

    @AfterEach
    void close() {
        channels.forEach(EmbeddedChannel::finishAndReleaseAll);
    }

    /** A connection whose idle-since can be set: -1 busy, else the moment it became idle. */
    private final class Conn {
        final EmbeddedChannel channel = new EmbeddedChannel();
        final AtomicLong since = new AtomicLong(-1);
        final ReusableConnections.Entry entry = reusable.register(channel, since::get);

        Conn() {
            channels.add(channel);
        }

        Conn idleAt(long t) {
            since.set(t);
            reusable.idle(entry);
            return this;
        }
    }

    @Test
    void longest_isTheConnectionIdleLongest_andAKeptConnectionGoesToTheBack() {
        Conn a = new Conn().idleAt(1);
        Conn b = new Conn().idleAt(2);
        Conn c = new Conn().idleAt(3);

        assertThat(reusable.longest()).isSameAs(a.channel);
        a.since.set(-1); // a request on a ...
        a.idleAt(4); // ... answered: idle again, the newest
        assertThat(reusable.longest()).isSameAs(b.channel);
        assertThat(reusable.size()).isEqualTo(3);
        assertThat(c.since.get()).isEqualTo(3);
    }

    @Test
    void longest_dropsTheBusyAndClosedItMeets_andTheyComeBackWhenIdleAgain() {
        Conn busy = new Conn().idleAt(1);
        Conn closed = new Conn().idleAt(2);
        Conn idle = new Conn().idleAt(3);
        busy.since.set(-1); // a head began: nothing done where it happens
        closed.channel.close(); // closed without its entry removed: still never given

        assertThat(reusable.longest()).isSameAs(idle.channel);
        assertThat(reusable.size()).as("the two met before it were dropped").isEqualTo(1);

        idle.since.set(-1);
        assertThat(reusable.longest()).isNull();
        assertThat(reusable.size()).isZero();

        busy.idleAt(4); // its response ended, kept
        assertThat(reusable.longest()).isSameAs(busy.channel);
    }

    @Test
    void remove_takesTheEntryOutAnywhere_andTwiceIsNothing() {
        Conn a = new Conn().idleAt(1);
        Conn b = new Conn().idleAt(2);
        Conn c = new Conn().idleAt(3);

        reusable.remove(b.entry); // the middle
        reusable.remove(b.entry);
        assertThat(reusable.size()).isEqualTo(2);
        reusable.remove(a.entry); // the head
        assertThat(reusable.longest()).isSameAs(c.channel);
        reusable.remove(c.entry); // the last
        assertThat(reusable.size()).isZero();
        assertThat(reusable.longest()).isNull();

        b.idleAt(4);
        assertThat(reusable.longest()).isSameAs(b.channel);
    }

    /** Many busy connections ahead of an idle one are looked at once, not at every look. */
    @Test
    void busyConnections_areLookedAtOnce() {
        List<Conn> busy = new ArrayList<>();
        for (int i = 0; i < 1_000; i++) {
            busy.add(new Conn().idleAt(i));
        }
        Conn idle = new Conn().idleAt(1_000);
        busy.forEach(b -> b.since.set(-1));

        assertThat(reusable.longest()).isSameAs(idle.channel);
        assertThat(reusable.size()).isEqualTo(1);
        assertThat(reusable.longest()).isSameAs(idle.channel);
    }
}
