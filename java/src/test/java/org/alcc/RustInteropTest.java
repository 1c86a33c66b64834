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
 * This library's frames against the Rust engine's receiver, which checks every frame rule
 * (Hello first, sequence numbers from 0 without gaps, lengths), acknowledges, and writes what
 * it received: the uplink as a phone runs it (this library connects and sends to
 * {@code alcc serve --receive}), and the Java side accepting and sending to
 * {@code alcc get --mode framed}.
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
    void anUploadToTheRustUploadServerArrivesWholeWithMdiAndCopa() throws Exception {
        File bin = alccBinary();
        File dir = File.createTempFile("alcc-upload-server", "");
        assertTrue(dir.delete() && dir.mkdir());
        String[] ccs = {"mdi", "copa"};
        byte[] data = new byte[3 * 1024 * 1024 + 77];
        new Random(17).nextBytes(data);
        Process serve = new ProcessBuilder(bin.getPath(), "serve", "--receive", "--bind", "127.0.0.1", "--port", "0",
                "--count", String.valueOf(ccs.length), "--out", dir.getPath()).start();
        try {
            java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(serve.getInputStream(), "UTF-8"));
            String line = out.readLine();
            assertTrue(line != null && line.startsWith("alcc serve: receiving (framed) on"), String.valueOf(line));
            int port = Integer.parseInt(line.substring(line.lastIndexOf(':') + 1).trim());
            for (String cc : ccs) {
                AlccSocket.Options o = new AlccSocket.Options();
                o.cc = cc;
                AlccSocket s = AlccSocket.connect("127.0.0.1", port, o);
                s.getOutputStream().write(data);
                s.close();
                assertEquals(data.length, s.metrics().bytesAcked, cc);
            }
            assertTrue(serve.waitFor(60, TimeUnit.SECONDS), "alcc serve --receive did not finish");
            String log = new String(readAll(serve.getErrorStream()), "UTF-8");
            assertEquals(0, serve.exitValue(), log);
            for (int i = 0; i < ccs.length; i++) {
                assertTrue(log.contains("sender `" + ccs[i] + "`"), log);
                File f = new File(dir, "upload-" + i);
                byte[] got;
                try (InputStream in = new FileInputStream(f)) {
                    got = readAll(in);
                }
                assertArrayEquals(MessageDigest.getInstance("SHA-256").digest(data), MessageDigest.getInstance("SHA-256").digest(got), ccs[i]);
                assertTrue(f.delete());
            }
        } finally {
            serve.destroy();
            assertTrue(dir.delete() || !dir.exists());
        }
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
