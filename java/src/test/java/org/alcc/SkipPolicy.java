package org.alcc;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Assumptions;

/**
 * The Java tests' side of alcc's skip policy (the Rust side is crates/alcc-testenv, pytest's
 * python/tests/skip_policy.py, the shell's scripts/skip.sh): a test that cannot run here calls
 * {@link #skip}, which
 *
 * <ul>
 *   <li>fails the test when {@code CI} is set to anything but empty, {@code 0} or {@code false}
 *       ({@code .ci/run} sets {@code CI=true});
 *   <li>otherwise appends {@code java::TEST<TAB>reason} to {@code $ALCC_SKIP_LOG} when it is set
 *       ({@code make test} lists every skip at its end) and aborts the test (JUnit's skip).
 * </ul>
 */
final class SkipPolicy {
    private SkipPolicy() {}

    /** Whether a skip is a failure here. */
    static boolean strict() {
        String v = System.getenv("CI");
        return v != null && !(v.isEmpty() || v.equals("0") || v.equalsIgnoreCase("false"));
    }

    /** Records that {@code test} cannot run here because of {@code reason}; never returns. */
    static void skip(String test, String reason) {
        String why = reason.replace('\n', ' ').replace('\t', ' ');
        if (strict()) {
            fail(test + " cannot run here: " + why + " (a skip is a failure when CI is set)");
        }
        String log = System.getenv("ALCC_SKIP_LOG");
        if (log != null && !log.isEmpty()) {
            String line = "java::" + test + "\t" + why + "\n";
            try {
                Files.write(
                        Paths.get(log),
                        line.getBytes(StandardCharsets.UTF_8),
                        StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
            } catch (IOException e) {
                fail("cannot append to ALCC_SKIP_LOG " + log + ": " + e);
            }
        }
        System.err.println("SKIPPED java::" + test + ": " + why);
        Assumptions.abort(why);
    }
}
