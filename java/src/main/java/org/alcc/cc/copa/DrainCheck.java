package org.alcc.cc.copa;

import org.alcc.cc.Durations;

/**
 * Competitive mode's check that a competitor is still there (port of {@code copa::drain}): one
 * mode window after competitive mode begins, and then at doubling intervals up to the minimum-RTT
 * window, the window is held at the pipe until a packet sent after the hold began is
 * acknowledged; if the queue is then seen empty, Copa returns to the default mode.
 */
final class DrainCheck {
    private enum State { IDLE, SCHEDULED, DRAINING }

    private State state = State.IDLE;
    /** SCHEDULED: when the next drain starts (µs). */
    private long dueUs;
    /** DRAINING: when the hold began (µs). */
    private long sinceUs;
    /** The wait (ns) that led to the scheduled or running drain. */
    private long intervalNanos;

    /** Whether the window is held at the pipe. */
    boolean holds() {
        return state == State.DRAINING;
    }

    /** Competitive mode began: the first drain comes one mode window later. */
    void onCompetitive(long nowUs, long modeSpanNanos) {
        if (state == State.IDLE) {
            state = State.SCHEDULED;
            dueUs = Durations.plus(nowUs, modeSpanNanos);
            intervalNanos = modeSpanNanos;
        }
    }

    /** The default mode is back: no more checks. */
    void onDefault() {
        state = State.IDLE;
    }

    /** Starts the drain if it is due; returns whether it started. */
    boolean startIfDue(long nowUs) {
        if (state == State.SCHEDULED && nowUs >= dueUs) {
            state = State.DRAINING;
            sinceUs = nowUs;
            return true;
        }
        return false;
    }

    /** Whether the ACK of a packet sent at {@code sentAtUs} ends the drain. */
    boolean endsWith(long sentAtUs) {
        return state == State.DRAINING && sentAtUs >= sinceUs;
    }

    /** The drain found a competitor's queue: wait twice as long, at most {@code longestNanos}. */
    void onCompetitor(long nowUs, long longestNanos) {
        if (state == State.DRAINING) {
            intervalNanos = Math.min(Durations.mulSat(intervalNanos, 2), longestNanos);
            state = State.SCHEDULED;
            dueUs = Durations.plus(nowUs, intervalNanos);
        }
    }

    /** {@code cwnd x minRTT / RTTstanding} packets, never above {@code cwnd}. */
    static double pipeWindow(double cwnd, long minRttNanos, long standingNanos) {
        double standing = Durations.secs(standingNanos);
        if (standing <= 0.0) {
            return cwnd;
        }
        return Math.min(cwnd * Durations.secs(minRttNanos) / standing, cwnd);
    }
}
