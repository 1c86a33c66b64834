package org.alcc.cc;

/** A chunk the transport has just sent. */
public final class SentPacket {
    /** The transport's sequence number, strictly increasing per flow. */
    public final long seq;
    /** Payload bytes. */
    public final long bytes;
    /** Bytes in flight, this chunk included. */
    public final long bytesInFlight;

    /** A sent chunk. */
    public SentPacket(long seq, long bytes, long bytesInFlight) {
        this.seq = seq;
        this.bytes = bytes;
        this.bytesInFlight = bytesInFlight;
    }
}
