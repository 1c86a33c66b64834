package org.alcc.cc.mdi;

import java.io.IOException;
import java.io.InputStream;
import java.util.LinkedHashMap;
import java.util.Map;
import org.alcc.cc.AckSample;
import org.alcc.cc.Controller;
import org.alcc.cc.Decision;
import org.alcc.cc.LossEvent;
import org.alcc.cc.Metrics;
import org.alcc.cc.SentPacket;

/**
 * MDI, a Markov model of another algorithm (the ALCC paper, section 4.3); a port of
 * {@code alcc_cc::mdi::Mdi} that makes the same decisions for the same model, seed and events.
 * Every 5 ms epoch: bucket the change of the epoch's largest RTT, sample the next window-change
 * bucket from the model for the previous state, move the window by that bucket's centre.
 */
public final class Mdi implements Controller {
    /** The initial window, packets. */
    public static final double INITIAL_WINDOW = 10.0;
    /** The smallest window, packets. */
    public static final double MIN_WINDOW = 2.0;
    /** The largest window, packets. */
    public static final double MAX_WINDOW = 1_000_000.0;

    private static MdiModel builtin;

    private final MdiModel model;
    private final long mss;
    private final SplitMix64 uniform;
    private final DelayEpochs epochs = new DelayEpochs();
    private double window = INITIAL_WINDOW;
    private int delayBucket;
    private int windowBucket;
    private double prevDmaxMs = Double.NaN;
    private long nextEpoch = -1;
    private long decisions;
    private long unseen;

    /** A fresh flow on {@code model} with packets of {@code mss} bytes, sampling with {@code seed}. */
    public Mdi(MdiModel model, long seed, long mss) {
        this.model = model;
        this.mss = Math.max(mss, 1);
        this.uniform = new SplitMix64(seed);
        this.delayBucket = model.delay().bucketOf(0.0);
        this.windowBucket = model.window().bucketOf(0.0);
    }

    /** The project's model of our Verus, shipped in the jar (crates/alcc-cc/models/mdi-verus.csv). */
    public static synchronized MdiModel builtinModel() throws IOException {
        if (builtin == null) {
            try (InputStream in = Mdi.class.getResourceAsStream("mdi-verus.csv")) {
                if (in == null) {
                    throw new IOException("the built-in model mdi-verus.csv is missing from the jar");
                }
                builtin = MdiModel.read(in);
            }
        }
        return builtin;
    }

    /** The window in packets. */
    public double windowPackets() {
        return window;
    }

    private void catchUp(long nowUs) {
        if (nextEpoch < 0) {
            nextEpoch = nowUs + DelayEpochs.EPOCH_US;
        } else if (nowUs >= nextEpoch) {
            runEpoch(nowUs);
            long next = nextEpoch + DelayEpochs.EPOCH_US;
            nextEpoch = next <= nowUs ? nowUs + DelayEpochs.EPOCH_US : next;
        }
    }

    private void runEpoch(long nowUs) {
        double dmax = epochs.close(nowUs);
        if (Double.isNaN(dmax)) {
            return;
        }
        double prev = prevDmaxMs;
        prevDmaxMs = dmax;
        if (Double.isNaN(prev)) {
            return;
        }
        int c = model.delay().bucketOf(Buckets.relativeChange(prev, dmax));
        int row = delayBucket * model.window().count() + windowBucket;
        if (!model.seen(row, c)) {
            unseen++;
        }
        int sampled = model.sample(row, c, uniform.nextDouble());
        double old = window;
        double fresh = Math.min(Math.max(Buckets.applyChange(old, model.window().centre(sampled)), MIN_WINDOW), MAX_WINDOW);
        window = fresh;
        delayBucket = c;
        windowBucket = model.window().bucketOf(Buckets.relativeChange(old, fresh));
        decisions++;
    }

    private long windowBytes() {
        return (long) (window * (double) mss);
    }

    @Override
    public String name() {
        return "mdi";
    }

    @Override
    public long onSent(long nowUs, SentPacket packet) {
        catchUp(nowUs);
        return 0;
    }

    @Override
    public void onAck(long nowUs, AckSample ack) {
        catchUp(nowUs);
        epochs.onRtt(nowUs, ack.rttNanos);
    }

    @Override
    public void onLoss(long nowUs, LossEvent loss) {
        catchUp(nowUs);
    }

    @Override
    public void onTimer(long nowUs) {
        catchUp(nowUs);
    }

    @Override
    public long nextTimerUs() {
        return nextEpoch;
    }

    @Override
    public Decision decision() {
        return new Decision(windowBytes(), -1);
    }

    @Override
    public Metrics metrics() {
        Map<String, Double> extra = new LinkedHashMap<>();
        extra.put("window_packets", window);
        extra.put("dmax_ms", prevDmaxMs);
        extra.put("delay_bucket", (double) delayBucket);
        extra.put("window_bucket", (double) windowBucket);
        extra.put("unseen", (double) unseen);
        extra.put("decisions", (double) decisions);
        return new Metrics(windowBytes(), -1, -1, -1, "mdi", extra);
    }
}
