package org.alcc;

import org.alcc.cc.Metrics;

/** One flow's figures at one moment: what the transport counted and the controller's state. */
public final class FlowMetrics {
    /** Application bytes handed to the socket in data frames. */
    public final long bytesSent;
    /** Application bytes the receiver acknowledged. */
    public final long bytesAcked;
    /** Sent and not yet acknowledged. */
    public final long bytesInFlight;
    /** The latest RTT sample, ns, or -1 before the first. */
    public final long latestRttNanos;
    /** The smallest RTT sample so far, ns, or -1. */
    public final long minRttNanos;
    /** The controller's own snapshot (window, pacing rate, state, algorithm values). */
    public final Metrics controller;

    FlowMetrics(long bytesSent, long bytesAcked, long latestRttNanos, long minRttNanos, Metrics controller) {
        this.bytesSent = bytesSent;
        this.bytesAcked = bytesAcked;
        this.bytesInFlight = bytesSent - bytesAcked;
        this.latestRttNanos = latestRttNanos;
        this.minRttNanos = minRttNanos;
        this.controller = controller;
    }

    @Override
    public String toString() {
        return "FlowMetrics{sent=" + bytesSent + ", acked=" + bytesAcked + ", window=" + controller.window + ", rtt_ms="
                + (latestRttNanos / 1e6) + ", state=" + controller.state + "}";
    }
}
