package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * What {@link AddressLimit} counts a connection as, for addresses as a socket reports them
 * ({@link InetAddress#getHostAddress}): an IPv6 client by its /64, an IPv4 one by its address.
 */
final class AddressLimitTest {

    @Provide
    Arbitrary<byte[]> ipv6() {
        return Arbitraries.bytes()
                .array(byte[].class)
                .ofSize(16)
                .filter(b -> !isV4Mapped(b) && !isLinkLocal(b) && !isNat64(b));
    }

    /** Two IPv6 addresses share a key exactly when their first 64 bits are equal. */
    @Property(tries = 500)
    void ipv6_sharesAKey_exactlyWithinItsSlash64(
            @ForAll("ipv6") byte[] a, @ForAll @IntRange(min = 0, max = 127) int bit) throws Exception {
        byte[] b = a.clone();
        b[bit / 8] ^= (byte) (0x80 >>> (bit % 8)); // one bit flipped
        boolean samePrefix = bit >= AddressLimit.IPV6_PREFIX_BITS;
        assertThat(AddressLimit.key(text(a)).equals(AddressLimit.key(text(b))))
                .as("bit %d flipped", bit)
                .isEqualTo(samePrefix);
        assertThat(AddressLimit.key(text(a))).endsWith("/64");
    }

    /** An IPv4 address is its own key, and the same address mapped into IPv6 shares it. */
    @Property(tries = 200)
    void ipv4_isItsOwnKey_mappedOrNot(@ForAll("ipv4") byte[] v4) throws Exception {
        String dotted = text(v4);
        assertThat(AddressLimit.key(dotted)).isEqualTo(dotted);
        assertThat(AddressLimit.key("::ffff:" + dotted)).isEqualTo(dotted);
    }

    @Provide
    Arbitrary<byte[]> ipv4() {
        return Arbitraries.bytes().array(byte[].class).ofSize(4);
    }

    @Test
    void aScopedAddress_isKeyedWithoutItsScope_butALinkLocalOneIsItself() {
        assertThat(AddressLimit.key("2001:db8:0:1:0:0:0:5%3")).isEqualTo("2001:db8:0:1::/64");
        assertThat(AddressLimit.key("fe80:0:0:0:fc00:ff:fe00:1%eth0"))
                .as("a link's every host shares fe80::/64: each is counted as itself")
                .isEqualTo("fe80:0:0:0:fc00:ff:fe00:1%eth0");
    }

    /** RFC 6052: behind a NAT64 every IPv4 client arrives in 64:ff9b::/96, and is counted as its IPv4 address. */
    @Test
    void aNat64Address_isKeyedAsTheIpv4ClientItCarries() {
        assertThat(AddressLimit.key("64:ff9b:0:0:0:0:c000:201")).isEqualTo("192.0.2.1");
        assertThat(AddressLimit.key("64:ff9b:0:0:0:0:c000:202")).isEqualTo("192.0.2.2");
        assertThat(AddressLimit.key("64:ff9b:1:0:0:0:c000:201"))
                .as("not the well-known /96: an IPv6 /64 like any other")
                .isEqualTo("64:ff9b:1::/64");
    }

    /** At the limit one /64 is refused whatever address of it dials; another /64 is not. */
    @Test
    void theLimit_holdsForTheWholeSlash64() {
        AddressLimit limit = new AddressLimit(2, Set.of("2001:db8:0:0:0:0:0:1"));
        assertThat(limit.tryAcquire("2001:db8:0:1:0:0:0:1")).isTrue();
        assertThat(limit.tryAcquire("2001:db8:0:1:ffff:ffff:ffff:ffff")).isTrue();
        assertThat(limit.tryAcquire("2001:db8:0:1:1234:0:0:9"))
                .as("a third of the /64")
                .isFalse();
        assertThat(limit.tryAcquire("2001:db8:0:2:0:0:0:1")).as("another /64").isTrue();
        assertThat(limit.tryAcquire("2001:db8:0:0:0:0:0:1"))
                .as("a trusted proxy")
                .isTrue();
        assertThat(limit.tryAcquire("2001:db8:0:0:0:0:0:1")).isTrue();
        limit.release("2001:db8:0:1:0:0:0:77"); // any address of it counts one out
        assertThat(limit.held("2001:db8:0:1:0:0:0:1")).isEqualTo(1);
        assertThat(limit.tryAcquire("2001:db8:0:1:0:0:0:5")).isTrue();
        assertThat(limit.addresses()).isEqualTo(2);
    }

    private static String text(byte[] address) throws UnknownHostException {
        return InetAddress.getByAddress(address).getHostAddress();
    }

    private static boolean isLinkLocal(byte[] b) {
        return (b[0] & 0xff) == 0xfe && (b[1] & 0xc0) == 0x80;
    }

    private static boolean isNat64(byte[] b) {
        return b[0] == 0 && b[1] == 0x64 && b[2] == (byte) 0xff && b[3] == (byte) 0x9b;
    }

    private static boolean isV4Mapped(byte[] b) {
        for (int i = 0; i < 10; i++) {
            if (b[i] != 0) {
                return false;
            }
        }
        return b[10] == (byte) 0xff && b[11] == (byte) 0xff;
    }
}
