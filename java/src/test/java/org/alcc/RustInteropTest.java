package org.alcc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.security.MessageDigest;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * This library's frames against the Rust engine's receiver: the Java side accepts and sends,
 * {@code alcc get --mode framed} connects, checks every frame rule (Hello first, sequence
 * numbers from 0 without gaps, lengths), acknowledges, and writes what it received.
 */
class RustInteropTest {
    static File alccBinary() {
        File bin = new File(System.getProperty("alcc.bin", "../target/release/alcc"));
        if (!bin.canExecute()) {
            SkipPolicy.skip(
                    "RustInteropTest",
                    bin + " is not built (cargo build --release -p alcc-cli)");
        }
        return bin;
    }

    @Test
    @Timeout(120)
    void theRustReceiverAcceptsAndAcknowledgesEveryFrame() throws Exception {
        File bin = alccBinary();
        byte[] data = new byte[4 * 1024 * 1024 + 123];
        new Random(9).nextBytes(data);
        File out = File.createTempFile("alcc-interop", ".bin");
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Process get = new ProcessBuilder(bin.getPath(), "get", "--mode", "framed", "127.0.0.1:" + server.getLocalPort(),
                    "--out", out.getPath()).redirectErrorStream(true).start();
            try {
                AlccSocket.Options o = new AlccSocket.Options();
                o.cc = "mdi";
                AlccSocket s = AlccSocket.accept(server, o);
                s.getOutputStream().write(data);
                s.close();
                assertEquals(data.length, s.metrics().bytesAcked);
                assertTrue(get.waitFor(60, TimeUnit.SECONDS), "alcc get did not finish");
                String log = new String(readAll(get.getInputStream()), "UTF-8");
                assertEquals(0, get.exitValue(), log);
            } finally {
                get.destroy();
            }
            byte[] got;
            try (InputStream in = new FileInputStream(out)) {
                got = readAll(in);
            }
            assertArrayEquals(MessageDigest.getInstance("SHA-256").digest(data), MessageDigest.getInstance("SHA-256").digest(got));
        } finally {
            assertTrue(out.delete() || !out.exists());
        }
    }

    private static byte[] readAll(InputStream in) throws java.io.IOException {
        java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
        byte[] buf = new byte[64 * 1024];
        int n;
        while ((n = in.read(buf)) > 0) {
            b.write(buf, 0, n);
        }
        return b.toByteArray();
    }
}
