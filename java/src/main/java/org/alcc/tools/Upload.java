package org.alcc.tools;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Locale;
import org.alcc.AlccSocket;
import org.alcc.FlowMetrics;

/**
 * The command-line uploader that stands in for a phone app:
 * {@code java -jar alcc-upload.jar FILE HOST:PORT [--cc SPEC] [--mss N] [--seed N]}.
 * It uploads FILE through an {@link AlccSocket} to an {@code alcc serve --receive} server and
 * prints one JSON line: bytes, seconds, Mbit/s, the smallest and last RTT.
 */
public final class Upload {
    private Upload() {}

    /** Runs the uploader; exit status 2 for bad arguments, 1 for a failed upload. */
    public static void main(String[] args) {
        try {
            System.exit(run(args));
        } catch (IllegalArgumentException e) {
            System.err.println("alcc-upload: " + e.getMessage());
            System.err.println("usage: java -jar alcc-upload.jar FILE HOST:PORT [--cc SPEC] [--mss N] [--seed N]");
            System.exit(2);
        } catch (IOException e) {
            System.err.println("alcc-upload: " + e.getMessage());
            System.exit(1);
        }
    }

    static int run(String[] args) throws IOException {
        AlccSocket.Options options = new AlccSocket.Options();
        String file = null;
        String target = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.startsWith("--")) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(a + " needs a value");
                }
                String v = args[++i];
                switch (a) {
                    case "--cc":
                        options.cc = v;
                        break;
                    case "--mss":
                        options.mss = parse(a, v);
                        break;
                    case "--seed":
                        options.seed = parse(a, v);
                        break;
                    default:
                        throw new IllegalArgumentException("unknown option " + a);
                }
            } else if (file == null) {
                file = a;
            } else if (target == null) {
                target = a;
            } else {
                throw new IllegalArgumentException("unexpected argument " + a);
            }
        }
        if (file == null || target == null) {
            throw new IllegalArgumentException("need FILE and HOST:PORT");
        }
        int colon = target.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("`" + target + "` is not HOST:PORT");
        }
        String host = target.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port = (int) parse("port", target.substring(colon + 1));
        long start = System.nanoTime();
        FlowMetrics m;
        try (InputStream in = new FileInputStream(file)) {
            AlccSocket s = AlccSocket.connect(host, port, options);
            try {
                byte[] buf = new byte[256 * 1024];
                int n;
                while ((n = in.read(buf)) > 0) {
                    s.write(buf, 0, n);
                }
            } finally {
                // Flushes, sends the FIN and waits for every acknowledgement (idempotent).
                s.close();
            }
            m = s.metrics();
        }
        double secs = (System.nanoTime() - start) / 1e9;
        System.out.println(String.format(Locale.ROOT,
                "{\"bytes\":%d,\"seconds\":%.3f,\"mbps\":%.3f,\"min_rtt_ms\":%.3f,\"last_rtt_ms\":%.3f,\"cc\":\"%s\"}",
                m.bytesAcked, secs, m.bytesAcked * 8 / secs / 1e6, m.minRttNanos / 1e6, m.latestRttNanos / 1e6, options.cc));
        return 0;
    }

    private static long parse(String what, String v) {
        try {
            long n = Long.parseLong(v);
            if (n < 0) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(what + ": `" + v + "` is not a non-negative whole number", e);
        }
    }
}
