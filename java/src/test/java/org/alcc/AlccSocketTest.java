package org.alcc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import org.alcc.wire.Frames;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Uploads over real loopback TCP to a receiver written here from docs/wire-format.md (Hello
 * first, data frames numbered from 0, one Ack per frame with the cumulative byte count).
 */
class AlccSocketTest {
    /** A receiver of one upload: the digest of what arrived, or the error it saw. */
    static final class Receiver implements AutoCloseable {
        final ServerSocket server;
        final Thread thread;
        final AtomicReference<Object> result = new AtomicReference<>();
        volatile String hello;

        Receiver(boolean garbage) throws IOException {
            server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
            thread = new Thread(() -> result.set(serve(garbage)));
            thread.start();
        }

        int port() {
            return server.getLocalPort();
        }

        private Object serve(boolean garbage) {
            try (Socket s = server.accept()) {
                DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
                DataOutputStream out = new DataOutputStream(s.getOutputStream());
                MessageDigest digest = MessageDigest.getInstance("SHA-256");
                byte[] h = new byte[8];
                in.readFully(h);
                if ((h[0] & 0xFF) != 0xA1 || (h[1] & 0xFF) != 0xCC || h[2] != 1 || h[3] != Frames.HELLO) {
                    return new IOException("first frame is not a Hello");
                }
                byte[] spec = new byte[java.nio.ByteBuffer.wrap(h, 4, 4).getInt()];
                in.readFully(spec);
                hello = new String(spec, "US-ASCII");
                long expect = 0;
                long delivered = 0;
                while (true) {
                    try {
                        in.readFully(h);
                    } catch (EOFException e) {
                        return digest.digest();
                    }
                    if (h[3] != Frames.DATA) {
                        return new IOException("not a data frame");
                    }
                    int len = java.nio.ByteBuffer.wrap(h, 4, 4).getInt() - Frames.DATA_PREFIX;
                    long seq = in.readLong();
                    in.readLong();
                    in.readInt();
                    if (seq != expect++) {
                        return new IOException("sequence " + seq);
                    }
                    byte[] payload = new byte[len];
                    in.readFully(payload);
                    digest.update(payload);
                    delivered += len;
                    if (garbage) {
                        out.write(new byte[] {0x12, 0x34, 1, 3, 0, 0, 0, 24});
                        out.flush();
                        garbage = false;
                        continue;
                    }
                    out.write(new byte[] {(byte) 0xA1, (byte) 0xCC, 1, Frames.ACK, 0, 0, 0, 24});
                    out.writeLong(seq);
                    out.writeLong(System.nanoTime() / 1000);
                    out.writeLong(delivered);
                    out.flush();
                }
            } catch (IOException | NoSuchAlgorithmException e) {
                return e;
            }
        }

        Object await() throws InterruptedException {
            thread.join(60_000);
            return result.get();
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }

    static byte[] sha256(byte[] data) throws NoSuchAlgorithmException {
        return MessageDigest.getInstance("SHA-256").digest(data);
    }

    private static void upload(String cc) throws Exception {
        byte[] data = new byte[8 * 1024 * 1024 + 777];
        new Random(3).nextBytes(data);
        try (Receiver r = new Receiver(false)) {
            AlccSocket.Options o = new AlccSocket.Options();
            o.cc = cc;
            AlccSocket s = AlccSocket.connect("127.0.0.1", r.port(), o);
            OutputStream out = s.getOutputStream();
            for (int off = 0; off < data.length; off += 100_000) {
                out.write(data, off, Math.min(100_000, data.length - off));
            }
            out.close(); // the FIN, then every acknowledgement
            FlowMetrics m = s.metrics();
            Object got = r.await();
            assertTrue(got instanceof byte[], String.valueOf(got));
            assertArrayEquals(sha256(data), (byte[]) got);
            assertEquals(cc, r.hello);
            assertEquals(data.length, m.bytesAcked);
            assertEquals(0, m.bytesInFlight);
            assertTrue(m.minRttNanos > 0 && m.latestRttNanos > 0, m.toString());
        }
    }

    @Test
    @Timeout(120)
    void uploadsWithCopaIntact() throws Exception {
        upload("copa");
    }

    @Test
    @Timeout(120)
    void uploadsWithMdiIntact() throws Exception {
        upload("mdi:seed=4");
    }

    @Test
    @Timeout(60)
    void aBadFrameFromTheServerFailsTheUpload() throws Exception {
        try (Receiver r = new Receiver(true)) {
            AlccSocket.Options o = new AlccSocket.Options();
            o.cc = "copa";
            AlccSocket s = AlccSocket.connect("127.0.0.1", r.port(), o);
            byte[] chunk = new byte[64 * 1024];
            IOException e = assertThrows(IOException.class, () -> {
                for (int i = 0; i < 1000; i++) {
                    s.write(chunk, 0, chunk.length);
                }
                s.close();
            });
            assertTrue(e.getMessage().contains("bad magic"), e.getMessage());
            try {
                s.close();
            } catch (IOException ignored) {
                // already failed
            }
        }
    }

    @Test
    void refusesAnUnknownControllerBeforeConnecting() {
        AlccSocket.Options o = new AlccSocket.Options();
        o.cc = "sprout";
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AlccSocket.connect("127.0.0.1", 9, o));
        assertTrue(e.getMessage().contains("sprout"), e.getMessage());
    }
}
