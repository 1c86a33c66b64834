package org.alcc.cc;

/**
 * A sender-side congestion controller, as {@code alcc_cc::Controller} in the Rust crate: time
 * comes in as {@code nowUs} (microseconds on a clock the caller chooses, never decreasing), and
 * the decision is read back with {@link #decision()}. Not thread-safe: the caller serialises
 * calls.
 */
public interface Controller {
    /** {@link #nextTimerUs()} when the controller wants no timer. */
    long NO_TIMER = -1;

    /** The algorithm's registry name ({@code "copa"}, {@code "mdi"}). */
    String name();

    /** A chunk was sent; the returned memo comes back in its {@link AckSample} or {@link LossEvent}. */
    long onSent(long nowUs, SentPacket packet);

    /** A chunk was acknowledged. */
    void onAck(long nowUs, AckSample ack);

    /** A chunk was declared lost. */
    void onLoss(long nowUs, LossEvent loss);

    /** The deadline {@link #nextTimerUs()} asked for has passed. */
    void onTimer(long nowUs);

    /** When the controller next wants {@link #onTimer}, in µs, or {@link #NO_TIMER}. */
    long nextTimerUs();

    /** The current window and pacing rate. */
    Decision decision();

    /** A snapshot for telemetry and applications. */
    Metrics metrics();
}
