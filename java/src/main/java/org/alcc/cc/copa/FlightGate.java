package org.alcc.cc.copa;

/**
 * How many packets Copa's window lets be in flight, as {@code alcc_cc::copa::gate::FlightGate}:
 * the authors' genericCC sender lets a packet go while its number is below the newest echoed
 * one + 1 + cwnd, i.e. while fewer than cwnd are in flight: {@code ceil(cwnd)} packets
 * ({@link #REFERENCE}, the default);
 * a byte window of {@code cwnd} packets holds {@code floor(cwnd)} whole segments
 * ({@link #CWND}, {@code gate=cwnd}).
 */
public enum FlightGate {
    /** The reference sender's: {@code ceil(cwnd)} packets. */
    REFERENCE,
    /** The byte window's: {@code cwnd} packets of bytes. */
    CWND;

    /** The packets that may be in flight under a window of {@code cwnd} packets. */
    public double flight(double cwnd) {
        return this == REFERENCE ? Math.ceil(cwnd) : cwnd;
    }
}
