package org.alcc.cc;

/** A controller's output: how many bytes may be in flight and how fast to send them. */
public final class Decision {
    /** The most bytes that may be in flight. */
    public final long window;
    /** Pacing rate in bytes per second, or -1 to send as fast as the window allows. */
    public final long pacingRate;

    /** A decision of {@code window} bytes and {@code pacingRate} bytes/s (-1: unpaced). */
    public Decision(long window, long pacingRate) {
        this.window = window;
        this.pacingRate = pacingRate;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Decision)) {
            return false;
        }
        Decision d = (Decision) o;
        return d.window == window && d.pacingRate == pacingRate;
    }

    @Override
    public int hashCode() {
        return (int) (window ^ (window >>> 32)) * 31 + (int) (pacingRate ^ (pacingRate >>> 32));
    }

    @Override
    public String toString() {
        return "Decision{window=" + window + ", pacingRate=" + pacingRate + "}";
    }
}
