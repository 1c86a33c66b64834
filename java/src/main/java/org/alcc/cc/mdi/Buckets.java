package org.alcc.cc.mdi;

/**
 * MDI's scaled relative changes and their buckets (port of {@code alcc_cc::mdi::buckets}):
 * {@code x = ((new / old) x 100 - 100) x log10(max(old, 2))}, bucket {@code b} covering
 * {@code [min + b x step, min + (b + 1) x step)}, changes outside the range in the edge buckets.
 */
public final class Buckets {
    /** The smallest value whose logarithm weighs a change. */
    public static final double SCALE_FLOOR = 2.0;
    /** The most buckets one variable may have. */
    public static final int MAX_COUNT = 256;

    private final int count;
    private final int min;
    private final int step;

    private Buckets(int count, int min, int step) {
        this.count = count;
        this.min = min;
        this.step = step;
    }

    /** Checks and builds a layout; {@code max} must be {@code min + (count - 1) x step}. */
    public static Buckets of(long count, long min, long max, long step) {
        if (count < 1 || count > MAX_COUNT) {
            throw new IllegalArgumentException("bucket count " + count + " must be between 1 and " + MAX_COUNT);
        }
        if (step <= 0 || step > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("bucket step " + step + " must be positive");
        }
        boolean inInt = min >= Integer.MIN_VALUE && min <= Integer.MAX_VALUE && max >= Integer.MIN_VALUE && max <= Integer.MAX_VALUE;
        if (!inInt || min + (count - 1) * step != max) {
            throw new IllegalArgumentException("bucket range " + min + ".." + max + " with step " + step + " does not give "
                    + count + " buckets (max must be min + (count - 1) x step)");
        }
        return new Buckets((int) count, (int) min, (int) step);
    }

    /** {@code log10(max(old, 2))} (fdlibm's log10, as Rust's on glibc to within rounding). */
    public static double scale(double old) {
        return StrictMath.log10(Math.max(old, SCALE_FLOOR));
    }

    /** The scaled relative change from {@code old} to {@code fresh}; 0 when old is not positive. */
    public static double relativeChange(double old, double fresh) {
        if (old <= 0.0) {
            return 0.0;
        }
        return (fresh / old * 100.0 - 100.0) * scale(old);
    }

    /** The value {@code change} away from {@code old}: {@code old x (1 + change / (100 x log10(old)))}. */
    public static double applyChange(double old, double change) {
        return old * (1.0 + change / (100.0 * scale(old)));
    }

    /** Number of buckets. */
    public int count() {
        return count;
    }

    /** Lower edge of the first bucket. */
    public int min() {
        return min;
    }

    /** Lower edge of the last bucket. */
    public int max() {
        return min + (count - 1) * step;
    }

    /** Width of a bucket. */
    public int step() {
        return step;
    }

    /** The bucket of a change, clamped to the first and last; NaN counts as 0. */
    public int bucketOf(double x) {
        double v = Double.isNaN(x) ? 0.0 : x;
        double b = Math.floor((v - (double) min) / (double) step);
        // Rust's `as usize` saturates, then the clamp.
        long asIndex = b <= 0.0 ? 0 : b >= 9.0e18 ? Long.MAX_VALUE : (long) b;
        return (int) Math.min(asIndex, (long) count - 1);
    }

    /** The centre of bucket {@code b}: {@code min + (b + 0.5) x step}. */
    public double centre(int b) {
        return (double) min + ((double) b + 0.5) * (double) step;
    }
}
