package org.alcc.cc.copa;

import org.alcc.cc.Durations;

/** Fires once per RTT (port of {@code copa::velocity::RoundClock}). */
final class RoundClock {
    private long next = -1;

    boolean tick(long nowUs, long rttNanos) {
        if (next >= 0 && nowUs < next) {
            return false;
        }
        next = Durations.plus(nowUs, rttNanos);
        return true;
    }
}
