package org.alcc.tools;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Locale;
import org.alcc.AlccSocket;
import org.alcc.FlowMetrics;

/**
 * Sends from the accepting end, for comparing this library's sender with the Rust engine's
 * in the direction the engine serves today ({@code alcc get --mode framed} receives):
 * {@code java -cp alcc-upload.jar org.alcc.tools.Send --port P [--seconds S | --bytes N] [--cc SPEC]}.
 * Accepts one connection, sends zeros for S seconds or N bytes, closes, prints one JSON line.
 */
public final class Send {
    private Send() {}

    /** Runs the sender; exit status 2 for bad arguments, 1 for a failed transfer. */
    public static void main(String[] args) {
        try {
            AlccSocket.Options o = new AlccSocket.Options();
            int port = -1;
            long bytes = -1;
            double seconds = -1;
            for (int i = 0; i + 1 < args.length; i += 2) {
                String v = args[i + 1];
                switch (args[i]) {
                    case "--port":
                        port = Integer.parseInt(v);
                        break;
                    case "--bytes":
                        bytes = Long.parseLong(v);
                        break;
                    case "--seconds":
                        seconds = Double.parseDouble(v);
                        break;
                    case "--cc":
                        o.cc = v;
                        break;
                    default:
                        throw new IllegalArgumentException("unknown option " + args[i]);
                }
            }
            if (port < 0 || (bytes < 0) == (seconds < 0) || args.length % 2 != 0) {
                throw new IllegalArgumentException("usage: Send --port P (--seconds S | --bytes N) [--cc SPEC]");
            }
            FlowMetrics m;
            long start;
            try (ServerSocket server = new ServerSocket(port, 1, InetAddress.getByName("0.0.0.0"))) {
                AlccSocket s = AlccSocket.accept(server, o);
                start = System.nanoTime();
                byte[] buf = new byte[64 * 1024];
                long sent = 0;
                long end = seconds < 0 ? Long.MAX_VALUE : start + (long) (seconds * 1e9);
                try {
                    while ((bytes < 0 || sent < bytes) && System.nanoTime() < end) {
                        int n = (int) Math.min(buf.length, bytes < 0 ? buf.length : bytes - sent);
                        s.write(buf, 0, n);
                        sent += n;
                    }
                } finally {
                    s.close();
                }
                m = s.metrics();
            }
            double secs = (System.nanoTime() - start) / 1e9;
            System.out.println(String.format(Locale.ROOT, "{\"bytes\":%d,\"seconds\":%.3f,\"mbps\":%.3f,\"cc\":\"%s\"}",
                    m.bytesAcked, secs, m.bytesAcked * 8 / secs / 1e6, o.cc));
        } catch (IllegalArgumentException e) {
            System.err.println("Send: " + e.getMessage());
            System.exit(2);
        } catch (IOException e) {
            System.err.println("Send: " + e.getMessage());
            System.exit(1);
        }
    }
}
