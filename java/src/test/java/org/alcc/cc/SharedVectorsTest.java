package org.alcc.cc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The Java ports make the Rust controllers' decisions: every file in testdata/vectors (written
 * by crates/alcc-cc/tests/shared_vectors.rs) is replayed event by event, and the window, pacing
 * rate and next timer after each event must equal the Rust ones exactly.
 */
class SharedVectorsTest {
    static File repo() {
        String dir = System.getProperty("alcc.repo");
        return new File(dir == null ? ".." : dir);
    }

    @TestFactory
    List<DynamicTest> everyVectorFile() {
        File dir = new File(repo(), "testdata/vectors");
        File[] files = dir.listFiles((d, n) -> n.endsWith(".csv"));
        assertTrue(files != null && files.length >= 5, "no vectors in " + dir);
        List<DynamicTest> tests = new ArrayList<>();
        for (File f : files) {
            tests.add(DynamicTest.dynamicTest(f.getName(), () -> replay(f)));
        }
        return tests;
    }

    private static void replay(File file) throws IOException {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(new FileInputStream(file), StandardCharsets.UTF_8))) {
            String header = r.readLine();
            assertTrue(header.startsWith("# spec="), header);
            String[] parts = header.substring(2).split(" ");
            String spec = parts[0].substring("spec=".length());
            long mss = Long.parseLong(parts[1].substring("mss=".length()));
            // Model paths in the spec are relative to the repository root.
            spec = spec.replace("model=", "model=" + repo().getPath() + "/");
            Controller c = Controllers.build(spec, mss, 1);
            String line;
            int n = 1;
            int events = 0;
            while ((line = r.readLine()) != null) {
                n++;
                String[] f = line.split(",");
                long now = Long.parseLong(f[1]);
                int tail;
                switch (f[0]) {
                    case "sent": {
                        long memo = c.onSent(now, new SentPacket(l(f[2]), l(f[3]), l(f[4])));
                        assertEquals(l(f[5]), memo, at(file, n, "memo"));
                        tail = 6;
                        break;
                    }
                    case "ack":
                        c.onAck(now, new AckSample(l(f[2]), l(f[3]), l(f[4]), l(f[5]), l(f[6]), l(f[7]), l(f[8])));
                        tail = 9;
                        break;
                    case "loss":
                        c.onLoss(now, new LossEvent(l(f[2]), l(f[3]), l(f[4]), l(f[5]), l(f[6])));
                        tail = 7;
                        break;
                    case "timer":
                        c.onTimer(now);
                        tail = 2;
                        break;
                    default:
                        throw new AssertionError(at(file, n, "unknown event " + f[0]));
                }
                Decision d = c.decision();
                assertEquals(l(f[tail]), d.window, at(file, n, "window"));
                assertEquals(l(f[tail + 1]), d.pacingRate, at(file, n, "pacing rate"));
                assertEquals(l(f[tail + 2]), c.nextTimerUs(), at(file, n, "next timer"));
                events++;
            }
            assertTrue(events > 1000, file + ": only " + events + " events");
        }
    }

    private static long l(String s) {
        return Long.parseLong(s);
    }

    private static String at(File f, int line, String what) {
        return f.getName() + " line " + line + ": " + what;
    }
}
