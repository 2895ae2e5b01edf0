package com.spectrayan.spector.uplink.gateway;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.uplink.gateway.RawWorker.empty;
import static com.spectrayan.spector.uplink.gateway.RelayFixture.spectorFailure;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.internal.gateway.RelayHooks;
import com.spectrayan.spector.uplink.internal.wire.RelayCancel;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.internal.wire.RelayOutcome;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.internal.wire.StatusGet;
import com.spectrayan.spector.uplink.testing.TestHooks;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.StatusReport;
import java.lang.reflect.Method;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

final class GatewayWorkerClientTest {
    private final RelayFixture w1 = new RelayFixture();
    private final RawWorker worker = w1.worker;

    @AfterEach
    void tearDown() {
        w1.close();
    }

    /** Records the pushes of one relay, in the order they came. */
    private static final class Recorder {
        final List<Object> events = new CopyOnWriteArrayList<>();
        final RelayHooks hooks = TestHooks.of(events::add, events::add, events::add);
    }

    private static RelayRequest request(String relayId) {
        return new RelayRequest(relayId, "app", "GET", "https://app.local/", List.of(), "acme", null, false, -1);
    }

    @Test
    void statusGet_answered_parsesTheReport_withDistinctFrameIds() {
        CompletionStage<StatusReport> first = w1.client.statusGet();
        CompletionStage<StatusReport> second = w1.client.statusGet();
        Frame.Call a = worker.take(StatusGet.OP);
        Frame.Call b = worker.take(StatusGet.OP);
        assertThat(a.id()).as("each call gets its own frame id").isNotEqualTo(b.id());
        StatusReport report = new StatusReport("w1", List.of("app"), 0, Instant.parse("2025-01-01T00:00:00Z"));
        worker.result(b.id(), report.toJson());
        worker.result(a.id(), report.toJson());
        assertThat(done(first, "first status.get")).isEqualTo(report);
        assertThat(done(second, "second status.get")).isEqualTo(report);
    }

    @Test
    void errorFrame_failsTheCallWithTheExceptionOfItsCode() {
        CompletionStage<Void> cancel = w1.client.relayCancel("r-1");
        worker.refuse(RelayCancel.OP, ErrorCode.FORBIDDEN, "not the uplink");
        SpectorException e = spectorFailure(cancel, ErrorCode.FORBIDDEN, "error frame");
        assertThat(e.getMessage()).isEqualTo("not the uplink");
    }

    @Test
    void pushes_routedByFrameId_andOneFailingItsSchemaReachesItsRelayAsInvalid() {
        Recorder one = new Recorder();
        Recorder two = new Recorder();
        CompletionStage<RelayOutcome> first = w1.client.relayRequest(request("r-1"), one.hooks);
        CompletionStage<RelayOutcome> second = w1.client.relayRequest(request("r-2"), two.hooks);
        Frame.Call a = worker.take(RelayRequest.OP, c -> RawWorker.relayId(c).equals("r-1"));
        Frame.Call b = worker.take(RelayRequest.OP, c -> RawWorker.relayId(c).equals("r-2"));
        worker.head(b.id(), 200);
        worker.push(a.id(), RelayChunk.PUSH, empty().put("chunk", "%%%"));
        worker.result(a.id(), empty());
        worker.result(b.id(), empty().put("cancelled", true));
        assertThat(done(first, "first relay")).isEqualTo(RelayOutcome.COMPLETED);
        assertThat(done(second, "second relay")).isEqualTo(RelayOutcome.CANCELLED);
        assertThat(one.events)
                .as("order: the invalid chunk reached relay r-1, not dropped")
                .singleElement()
                .isInstanceOf(SpectorException.class);
        assertThat(two.events).as("relay r-2 got only its own head").containsExactly(new RelayHead(200, List.of()));
    }

    @Test
    void channelClosed_failsEveryPendingCallWorkerUnreachable() {
        CompletionStage<StatusReport> status = w1.client.statusGet();
        CompletionStage<RelayOutcome> relay = w1.client.relayRequest(request("r-1"), new Recorder().hooks);
        worker.take(StatusGet.OP);
        worker.take(RelayRequest.OP);
        w1.ends.workerEnd().close("worker gone");
        SpectorException e = spectorFailure(status, ErrorCode.WORKER_UNREACHABLE, "drop: pending status.get");
        spectorFailure(relay, ErrorCode.WORKER_UNREACHABLE, "drop: pending relay.request");
        assertThat(ErrorCode.isConnectionLost(e)).as("a drop is kind transport").isTrue();
        spectorFailure(w1.client.statusGet(), ErrorCode.WORKER_UNREACHABLE, "drop: a call after the close");
    }

    @Test
    void adminClient_hasNoRelayMethods() {
        List<String> names = Arrays.stream(WorkerAdminClient.class.getMethods())
                .map(Method::getName)
                .toList();
        assertThat(names).as("the admin interface has only statusGet").containsExactly("statusGet");
        assertThat(w1.link.admin())
                .as("the admin view of a link is not the relay client")
                .isNotInstanceOf(GatewayWorkerClient.class);
        List<String> clientMethods = Arrays.stream(GatewayWorkerClient.class.getMethods())
                .map(Method::getName)
                .toList();
        assertThat(clientMethods)
                .as("the public client relays nothing either: relays go through GatewayRelay")
                .doesNotContain("relayRequest", "relayBody", "relayCancel");
        List<String> relayMethods = Arrays.stream(RealGatewayWorkerClient.class.getMethods())
                .map(Method::getName)
                .toList();
        assertThat(relayMethods)
                .as("the relay operations are the internal client's")
                .contains("relayRequest", "relayBody", "relayCancel");
    }
}
