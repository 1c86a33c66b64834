package org.alcc.cc.copa;

import java.util.LinkedHashMap;
import java.util.Map;
import org.alcc.cc.AckSample;
import org.alcc.cc.Controller;
import org.alcc.cc.Decision;
import org.alcc.cc.Durations;
import org.alcc.cc.LossEvent;
import org.alcc.cc.Metrics;
import org.alcc.cc.SentPacket;

/**
 * Copa (Arun and Balakrishnan, NSDI 2018), a port of {@code alcc_cc::copa::Copa} that makes
 * the same decisions on the same events (checked against the shared vectors in
 * {@code testdata/vectors}). The window moves towards {@code RTTstanding / (delta x dq)}
 * packets by {@code v / (delta x cwnd)} per ACKed packet, paced at {@code 2 x cwnd / RTTstanding};
 * the mode switch is the authors' ({@link ModePolicy#NO_CHECK}, the default); with
 * {@link ModePolicy#DRAIN} competitive mode drains its own queue now and then to check for a
 * competitor ({@link DrainCheck});
 * the window lets {@code ceil(cwnd)} packets be in flight, as the authors' sender does
 * ({@link FlightGate}).
 */
public final class Copa implements Controller {
    /** The initial window, packets. */
    public static final double INITIAL_CWND = 10.0;
    /** The smallest window, packets. */
    public static final double MIN_CWND = 2.0;
    /** ACKed packets before the window moves. */
    public static final long WARMUP_PACKETS = 20;
    /** With no ACK for this long (µs), Copa starts over. */
    public static final long RESET_AFTER_US = 2_000_000;
    /** The default delta. */
    public static final double DEFAULT_DELTA = 0.5;
    /** Pacing sends this many windows per standing RTT. */
    public static final double PACING_GAIN = 2.0;
    private static final long MAX_EXACT_STEPS = 1024;

    private final long mss;
    private final double defaultDelta;
    private final ModePolicy policy;
    private final FlightGate gate;
    private double cwnd = INITIAL_CWND;
    private boolean slowStart = true;
    private long ackedPackets;
    private long lastAck = -1;
    private RttHistory rtt = new RttHistory();
    private RoundClock round = new RoundClock();
    private Velocity velocity = new Velocity(INITIAL_CWND);
    private DeltaControl delta;
    private DrainCheck drain = new DrainCheck();
    private LossRule loss = new LossRule();
    private long standingRtt = -1;
    private double target = Double.POSITIVE_INFINITY;

    /**
     * A fresh flow: packets of {@code mss} bytes, {@code delta} (0.001 to 10), and the mode
     * policy ({@link ModePolicy}: {@code mode=nocheck}, the authors' switch and the default;
     * {@code mode=drain}; {@code mode=default}); the reference sender's flight gate.
     */
    public Copa(long mss, double delta, ModePolicy policy) {
        this(mss, delta, policy, FlightGate.REFERENCE);
    }

    /** As {@link #Copa(long, double, ModePolicy)}, with the flight gate {@code gate}. */
    public Copa(long mss, double delta, ModePolicy policy, FlightGate gate) {
        this.mss = Math.max(mss, 1);
        this.defaultDelta = delta;
        this.policy = policy;
        this.gate = gate;
        this.delta = new DeltaControl(policy, delta);
    }

    /** The window target {@code RTTstanding / (delta x dq)} packets; infinite when dq is 0. */
    static double targetWindow(long standing, long minRtt, double delta) {
        double s = Durations.secs(standing);
        double dq = s - Durations.secs(minRtt);
        return dq <= 0.0 ? Double.POSITIVE_INFINITY : s / (delta * dq);
    }

    /** The window in packets. */
    public double cwnd() {
        return cwnd;
    }

    private void reset() {
        cwnd = INITIAL_CWND;
        slowStart = true;
        ackedPackets = 0;
        lastAck = -1;
        rtt = new RttHistory();
        round = new RoundClock();
        velocity = new Velocity(INITIAL_CWND);
        delta = new DeltaControl(policy, defaultDelta);
        drain = new DrainCheck();
        loss = new LossRule();
        standingRtt = -1;
        target = Double.POSITIVE_INFINITY;
    }

    private long packets(long bytes) {
        long p = (bytes + mss - 1) / mss;
        return Math.max(p, 1);
    }

    private void updateWindow(long packets) {
        double d = delta.delta();
        if (slowStart) {
            if (cwnd < target) {
                cwnd += (double) packets;
            } else {
                slowStart = false;
                velocity = new Velocity(cwnd);
            }
            return;
        }
        long exact = Math.min(packets, MAX_EXACT_STEPS);
        for (long i = 0; i < exact; i++) {
            step(d, 1.0);
        }
        if (packets > exact) {
            step(d, (double) (packets - exact));
        }
    }

