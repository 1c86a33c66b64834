package org.alcc;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayDeque;
import org.alcc.cc.AckSample;
import org.alcc.cc.Controller;
import org.alcc.cc.Controllers;
import org.alcc.cc.Decision;
import org.alcc.cc.SentPacket;
import org.alcc.wire.Frames;

/**
 * An uploading alcc connection over an ordinary {@link Socket}: framed mode
 * (docs/wire-format.md) with this side sending. It sends a Hello with the controller's
 * specification, then the application's bytes in data frames, each only when the controller's
 * window (and pacing rate) allows; the server's Ack frames give the RTT samples. The controller
 * (Copa or MDI, the same decisions as the Rust crate's) runs in this process: no kernel module,
 * no privilege, nothing but a TCP socket, as a phone app needs.
 *
 * <p>{@link #write} blocks until its bytes are handed to the socket; {@link #close} sends the
 * FIN after everything written and waits until the server has acknowledged every byte. A
 * broken rule in the server's frames, a reset or a truncated stream fails the connection with
 * an {@link IOException} from {@code write} or {@code close}. Thread-safe.
 */
public final class AlccSocket implements Closeable {
    /** Settings of a connection. */
    public static final class Options {
        /** The controller specification ({@code copa}, {@code mdi:model=FILE,seed=N}). */
        public String cc = "mdi";
        /** Bytes in one packet, the controller's unit (1448: a 1500-byte MTU with timestamps). */
        public long mss = 1448;
        /** Seed for any randomness of the controller. */
        public long seed = 1;
        /** The largest data frame payload, bytes. */
        public int maxChunk = 16 * 1024;
        /** How long {@link #close} waits for the last acknowledgements, ms. */
        public long closeTimeoutMs = 30_000;
        /** Connect timeout, ms. */
        public int connectTimeoutMs = 10_000;
    }

    private static final class Chunk {
        final long seq;
        final long end;
        final long bytes;
        final long sentAtUs;
        final long sentAtNanos;
        final long memo;

        Chunk(long seq, long end, long bytes, long sentAtUs, long sentAtNanos, long memo) {
            this.seq = seq;
            this.end = end;
            this.bytes = bytes;
            this.sentAtUs = sentAtUs;
            this.sentAtNanos = sentAtNanos;
            this.memo = memo;
        }
    }

    private final Socket socket;
    private final Options options;
    private final Controller cc;
    private final BufferedOutputStream out;
    private final DataInputStream in;
    private final Object lock = new Object();
    private final Object writeLock = new Object();
    private final long origin = System.nanoTime();
    private final ArrayDeque<Chunk> inFlight = new ArrayDeque<>();
    private final Thread ackReader;
    private final Thread timer;
    private long nextSeq;
    private long bytesSent;
    private long bytesAcked;
    private long latestRtt = -1;
    private long minRtt = -1;
    private long nextSendNanos;
    private IOException failure;
    private boolean peerClosed;
    private boolean closed;

