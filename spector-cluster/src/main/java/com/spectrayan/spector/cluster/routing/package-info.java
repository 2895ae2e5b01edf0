/**
 * Routing: which owner node serves a request's namespace.
 *
 * <p>A {@link com.spectrayan.spector.cluster.routing.RoutingKey} (cell, tenant, namespace) comes
 * from a request through {@link com.spectrayan.spector.cluster.routing.RoutingKeyExtractor}. The
 * {@link com.spectrayan.spector.cluster.routing.WaterfallRoutingResolver} answers its owner from L1
 * (Caffeine), then L2 (Redis, shared by every gateway of the cell), then L3 (the {@link
 * com.spectrayan.spector.cluster.routing.KetamaRing}, the only hash implementation). The ring is a
 * hint; an owner's 421 corrects it through {@code reportMisdirected}, and Redis pub/sub carries the
 * correction to every gateway. The ring itself is live: a {@link
 * com.spectrayan.spector.cluster.routing.CellRing} published for the cell ({@link
 * com.spectrayan.spector.cluster.routing.PublishedRing}) replaces the configured one on every
 * process that follows it ({@code RedisRouting.watchRing}). No Spring, no Reactor.
 */
@NullMarked
package com.spectrayan.spector.cluster.routing;

import org.jspecify.annotations.NullMarked;
