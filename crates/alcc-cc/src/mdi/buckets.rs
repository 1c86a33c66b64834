//! MDI's state variables: relative changes and the buckets they fall into.
//!
//! MDI (the model format of `../shared/mdi/README.md`) describes a change of a value from `old`
//! to `new` by the *scaled relative change* `x = ((new / old) x 100 - 100) x log10(old)`: a
//! percentage, weighted by the order of magnitude of the value, so that one step of a large
//! window counts for more than the same percentage of a small one. A model cuts the axis of
//! `x` into `count` buckets of width `step` whose lower edges run from `min` to `max`.
//!
//! Our choices where the format leaves room (the Java library makes the same ones):
//! - Bucket `b` is `[min + b x step, min + (b + 1) x step)`; a change below `min` falls in
//!   bucket 0 and one at or above `max + step` in the last bucket. The published controller
//!   used hand-tuned window moves for out-of-range delay changes; we let the model decide, as
//!   for the nearest change it has seen. Training buckets the same way, so the edge buckets of
//!   a model trained here hold exactly those extreme changes.
//! - The weight `log10(old)` is taken of `max(old, SCALE_FLOOR)`: windows never go below two
//!   packets, and a delay below 2 ms (only on loopback) would otherwise give a zero or negative
//!   weight.

/// The smallest value whose logarithm weighs a relative change (see the module docs).
pub const SCALE_FLOOR: f64 = 2.0;

/// `log10(max(old, SCALE_FLOOR))`, the weight of a relative change from `old`.
pub fn scale(old: f64) -> f64 {
    old.max(SCALE_FLOOR).log10()
}

/// The scaled relative change from `old` to `new`: `((new / old) x 100 - 100) x log10(old)`.
/// Zero when `old` is not positive (there is no relative change from nothing).
pub fn relative_change(old: f64, new: f64) -> f64 {
    if old <= 0.0 {
        return 0.0;
    }
    (new / old * 100.0 - 100.0) * scale(old)
}

/// The value that is `change` (a scaled relative change) away from `old`: the inverse of
/// [`relative_change`], `old x (1 + change / (100 x log10(old)))`.
pub fn apply_change(old: f64, change: f64) -> f64 {
    old * (1.0 + change / (100.0 * scale(old)))
}

/// How one variable's axis is cut into buckets: `count` buckets of width `step`, lower edges
/// from `min` to `max` (so `max = min + (count - 1) x step`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buckets {
    count: u32,
    min: i32,
    step: u32,
}

/// Why a bucket layout was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BucketError {
    /// Fewer than one bucket or more than [`Buckets::MAX_COUNT`].
    #[error("bucket count {0} must be between 1 and {max}", max = Buckets::MAX_COUNT)]
    Count(i64),
    /// A step of zero or less.
    #[error("bucket step {0} must be positive")]
    Step(i64),
    /// `max` is not the lower edge of the last bucket.
    #[error("bucket range {min}..{max} with step {step} does not give {count} buckets (max must be min + (count - 1) x step)")]
    Range {
        /// Number of buckets given.
        count: i64,
        /// Lower edge of the first bucket.
        min: i64,
        /// Lower edge of the last bucket, as given.
        max: i64,
        /// Width of a bucket.
        step: i64,
    },
}

impl Buckets {
    /// The most buckets one variable may have (a model has `count_w x count_d` states and a
    /// matrix of that many squared entries).
    pub const MAX_COUNT: u32 = 256;

    /// Checks and builds a layout from the header's integers.
    pub fn new(count: i64, min: i64, max: i64, step: i64) -> Result<Buckets, BucketError> {
        if !(1..=i64::from(Self::MAX_COUNT)).contains(&count) {
            return Err(BucketError::Count(count));
        }
        if step <= 0 || step > i64::from(i32::MAX) {
            return Err(BucketError::Step(step));
        }
        let in_i32 = |v: i64| i32::try_from(v).is_ok();
        if !in_i32(min) || !in_i32(max) || min + (count - 1) * step != max {
            return Err(BucketError::Range { count, min, max, step });
        }
        Ok(Buckets { count: count as u32, min: min as i32, step: step as u32 })
    }