    private AlccSocket(Socket socket, Options options, Controller cc) throws IOException {
        this.socket = socket;
        this.options = options;
        this.cc = cc;
        socket.setTcpNoDelay(true);
        this.out = new BufferedOutputStream(socket.getOutputStream(), 64 * 1024);
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), 16 * 1024));
        this.ackReader = new Thread(this::readAcks, "alcc-acks");
        this.timer = new Thread(this::serveTimers, "alcc-timer");
        this.ackReader.setDaemon(true);
        this.timer.setDaemon(true);
    }

    /** Connects to {@code host:port} and sends the Hello: an upload (the phone's case). */
    public static AlccSocket connect(String host, int port, Options options) throws IOException {
        Controller cc = Controllers.build(options.cc, options.mss, options.seed);
        Socket s = new Socket();
        try {
            s.connect(new InetSocketAddress(host, port), options.connectTimeoutMs);
            return start(s, options, cc);
        } catch (IOException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    /**
     * Accepts one connection on {@code server} and sends to it: the sending side of framed mode
     * as the accepting end, the roles of {@code alcc serve --mode framed} and
     * {@code alcc get --mode framed} (used to check this library against the Rust receiver).
     */
    public static AlccSocket accept(java.net.ServerSocket server, Options options) throws IOException {
        Controller cc = Controllers.build(options.cc, options.mss, options.seed);
        Socket s = server.accept();
        try {
            return start(s, options, cc);
        } catch (IOException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    private static AlccSocket start(Socket s, Options options, Controller cc) throws IOException {
        byte[] hello = Frames.hello(options.cc);
        AlccSocket a = new AlccSocket(s, options, cc);
        a.out.write(hello);
        a.out.flush();
        a.ackReader.start();
        a.timer.start();
        return a;
    }

    private long nowUs() {
        return (System.nanoTime() - origin) / 1000;
    }

    /** An {@link OutputStream} view: writes go through {@link #write}, close through {@link #close}. */
    public OutputStream getOutputStream() {
        return new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                AlccSocket.this.write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                AlccSocket.this.write(b, off, len);
            }

            @Override
            public void close() throws IOException {
                AlccSocket.this.close();
            }
        };
    }

    /** Sends {@code len} bytes as the controller allows; returns when all are in the socket. */
    public void write(byte[] b, int off, int len) throws IOException {
        if (off < 0 || len < 0 || off + len > b.length) {
            throw new IndexOutOfBoundsException();
        }
        synchronized (writeLock) {
            int done = 0;
            while (done < len) {
                int size = admit(len - done);
                long seq;
                long sentAtUs;
                synchronized (lock) {
                    seq = nextSeq++;
                    sentAtUs = nowUs();
                    long sentAtNanos = System.nanoTime();
                    long flight = bytesSent - bytesAcked + size;
                    long memo = cc.onSent(sentAtUs, new SentPacket(seq, size, flight));
                    bytesSent += size;
                    inFlight.addLast(new Chunk(seq, bytesSent, size, sentAtUs, sentAtNanos, memo));
                    Decision d = cc.decision();
                    if (d.pacingRate > 0) {
                        nextSendNanos = Math.max(nextSendNanos, sentAtNanos) + size * 1_000_000_000L / d.pacingRate;
                    }
                    lock.notifyAll();
                }
                try {
                    out.write(Frames.dataPrefix(seq, sentAtUs, Frames.BACKLOGGED, size));
                    out.write(b, off + done, size);
                    out.flush();
                } catch (IOException e) {
                    throw fail(e);
                }
                done += size;
            }
        }
    }

    /** Waits until a chunk of up to {@code remaining} bytes may leave; returns its size. */
    private int admit(int remaining) throws IOException {
        synchronized (lock) {
            while (true) {
                check();
                Decision d = cc.decision();
                long avail = d.window - (bytesSent - bytesAcked);
                int size = (int) Math.min(Math.min(remaining, options.maxChunk), Math.max(avail, 0));
                int least = (int) Math.min(remaining, options.mss);
                long waitNanos = d.pacingRate > 0 ? nextSendNanos - System.nanoTime() : 0;
                if (size >= least && waitNanos <= 0) {
                    return size;
                }
                try {
                    // Window-limited: an ACK or a timer wakes us; pacer-limited: its deadline.
                    long ms = waitNanos > 0 ? Math.max(1, waitNanos / 1_000_000) : 50;
                    lock.wait(ms);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while waiting for the congestion window");
                }
            }
        }
    }

    private void check() throws IOException {
        if (failure != null) {
            throw new IOException(failure.getMessage(), failure);
        }
        if (closed) {
            throw new IOException("the alcc socket is closed");
        }
    }

    private IOException fail(IOException e) {
        synchronized (lock) {
            if (failure == null) {
                failure = e;
            }
            lock.notifyAll();
            return new IOException(failure.getMessage(), failure);
        }
    }

    private void readAcks() {
        boolean[] eof = new boolean[1];
        try {
            while (true) {
                Frames.Ack ack = Frames.readFeedback(in, eof);
                if (eof[0]) {
                    synchronized (lock) {
                        peerClosed = true;
                        if (!inFlight.isEmpty() && failure == null) {
                            failure = new IOException("the server closed the connection with " + (bytesSent - bytesAcked)
                                    + " bytes unacknowledged");
                        }
                        lock.notifyAll();
                    }
                    return;
                }
                if (ack != null) {
                    onAck(ack);
                }
            }
        } catch (IOException e) {
            if (!closedByUs()) {
                fail(e);
            }
        }
    }

    private boolean closedByUs() {
        synchronized (lock) {
            return closed && inFlight.isEmpty();
        }
    }

    private void onAck(Frames.Ack ack) throws IOException {
        synchronized (lock) {
            Chunk c = inFlight.peekFirst();
            if (c == null || ack.seq != c.seq) {
                throw new IOException("framed mode: Ack for chunk " + ack.seq + ", expected "
                        + (c == null ? "none (nothing in flight)" : String.valueOf(c.seq)));
            }
            if (ack.delivered != c.end) {
                throw new IOException("framed mode: Ack for chunk " + ack.seq + " says " + ack.delivered
                        + " bytes delivered, the chunk ends at " + c.end);
            }
            inFlight.pollFirst();
            long now = nowUs();
            long rtt = System.nanoTime() - c.sentAtNanos;
            bytesAcked = c.end;
            latestRtt = rtt;
            minRtt = minRtt < 0 ? rtt : Math.min(minRtt, rtt);
            cc.onAck(now, new AckSample(c.seq, c.bytes, c.sentAtUs, rtt, bytesSent - bytesAcked, bytesAcked, c.memo));
            lock.notifyAll();
        }
    }

    private void serveTimers() {
        synchronized (lock) {
            while (!closed && failure == null && !peerClosed) {
                long t = cc.nextTimerUs();
                long now = nowUs();
                if (t != Controller.NO_TIMER && now >= t) {
                    cc.onTimer(now);
                    lock.notifyAll();
                    continue;
                }
                long waitMs = t == Controller.NO_TIMER ? 100 : Math.max(1, (t - now + 999) / 1000);
                try {
                    lock.wait(waitMs);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    /** The flow's figures now. */
    public FlowMetrics metrics() {
        synchronized (lock) {
            return new FlowMetrics(bytesSent, bytesAcked, latestRtt, minRtt, cc.metrics());
        }
    }

    /**
     * Sends the FIN after everything written and waits until the server acknowledged every
     * byte (at most {@link Options#closeTimeoutMs}); then closes the socket.
     */
    @Override
    public void close() throws IOException {
        synchronized (writeLock) {
            synchronized (lock) {
                if (closed) {
                    return;
                }
                closed = true;
                lock.notifyAll();
            }
            try {
                out.flush();
                socket.shutdownOutput();
                long deadline = System.nanoTime() + options.closeTimeoutMs * 1_000_000L;
                synchronized (lock) {
                    while (!inFlight.isEmpty() && failure == null) {
                        long left = (deadline - System.nanoTime()) / 1_000_000;
                        if (left <= 0) {
                            throw new IOException((bytesSent - bytesAcked) + " bytes were not acknowledged within "
                                    + options.closeTimeoutMs + " ms");
                        }
                        try {
                            lock.wait(left);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new InterruptedIOException("interrupted while waiting for the last acknowledgements");
                        }
                    }
                    if (failure != null) {
                        throw new IOException(failure.getMessage(), failure);
                    }
                }
            } finally {
                socket.close();
                timer.interrupt();
            }
        }
    }
}
