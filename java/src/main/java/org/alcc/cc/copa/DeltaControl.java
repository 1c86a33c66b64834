package org.alcc.cc.copa;

import org.alcc.cc.Durations;

/** Copa's modes and delta (port of {@code copa::mode::DeltaControl}; NSDI 2018 section 4). */
final class DeltaControl {
    static final double EMPTY_QUEUE_FRACTION = 0.1;

    private final ModePolicy policy;
    private final double defaultDelta;
    private boolean competitive;
    private double delta;
    private boolean lostThisRound;
    private long lastDoubling = -1;

    DeltaControl(ModePolicy policy, double defaultDelta) {
        this.policy = policy;
        this.defaultDelta = defaultDelta;
        this.delta = defaultDelta;
    }

    double delta() {
        return delta;
    }

    boolean competitive() {
        return competitive;
    }

    static boolean queueEmptied(long recentMin, long recentMax, long minRtt) {
        double min = Durations.secs(minRtt);
        double range = Durations.secs(recentMax) - min;
        return Durations.secs(recentMin) <= min + EMPTY_QUEUE_FRACTION * range;
    }

    /** On every ACK: back to the default mode if the queue emptied (the reference's per-ACK test). */
    void onAck(long recentMin, long recentMax, long minRtt) {
        if (policy.switches() && queueEmptied(recentMin, recentMax, minRtt)) {
            onQueueEmptied();
        }
    }

    /** Once per RTT: enters the competitive mode, grows 1/delta, or returns to the default. */
    void onRound(long recentMin, long recentMax, long minRtt) {
        if (!policy.switches()) {
            return;
        }
        if (queueEmptied(recentMin, recentMax, minRtt)) {
            onQueueEmptied();
        } else if (!competitive) {
            competitive = true;
        } else if (!lostThisRound) {
            delta = 1.0 / (1.0 / delta + 1.0);
        }
        lostThisRound = false;
    }

    /** The queue was seen empty: the default mode with the default delta. */
    void onQueueEmptied() {
        competitive = false;
        delta = defaultDelta;
    }

    void onLoss(long nowUs, long rttNanos) {
        lostThisRound = true;
        if (!competitive) {
            return;
        }
        if (lastDoubling < 0 || nowUs >= Durations.plus(lastDoubling, rttNanos)) {
            delta = Math.min(delta * 2.0, defaultDelta);
            lastDoubling = nowUs;
        }
    }
}
