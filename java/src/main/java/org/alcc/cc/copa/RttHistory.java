package org.alcc.cc.copa;

import org.alcc.cc.Durations;
import org.alcc.cc.WindowedFilter;

/**
 * Copa's RTT history (port of {@code copa::rtt::RttHistory} over {@code rtt::RttEstimator}):
 * srtt with gain 1/16, minimum RTT over max(10 s, 20 x min RTT), standing RTT (minimum over
 * srtt / 2) and the extremes over 4 x srtt. Nanoseconds; -1 for "none yet".
 */
final class RttHistory {
    static final int SRTT_GAIN_DIVISOR = 16;
    static final long MIN_RTT_WINDOW_FLOOR = 10 * Durations.NANOS_PER_SEC;
    static final int MIN_RTT_WINDOW_RTTS = 20;
    static final int MODE_WINDOW_SRTTS = 4;
    static final long RTT_FLOOR = 1_000;

    private long srtt = -1;
    private long minRtt = -1;
    private final WindowedFilter mins = WindowedFilter.min();
    private final WindowedFilter maxs = WindowedFilter.max();

    void onSample(long nowUs, long rttNanos) {
        long rtt = Math.max(rttNanos, RTT_FLOOR);
        if (srtt < 0) {
            srtt = rtt;
        } else {
            srtt = Durations.div(Durations.mulSat(srtt, SRTT_GAIN_DIVISOR - 1) + rtt, SRTT_GAIN_DIVISOR);
        }
        long retain = Durations.mulSat(srtt, MODE_WINDOW_SRTTS);
        mins.push(nowUs, rtt);
        long span = Math.max(MIN_RTT_WINDOW_FLOOR, Durations.mulSat(minRtt >= 0 ? minRtt : rtt, MIN_RTT_WINDOW_RTTS));
        mins.expire(nowUs, Math.max(span, retain));
        minRtt = mins.bestWithin(nowUs, span);
        maxs.push(nowUs, rtt);
        maxs.expire(nowUs, modeSpan());
    }

    /** 4 x srtt, ns. */
    long modeSpan() {
        return Durations.mulSat(Math.max(srtt, 0), MODE_WINDOW_SRTTS);
    }

    /** The span the minimum RTT is taken over: max(10 s, 20 x the minimum RTT), ns. */
    long minRttWindow() {
        return Math.max(MIN_RTT_WINDOW_FLOOR, Durations.mulSat(Math.max(minRtt, 0), MIN_RTT_WINDOW_RTTS));
    }

    long srtt() {
        return srtt;
    }

    long minRtt() {
        return minRtt;
    }

    long standingRtt(long nowUs) {
        return srtt < 0 ? -1 : mins.bestWithin(nowUs, Durations.div(srtt, 2));
    }

    long recentMin(long nowUs) {
        return mins.bestWithin(nowUs, modeSpan());
    }

    long recentMax(long nowUs) {
        return maxs.bestWithin(nowUs, modeSpan());
    }
}
