package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.routing.KetamaRing;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts reference owner {@code owner-0} of a three-member ring at epoch 1 before each test and
 * closes it after, with a namespace the ring gives it ({@link #MINE}) and one it gives another
 * member ({@link #THEIRS}). Register it on an instance field with {@code @RegisterExtension}.
 */
final class RingOwnerExtension implements BeforeEachCallback, AfterEachCallback {
    /** The ring's members; this extension's owner is the first. */
    static final List<String> MEMBERS = List.of("owner-0", "owner-1", "owner-2");

    /** The ring at epoch 1. */
    static final KetamaRing RING = KetamaRing.of(1, MEMBERS);

    /** The first namespace {@code ns-N} the ring gives to {@code owner-0}. */
    static final String MINE = namespaceOwnedBy("owner-0");

    /** The first namespace {@code ns-N} the ring gives to {@code owner-1}. */
    static final String THEIRS = namespaceOwnedBy("owner-1");

    private @Nullable ReferenceOwner owner;

    /** Returns the running owner; only during a test. */
    ReferenceOwner owner() {
        return requireNonNull(owner, "owner (only during a test)");
    }

    /** Closes the running owner and starts one from {@code spec} in its place; closed after the test. */
    ReferenceOwner restart(OwnerSpec spec) {
        owner().close();
        owner = ReferenceOwner.start(spec);
        return owner();
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        owner = ReferenceOwner.start(
                OwnerSpec.builder("owner-0").ringMembers(MEMBERS).ringEpoch(1).build());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        ReferenceOwner o = owner;
        owner = null;
        if (o != null) {
            o.close();
        }
    }

    /** Returns the first namespace {@code ns-N} that the ring gives to {@code member}. */
    static String namespaceOwnedBy(String member) {
        for (int i = 0; ; i++) {
            if (RING.ownerOf("ns-" + i).equals(member)) {
                return "ns-" + i;
            }
        }
    }
}