    /// Number of buckets.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// Lower edge of the first bucket.
    pub fn min(&self) -> i32 {
        self.min
    }

    /// Lower edge of the last bucket.
    pub fn max(&self) -> i32 {
        self.min + (self.count as i32 - 1) * self.step as i32
    }

    /// Width of one bucket.
    pub fn step(&self) -> u32 {
        self.step
    }

    /// The bucket of a change: `floor((x - min) / step)`, clamped to the first and last bucket.
    /// A NaN change (never produced by [`relative_change`]) counts as no change.
    pub fn bucket_of(&self, x: f64) -> usize {
        let x = if x.is_nan() { 0.0 } else { x };
        let b = ((x - f64::from(self.min)) / f64::from(self.step)).floor();
        // `as` saturates: -inf and huge values land at 0 and at the top before the clamp.
        (b.max(0.0) as usize).min(self.count() - 1)
    }

    /// The centre of bucket `b`: `min + (b + 0.5) x step`, the change the model applies when it
    /// samples that bucket.
    pub fn centre(&self, b: usize) -> f64 {
        f64::from(self.min) + (b as f64 + 0.5) * f64::from(self.step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_change_and_its_inverse() {
        // 100 -> 110: +10 % weighted by log10(100) = 2.
        assert!((relative_change(100.0, 110.0) - 20.0).abs() < 1e-12);
        assert!((apply_change(100.0, 20.0) - 110.0).abs() < 1e-12);
        assert_eq!(relative_change(50.0, 50.0), 0.0);
        assert_eq!(relative_change(0.0, 5.0), 0.0);
        // Below the floor the weight is log10(2).
        let w = 2f64.log10();
        assert!((relative_change(1.0, 2.0) - 100.0 * w).abs() < 1e-12);
        for old in [2.0, 7.5, 40.0, 1234.0] {
            for change in [-57.5, -2.5, 2.5, 62.5] {
                let new = apply_change(old, change);
                assert!((relative_change(old, new) - change).abs() < 1e-9, "{old} {change}");
            }
        }
    }

    #[test]
    fn buckets_clamp_at_both_ends() {
        let b = Buckets::new(25, -60, 60, 5).unwrap();
        assert_eq!((b.count(), b.min(), b.max(), b.step()), (25, -60, 60, 5));
        assert_eq!(b.bucket_of(-60.0), 0);
        assert_eq!(b.bucket_of(-1000.0), 0);
        assert_eq!(b.bucket_of(f64::NEG_INFINITY), 0);
        assert_eq!(b.bucket_of(-0.1), 11);
        assert_eq!(b.bucket_of(0.0), 12);
        assert_eq!(b.bucket_of(4.99), 12);
        assert_eq!(b.bucket_of(60.0), 24);
        assert_eq!(b.bucket_of(64.9), 24);
        assert_eq!(b.bucket_of(1e300), 24);
        assert_eq!(b.bucket_of(f64::NAN), 12);
        assert_eq!(b.centre(0), -57.5);
        assert_eq!(b.centre(12), 2.5);
        assert_eq!(b.centre(24), 62.5);
    }

    #[test]
    fn refuses_inconsistent_layouts() {
        assert!(Buckets::new(9, -25, 15, 5).is_ok());
        assert_eq!(Buckets::new(0, 0, 0, 1), Err(BucketError::Count(0)));
        assert_eq!(Buckets::new(3, 0, 0, 0), Err(BucketError::Step(0)));
        assert!(matches!(Buckets::new(3, -5, 6, 5), Err(BucketError::Range { .. })));
        assert!(matches!(Buckets::new(300, 0, 299, 1), Err(BucketError::Count(300))));
    }
}
