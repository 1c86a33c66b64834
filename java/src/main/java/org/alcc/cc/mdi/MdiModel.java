package org.alcc.cc.mdi;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * An MDI model in the published CSV format (port of {@code alcc_cc::mdi::model}): a header of
 * eight integers, then the {@code N x N} matrix, {@code N = numW x numD}. Unseen situations
 * (an all-zero block) use the nearest seen state's block, chosen once at load.
 */
public final class MdiModel {
    /** How far a block's sum may be from 1. */
    public static final double BLOCK_SUM_TOLERANCE = 1e-3;

    private final Buckets window;
    private final Buckets delay;
    private final double[] probs;
    private final int[] sourceRow;
    private final int[] sourceBlock;

    private MdiModel(Buckets window, Buckets delay, double[] probs) {
        this.window = window;
        this.delay = delay;
        this.probs = probs;
        int n = states();
        int nw = window.count();
        int nd = delay.count();
        for (int row = 0; row < n; row++) {
            int line = row + 2;
            for (int c = 0; c < nd; c++) {
                double sum = 0.0;
                for (int w = 0; w < nw; w++) {
                    double v = probs[row * n + c * nw + w];
                    if (!(v >= 0.0 && v <= 1.0)) {
                        throw new IllegalArgumentException("line " + line + ": probability " + v + " is not within [0, 1]");
                    }
                    sum += v;
                }
                if (sum != 0.0 && Math.abs(sum - 1.0) > BLOCK_SUM_TOLERANCE) {
                    throw new IllegalArgumentException("line " + line + ": block " + c + " (delay bucket " + c + ") sums to " + sum
                            + ", not to 0 or 1");
                }
            }
        }
        sourceRow = new int[n * nd];
        sourceBlock = new int[n * nd];
        nearestSeen();
    }

    /** Reads a model; errors name the line. */
    public static MdiModel read(InputStream in) throws IOException {
        BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        String header = reader.readLine();
        if (header == null) {
            throw new IllegalArgumentException("empty file: expected a header of eight integers");
        }
        String[] h = header.split(",", -1);
        if (h.length != 8) {
            throw new IllegalArgumentException("line 1: header has " + h.length + " values, expected eight");
        }
        long[] v = new long[8];
        for (int i = 0; i < 8; i++) {
            try {
                v[i] = Long.parseLong(h[i].trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("line 1: header value `" + h[i] + "` is not an integer", e);
            }
        }
        Buckets window;
        Buckets delay;
        try {
            window = Buckets.of(v[0], v[1], v[2], v[3]);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("line 1: window buckets: " + e.getMessage(), e);
        }
        try {
            delay = Buckets.of(v[4], v[5], v[6], v[7]);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("line 1: delay buckets: " + e.getMessage(), e);
        }
        int n = window.count() * delay.count();
        List<double[]> rows = new ArrayList<>();
        String text;
        int line = 1;
        while ((text = reader.readLine()) != null) {
            line++;
            if (text.trim().isEmpty()) {
                continue;
            }
            if (rows.size() == n) {
                throw new IllegalArgumentException("line " + line + ": more than the " + n + " matrix rows the header announces");
            }
            String[] fields = text.split(",", -1);
            if (fields.length != n) {
                throw new IllegalArgumentException("line " + line + ": " + fields.length + " values, expected " + n);
            }
            double[] row = new double[n];
            for (int i = 0; i < n; i++) {
                try {
                    row[i] = Double.parseDouble(fields[i].trim());
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("line " + line + ": `" + fields[i] + "` is not a number", e);
                }
            }
            rows.add(row);
        }
        if (rows.size() != n) {
            throw new IllegalArgumentException(rows.size() + " matrix rows, the header announces " + n);
        }
        double[] probs = new double[n * n];
        for (int r = 0; r < n; r++) {
            System.arraycopy(rows.get(r), 0, probs, r * n, n);
        }
        return new MdiModel(window, delay, probs);
    }

    /** The window-change buckets. */
    public Buckets window() {
        return window;
    }

    /** The delay-change buckets. */
    public Buckets delay() {
        return delay;
    }

    /** Number of states. */
    public int states() {
        return window.count() * delay.count();
    }

    /** Whether training saw previous state {@code row} followed by delay bucket {@code c}. */
    public boolean seen(int row, int c) {
        int nw = window.count();
        int start = row * states() + c * nw;
        for (int w = 0; w < nw; w++) {
            if (probs[start + w] > 0.0) {
                return true;
            }
        }
        return false;
    }

    /** The next window bucket for {@code row}, {@code c} and a uniform {@code u} in [0, 1). */
    public int sample(int row, int c, double u) {
        int i = row * delay.count() + c;
        int nw = window.count();
        int start = sourceRow[i] * states() + sourceBlock[i] * nw;
        double cumulative = 0.0;
        int lastNonzero = 0;
        for (int w = 0; w < nw; w++) {
            double p = probs[start + w];
            if (p > 0.0) {
                cumulative += p;
                lastNonzero = w;
                if (u < cumulative) {
                    return w;
                }
            }
        }
        return lastNonzero;
    }

    private void nearestSeen() {
        int nw = window.count();
        int nd = delay.count();
        int n = states();
        boolean[] blockHasData = new boolean[nd];
        boolean any = false;
        for (int c = 0; c < nd; c++) {
            for (int r = 0; r < n && !blockHasData[c]; r++) {
                blockHasData[c] = seen(r, c);
            }
            any |= blockHasData[c];
        }
        if (!any) {
            throw new IllegalArgumentException("every block is empty: the model has no transitions");
        }
        for (int row = 0; row < n; row++) {
            int d = row / nw;
            int w = row % nw;
            for (int c = 0; c < nd; c++) {
                int used = -1;
                for (int b = 0; b < nd; b++) {
                    if (blockHasData[b] && (used < 0 || Math.abs(b - c) < Math.abs(used - c))) {
                        used = b;
                    }
                }
                int best = -1;
                int bestDistance = Integer.MAX_VALUE;
                for (int r = 0; r < n; r++) {
                    if (!seen(r, used)) {
                        continue;
                    }
                    int distance = Math.abs(r / nw - d) + Math.abs(r % nw - w);
                    if (distance < bestDistance) {
                        best = r;
                        bestDistance = distance;
                    }
                }
                sourceRow[row * nd + c] = best;
                sourceBlock[row * nd + c] = used;
            }
        }
    }
}
