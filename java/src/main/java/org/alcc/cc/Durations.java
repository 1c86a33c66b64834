package org.alcc.cc;

/**
 * Arithmetic on spans held as nanoseconds, bit for bit as Rust's {@code std::time::Duration}
 * does it, so that the ports make the Rust controllers' decisions exactly. Times are µs.
 */
public final class Durations {
    /** Nanoseconds in a second. */
    public static final long NANOS_PER_SEC = 1_000_000_000L;

    private Durations() {}

    /**
     * {@code Duration / u32}: seconds and nanoseconds are divided separately with a carry, which
     * can be one nanosecond below the exact floor.
     */
    public static long div(long nanos, int divisor) {
        long secs = nanos / NANOS_PER_SEC;
        long sub = nanos % NANOS_PER_SEC;
        long q = secs / divisor;
        long carry = secs - q * divisor;
        long extra = carry * NANOS_PER_SEC / divisor;
        return q * NANOS_PER_SEC + sub / divisor + extra;
    }

    /** {@code Duration::saturating_mul(u32)}. */
    public static long mulSat(long nanos, int factor) {
        long r = nanos * factor;
        return factor != 0 && r / factor != nanos ? Long.MAX_VALUE : r;
    }

    /** {@code Duration::as_secs_f64}: whole seconds plus nanoseconds / 1e9. */
    public static double secs(long nanos) {
        return (double) (nanos / NANOS_PER_SEC) + (double) (nanos % NANOS_PER_SEC) / 1e9;
    }

    /** {@code Time + Duration}: the span in whole microseconds, saturating. */
    public static long plus(long timeUs, long nanos) {
        long us = nanos / 1000;
        long r = timeUs + us;
        return r < timeUs ? Long.MAX_VALUE : r;
    }

    /** {@code Time::saturating_sub(Duration)}: never before 0. */
    public static long minus(long timeUs, long nanos) {
        long us = nanos / 1000;
        return us >= timeUs ? 0 : timeUs - us;
    }
}
