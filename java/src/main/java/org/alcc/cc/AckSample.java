package org.alcc.cc;

/** What the transport learned from the acknowledgement of one chunk. */
public final class AckSample {
    /** Sequence number of the acknowledged chunk. */
    public final long seq;
    /** Bytes newly acknowledged. */
    public final long bytes;
    /** When the chunk was sent, µs. */
    public final long sentAtUs;
    /** The RTT sample, nanoseconds. */
    public final long rttNanos;
    /** Bytes still in flight after this acknowledgement. */
    public final long bytesInFlight;
    /** Cumulative bytes delivered, this sample included. */
    public final long delivered;
    /** What {@link Controller#onSent} returned for the chunk. */
    public final long memo;

    /** An acknowledgement sample. */
    public AckSample(long seq, long bytes, long sentAtUs, long rttNanos, long bytesInFlight, long delivered, long memo) {
        this.seq = seq;
        this.bytes = bytes;
        this.sentAtUs = sentAtUs;
        this.rttNanos = rttNanos;
        this.bytesInFlight = bytesInFlight;
        this.delivered = delivered;
        this.memo = memo;
    }
}