    private void step(double d, double n) {
        double step = n * velocity.value() / (d * cwnd);
        if (cwnd < target) {
            cwnd += step;
        } else {
            cwnd -= step;
        }
        cwnd = Math.max(cwnd, MIN_CWND);
    }

    private void endOfLossPeriod(long nowUs) {
        long srtt = rtt.srtt() >= 0 ? rtt.srtt() : RESET_AFTER_US * 1000;
        if (loss.endOfPeriod(nowUs, srtt)) {
            cwnd = Math.max(cwnd * LossRule.DECREASE, MIN_CWND);
            if (slowStart) {
                slowStart = false;
                velocity = new Velocity(cwnd);
            }
        }
    }

    @Override
    public String name() {
        return "copa";
    }

    @Override
    public long onSent(long nowUs, SentPacket packet) {
        return 0;
    }

    @Override
    public void onAck(long nowUs, AckSample ack) {
        if (lastAck >= 0 && nowUs >= lastAck + RESET_AFTER_US) {
            reset();
        }
        lastAck = nowUs;
        long packets = packets(ack.bytes);
        rtt.onSample(nowUs, ack.rttNanos);
        loss.onAck(nowUs, packets);
        ackedPackets += packets;
        long srtt = rtt.srtt();
        long minRtt = rtt.minRtt();
        long standing = rtt.standingRtt(nowUs);
        if (srtt < 0 || minRtt < 0 || standing < 0) {
            return;
        }
        standingRtt = standing;
        long lo = rtt.recentMin(nowUs);
        long hi = rtt.recentMax(nowUs);
        if (drain.endsWith(ack.sentAtUs)) {
            if (lo >= 0 && hi >= 0 && DeltaControl.queueEmptied(lo, hi, minRtt)) {
                delta.onQueueEmptied();
            } else {
                drain.onCompetitor(nowUs, rtt.minRttWindow());
            }
        }
        if (lo >= 0 && hi >= 0) {
            delta.onAck(lo, hi, minRtt);
        }
        target = targetWindow(standing, minRtt, delta.delta());
        if (ackedPackets > WARMUP_PACKETS && !drain.holds()) {
            updateWindow(packets);
        }
        if (round.tick(nowUs, srtt)) {
            if (!slowStart) {
                velocity.onRound(cwnd, delta.delta());
            }
            if (lo >= 0 && hi >= 0) {
                delta.onRound(lo, hi, minRtt);
            }
        }
        if (!delta.competitive()) {
            drain.onDefault();
        } else if (policy.checksByDraining()) {
            drain.onCompetitive(nowUs, rtt.modeSpan());
        }
        if (drain.startIfDue(nowUs)) {
            cwnd = Math.max(DrainCheck.pipeWindow(cwnd, minRtt, standing), MIN_CWND);
        }
        endOfLossPeriod(nowUs);
    }

    @Override
    public void onLoss(long nowUs, LossEvent lossEvent) {
        long packets = packets(lossEvent.bytes);
        loss.onLoss(nowUs, packets);
        long srtt = Math.max(rtt.srtt(), 0);
        delta.onLoss(nowUs, srtt);
        endOfLossPeriod(nowUs);
    }

    @Override
    public void onTimer(long nowUs) {
        if (lastAck >= 0 && nowUs >= lastAck + RESET_AFTER_US) {
            reset();
        }
    }

    @Override
    public long nextTimerUs() {
        return lastAck >= 0 ? lastAck + RESET_AFTER_US : NO_TIMER;
    }

    @Override
    public Decision decision() {
        return new Decision(windowBytes(), pacingRate());
    }

    /** The bytes that may be in flight: the gate's; the window itself while a drain holds it. */
    private long windowBytes() {
        double packets = drain.holds() ? cwnd : gate.flight(cwnd);
        return (long) (packets * (double) mss);
    }

    private long pacingRate() {
        if (standingRtt < 0) {
            return -1;
        }
        double s = Durations.secs(standingRtt);
        if (s <= 0.0) {
            return -1;
        }
        double rate = PACING_GAIN * cwnd * (double) mss / s;
        return Math.max((long) rate, 1);
    }

    @Override
    public Metrics metrics() {
        String state = slowStart ? "slow_start" : delta.competitive() ? "competitive" : "default";
        Map<String, Double> extra = new LinkedHashMap<>();
        extra.put("cwnd_packets", cwnd);
        extra.put("target_packets", target);
        extra.put("velocity", velocity.value());
        extra.put("delta", delta.delta());
        extra.put("standing_rtt_ms", standingRtt < 0 ? Double.NaN : Durations.secs(standingRtt) * 1e3);
        extra.put("draining", drain.holds() ? 1.0 : 0.0);
        return new Metrics(windowBytes(), pacingRate(), rtt.srtt(), rtt.minRtt(), state, extra);
    }
}
