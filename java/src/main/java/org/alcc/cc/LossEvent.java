package org.alcc.cc;

/** A chunk the transport declared lost. */
public final class LossEvent {
    /** Sequence number of the lost chunk. */
    public final long seq;
    /** Its payload bytes. */
    public final long bytes;
    /** When it was sent, µs. */
    public final long sentAtUs;
    /** Bytes still in flight after removing it. */
    public final long bytesInFlight;
    /** What {@link Controller#onSent} returned for the chunk. */
    public final long memo;

    /** A loss. */
    public LossEvent(long seq, long bytes, long sentAtUs, long bytesInFlight, long memo) {
        this.seq = seq;
        this.bytes = bytes;
        this.sentAtUs = sentAtUs;
        this.bytesInFlight = bytesInFlight;
        this.memo = memo;
    }
}
