package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

final class ReplayBudgetTest {
    @Test
    void tryReserve_withinTheBudget_takesTheBytes() {
        ReplayBudget budget = new ReplayBudget(100);

        assertThat(budget.tryReserve(60)).isTrue();
        assertThat(budget.tryReserve(40)).isTrue();

        assertThat(budget.available()).isZero();
    }

    @Test
    void tryReserve_pastWhatIsLeft_takesNothing() {
        ReplayBudget budget = new ReplayBudget(100);
        assertThat(budget.tryReserve(60)).isTrue();

        assertThat(budget.tryReserve(41)).isFalse();

        assertThat(budget.available()).isEqualTo(40);
    }

    @Test
    void release_afterReserve_givesTheBytesBack() {
        ReplayBudget budget = new ReplayBudget(100);
        assertThat(budget.tryReserve(100)).isTrue();

        budget.release(100);

        assertThat(budget.available()).isEqualTo(100);
        assertThat(budget.tryReserve(100)).isTrue();
    }

    @Test
    void tryReserve_fromManyThreads_neverOvercommits() throws Exception {
        ReplayBudget budget = new ReplayBudget(1000);
        Thread[] threads = new Thread[4];
        int[] taken = new int[threads.length];
        for (int t = 0; t < threads.length; t++) {
            int index = t;
            threads[t] = new Thread(() -> {
                for (int i = 0; i < 1000; i++) {
                    if (budget.tryReserve(1)) {
                        taken[index]++;
                    }
                }
            });
            threads[t].start();
        }
        for (Thread t : threads) {
            t.join(10_000);
        }

        int sum = 0;
        for (int n : taken) {
            sum += n;
        }
        assertThat(sum).isEqualTo(1000);
        assertThat(budget.available()).isZero();
    }

    /** Bodies read ahead hold at most half of the budget together: at it, and one byte past it. */
    @Test
    void tryReserveAhead_atHalfTheBudget_takesTheBytes_andNoMore() {
        ReplayBudget budget = new ReplayBudget(100);

        assertThat(budget.tryReserveAhead(30)).isTrue();
        assertThat(budget.tryReserveAhead(20)).as("at half").isTrue();
        assertThat(budget.tryReserveAhead(1)).as("one past half").isFalse();

        assertThat(budget.available()).isEqualTo(50);
        assertThat(budget.tryReserve(50))
                .as("the other half stays for replay copies")
                .isTrue();
    }

    @Test
    void tryReserveAhead_theBudgetShort_takesNothing() {
        ReplayBudget budget = new ReplayBudget(100);
        assertThat(budget.tryReserve(80)).isTrue();

        assertThat(budget.tryReserveAhead(21)).isFalse();
        assertThat(budget.tryReserveAhead(20))
                .as("the refused one took none of the half")
                .isTrue();

        assertThat(budget.available()).isZero();
    }

    @Test
    void releaseAhead_givesTheBytesAndTheShareBack() {
        ReplayBudget budget = new ReplayBudget(100);
        assertThat(budget.tryReserveAhead(50)).isTrue();

        budget.releaseAhead(50);

        assertThat(budget.available()).isEqualTo(100);
        assertThat(budget.tryReserveAhead(50)).isTrue();
    }

    @Test
    void new_negativeBytes_isRefused() {
        assertThatThrownBy(() -> new ReplayBudget(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("bytes: -1 (expected: >= 0)");
    }
}
