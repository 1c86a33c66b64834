package org.alcc.wire;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Framed mode, version 1 (docs/wire-format.md): the frames an uploading client writes (Hello,
 * Data) and reads (Ack, Report). Integers big-endian; a frame that breaks a rule is refused
 * with an {@link IOException} naming the rule.
 */
public final class Frames {
    /** The magic bytes 0xA1 0xCC. */
    public static final int MAGIC = 0xA1CC;
    /** The version this library speaks. */
    public static final int VERSION = 1;
    /** Frame types. */
    public static final int HELLO = 1, DATA = 2, ACK = 3, REPORT = 4, CLOSE = 5;
    /** Bytes of the common header. */
    public static final int HEADER = 8;
    /** Bytes of a Data body before the payload. */
    public static final int DATA_PREFIX = 20;
    /** The largest Data payload. */
    public static final int MAX_PAYLOAD = 1 << 20;
    /** "Backlogged": the time-to-next of a sender that keeps sending. */
    public static final long BACKLOGGED = 0xFFFFFFFFL;

    private Frames() {}

    /** A Hello frame carrying the controller specification (1-256 printable ASCII bytes). */
    public static byte[] hello(String spec) {
        byte[] body = spec.getBytes(StandardCharsets.US_ASCII);
        if (body.length < 1 || body.length > 256) {
            throw new IllegalArgumentException("controller spec must be 1 to 256 bytes");
        }
        for (byte b : body) {
            if (b < 0x21 || b > 0x7E) {
                throw new IllegalArgumentException("controller spec must be printable ASCII without spaces");
            }
        }
        ByteBuffer f = ByteBuffer.allocate(HEADER + body.length);
        header(f, HELLO, body.length);
        f.put(body);
        return f.array();
    }

    /** The header and body prefix of a Data frame whose payload ({@code len} bytes) follows. */
    public static byte[] dataPrefix(long seq, long sendTimeUs, long timeToNextUs, int len) {
        if (len < 1 || len > MAX_PAYLOAD) {
            throw new IllegalArgumentException("payload must be 1 to " + MAX_PAYLOAD + " bytes");
        }
        ByteBuffer f = ByteBuffer.allocate(HEADER + DATA_PREFIX);
        header(f, DATA, DATA_PREFIX + len);
        f.putLong(seq);
        f.putLong(sendTimeUs);
        f.putInt((int) timeToNextUs);
        return f.array();
    }

    private static void header(ByteBuffer f, int type, int bodyLength) {
        f.putShort((short) MAGIC);
        f.put((byte) VERSION);
        f.put((byte) type);
        f.putInt(bodyLength);
    }

    /** An Ack from the receiver. */
    public static final class Ack {
        /** The acknowledged data frame's sequence number. */
        public final long seq;
        /** The receiver's clock, µs. */
        public final long receiveTimeUs;
        /** Application bytes received through that frame. */
        public final long delivered;

        Ack(long seq, long receiveTimeUs, long delivered) {
            this.seq = seq;
            this.receiveTimeUs = receiveTimeUs;
            this.delivered = delivered;
        }
    }

    /**
     * Reads the next frame a sender may receive: an {@link Ack}, or {@code null} for a valid
     * Report (Copa and MDI have no receiver model, so reports carry nothing for them). Returns
     * {@code null} at a clean end of stream only if {@code eof[0]} is set.
     */
    public static Ack readFeedback(DataInputStream in, boolean[] eof) throws IOException {
        int first = in.read();
        if (first < 0) {
            eof[0] = true;
            return null;
        }
        byte[] rest = new byte[HEADER - 1];
        readFully(in, rest, "a frame header");
        int magic = (first << 8) | (rest[0] & 0xFF);
        if (magic != MAGIC) {
            throw new IOException("framed mode: bad magic 0x" + Integer.toHexString(magic));
        }
        int version = rest[1] & 0xFF;
        if (version != VERSION) {
            throw new IOException("framed mode: unsupported version " + version);
        }
        int type = rest[2] & 0xFF;
        long length = ByteBuffer.wrap(rest, 3, 4).getInt() & 0xFFFFFFFFL;
        switch (type) {
            case ACK: {
                if (length != 24) {
                    throw new IOException("framed mode: Ack body of " + length + " bytes, expected 24");
                }
                byte[] body = new byte[24];
                readFully(in, body, "an Ack");
                ByteBuffer b = ByteBuffer.wrap(body);
                return new Ack(b.getLong(), b.getLong(), b.getLong());
            }
            case REPORT: {
                if (length < 30 || length > 26 + 4 * 64 || (length - 26) % 4 != 0) {
                    throw new IOException("framed mode: Report body of " + length + " bytes");
                }
                byte[] body = new byte[(int) length];
                readFully(in, body, "a Report");
                int k = ByteBuffer.wrap(body, 24, 2).getShort() & 0xFFFF;
                if (26 + 4L * k != length) {
                    throw new IOException("framed mode: Report count " + k + " disagrees with its length " + length);
                }
                return null;
            }
            default:
                throw new IOException("framed mode: a sender cannot receive frame type " + type);
        }
    }

    private static void readFully(DataInputStream in, byte[] b, String what) throws IOException {
        try {
            in.readFully(b);
        } catch (EOFException e) {
            throw new IOException("framed mode: the connection ended inside " + what, e);
        }
    }
}
