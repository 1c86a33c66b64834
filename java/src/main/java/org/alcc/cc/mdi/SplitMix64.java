package org.alcc.cc.mdi;

/**
 * SplitMix64 (Steele, Lea and Flood, OOPSLA 2014), the generator MDI samples with in both
 * languages ({@code alcc_cc::mdi::sampler}): state += 0x9E3779B97F4A7C15, then Stafford's mix 13.
 * {@code java.util.SplittableRandom} computes the same stream but arrived in Android API 24.
 */
public final class SplitMix64 {
    private long state;

    /** The stream for {@code seed} (an unsigned 64-bit value in a long). */
    public SplitMix64(long seed) {
        this.state = seed;
    }

    /** The next 64-bit output. */
    public long nextLong() {
        state += 0x9E3779B97F4A7C15L;
        long z = state;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** The next double in [0, 1): the top 53 bits times 2^-53. */
    public double nextDouble() {
        return (double) (nextLong() >>> 11) * 0x1.0p-53;
    }
}
