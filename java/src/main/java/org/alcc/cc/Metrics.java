package org.alcc.cc;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** A controller's state at one moment (as {@code alcc_cc::Metrics}). */
public final class Metrics {
    /** The window in bytes. */
    public final long window;
    /** The pacing rate in bytes/s, or -1. */
    public final long pacingRate;
    /** Smoothed RTT in ns, or -1 if the algorithm keeps none. */
    public final long srttNanos;
    /** Minimum RTT in ns, or -1 if the algorithm keeps none. */
    public final long minRttNanos;
    /** A short name of the algorithm's state. */
    public final String state;
    /** Algorithm-specific values by name, in a fixed order. */
    public final Map<String, Double> extra;

    /** A snapshot. */
    public Metrics(long window, long pacingRate, long srttNanos, long minRttNanos, String state, Map<String, Double> extra) {
        this.window = window;
        this.pacingRate = pacingRate;
        this.srttNanos = srttNanos;
        this.minRttNanos = minRttNanos;
        this.state = state;
        this.extra = Collections.unmodifiableMap(new LinkedHashMap<>(extra));
    }
}
