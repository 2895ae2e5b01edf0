package com.spectrayan.spector.cluster.gateway;

import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.CompletableFuture;

/**
 * A transport listener that keeps what an owner connection delivered: the answer's status, and
 * whether its first body bytes were in direct memory. A close or failure before the answer fails
 * {@link #status}.
 */
final class AnswerListener implements UpstreamHttpTransport.Listener {
    final CompletableFuture<Integer> status = new CompletableFuture<>();
    final CompletableFuture<Boolean> bodyDirect = new CompletableFuture<>();

    @Override
    public void onMessage(Object message) {
        if (message instanceof HttpResponse r) {
            status.complete(r.status().code());
        }
        if (message instanceof HttpContent c && c.content().isReadable()) {
            bodyDirect.complete(c.content().isDirect());
        }
        ReferenceCountUtil.release(message);
    }

    @Override
    public void onReadComplete() {}

    @Override
    public void onWritabilityChanged(boolean writable) {}

    @Override
    public void onClosed() {
        status.completeExceptionally(new AssertionError("closed before the answer"));
    }

    @Override
    public void onFailure(Throwable cause) {
        status.completeExceptionally(cause);
    }
}
