package org.alcc.cc;

import java.util.ArrayDeque;
import java.util.Iterator;

/**
 * The exact minimum or maximum of timestamped samples in a sliding window (port of
 * {@code alcc_cc::windowed::WindowedFilter}): a monotonic deque, samples ordered by time, each
 * strictly better than every later one. Values are nanoseconds, times µs.
 */
public final class WindowedFilter {
    private final boolean max;
    private final ArrayDeque<long[]> samples = new ArrayDeque<>();

    private WindowedFilter(boolean max) {
        this.max = max;
    }

    /** A filter of the minimum. */
    public static WindowedFilter min() {
        return new WindowedFilter(false);
    }

    /** A filter of the maximum. */
    public static WindowedFilter max() {
        return new WindowedFilter(true);
    }

    /** Adds a sample; a time before the newest is taken as the newest's. */
    public void push(long atUs, long value) {
        long[] newest = samples.peekLast();
        long at = newest != null && newest[0] > atUs ? newest[0] : atUs;
        while (!samples.isEmpty() && atLeastAsGood(value, samples.peekLast()[1])) {
            samples.pollLast();
        }
        samples.addLast(new long[] {at, value});
    }

    /** Forgets samples taken more than {@code keepNanos} before {@code nowUs}. */
    public void expire(long nowUs, long keepNanos) {
        long cutoff = Durations.minus(nowUs, keepNanos);
        while (!samples.isEmpty() && samples.peekFirst()[0] < cutoff) {
            samples.pollFirst();
        }
    }

    /** The extremum of the samples at or after {@code now - span}, or -1 if there is none. */
    public long bestWithin(long nowUs, long spanNanos) {
        long cutoff = Durations.minus(nowUs, spanNanos);
        Iterator<long[]> it = samples.iterator();
        while (it.hasNext()) {
            long[] s = it.next();
            if (s[0] >= cutoff) {
                return s[1];
            }
        }
        return -1;
    }

    private boolean atLeastAsGood(long fresh, long old) {
        return max ? fresh >= old : fresh <= old;
    }
}
