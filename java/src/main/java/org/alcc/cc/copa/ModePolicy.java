package org.alcc.cc.copa;

/**
 * Whether Copa may leave the default mode, and how it finds its way back, as
 * {@code alcc_cc::copa::mode::ModePolicy}: {@link #NO_CHECK} ({@code mode=nocheck}, the default)
 * switches as the authors' sender does; {@link #DRAIN} ({@code mode=drain}, earlier name
 * {@code mode=auto}) adds our drain check ({@link DrainCheck}); {@link #DEFAULT}
 * ({@code mode=default}) keeps delta fixed.
 */
public enum ModePolicy {
    /** Always the default mode, delta fixed. */
    DEFAULT,
    /** The authors' switch: back to the default mode only when the queue empties by itself. */
    NO_CHECK,
    /** The authors' switch plus the drain check in the competitive mode (our addition). */
    DRAIN;

    /** Whether the competitive mode may be entered. */
    public boolean switches() {
        return this != DEFAULT;
    }

    /** Whether the competitive mode drains Copa's own queue to look for a competitor. */
    public boolean checksByDraining() {
        return this == DRAIN;
    }
}
