package org.alcc.cc.mdi;

/**
 * MDI's 5 ms epochs and the delay observed in each (port of {@code alcc_cc::mdi::epoch}): the
 * largest RTT of the epoch in ms; an epoch without an ACK observes max(previous, time since
 * the last ACK); nothing before the first ACK.
 */
final class DelayEpochs {
    /** Epoch length, µs. */
    static final long EPOCH_US = 5_000;

    private double epochMaxMs = Double.NaN;
    private double lastDmaxMs = Double.NaN;
    private long lastAckUs = -1;

    void onRtt(long nowUs, long rttNanos) {
        double ms = secs(rttNanos) * 1e3;
        epochMaxMs = Double.isNaN(epochMaxMs) ? ms : Math.max(epochMaxMs, ms);
        lastAckUs = nowUs;
    }

    /** Closes the epoch ending at {@code endUs}: its Dmax (ms), or NaN before the first ACK. */
    double close(long endUs) {
        double dmax;
        if (!Double.isNaN(epochMaxMs)) {
            dmax = epochMaxMs;
            epochMaxMs = Double.NaN;
        } else if (lastAckUs >= 0) {
            double silence = secs(Math.max(endUs - lastAckUs, 0) * 1000) * 1e3;
            dmax = Math.max(Double.isNaN(lastDmaxMs) ? 0.0 : lastDmaxMs, silence);
        } else {
            return Double.NaN;
        }
        lastDmaxMs = dmax;
        return dmax;
    }

    private static double secs(long nanos) {
        return org.alcc.cc.Durations.secs(nanos);
    }
}
