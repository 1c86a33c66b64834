package org.alcc.cc.copa;

import org.alcc.cc.Durations;

/** Copa's heavy-loss rule (port of {@code copa::loss::LossRule}). */
final class LossRule {
    static final int PERIOD_RTTS = 2;
    static final long MIN_PACKETS = 20;
    static final double LOSS_FRACTION = 0.3;
    static final double DECREASE = 0.7;

    private long acked;
    private long lost;
    private long periodStart = -1;

    void onAck(long nowUs, long packets) {
        if (periodStart < 0) {
            periodStart = nowUs;
        }
        acked += packets;
    }

    void onLoss(long nowUs, long packets) {
        if (periodStart < 0) {
            periodStart = nowUs;
        }
        lost += packets;
    }

    boolean endOfPeriod(long nowUs, long srttNanos) {
        if (periodStart < 0) {
            return false;
        }
        if (nowUs < Durations.plus(periodStart, Durations.mulSat(srttNanos, PERIOD_RTTS))) {
            return false;
        }
        long total = acked + lost;
        boolean heavy = total > MIN_PACKETS && (double) lost > LOSS_FRACTION * (double) total;
        acked = 0;
        lost = 0;
        periodStart = nowUs;
        return heavy;
    }
}
