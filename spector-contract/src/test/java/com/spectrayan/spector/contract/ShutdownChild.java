package com.spectrayan.spector.contract;

/**
 * A process for {@link EnvironmentTest}: waits in {@link Environment#awaitShutdown} and prints
 * {@code ready} once its main thread is parked there (so the hook is registered); its resource
 * prints {@code closed}, or with the argument {@code fail} throws.
 */
final class ShutdownChild {
    /** How long the reporter waits for the main thread to park before it gives up (nanoseconds). */
    private static final long PARK_DEADLINE_NANOS = 10_000_000_000L;

    private ShutdownChild() {}

    public static void main(String[] args) throws InterruptedException {
        boolean fail = args.length > 0 && args[0].equals("fail");
        AutoCloseable resource = () -> {
            if (fail) {
                throw new IllegalStateException("boom");
            }
            System.out.println("closed");
            System.out.flush();
        };
        Thread main = Thread.currentThread();
        Thread reporter = new Thread(
                () -> {
                    long deadline = System.nanoTime() + PARK_DEADLINE_NANOS;
                    while (main.getState() != Thread.State.WAITING && System.nanoTime() < deadline) {
                        Thread.onSpinWait();
                    }
                    System.out.println(main.getState() == Thread.State.WAITING ? "ready" : "never parked");
                    System.out.flush();
                },
                "ready-reporter");
        reporter.setDaemon(true);
        reporter.start();
        Environment.awaitShutdown(resource, "spector-test");
    }
}
