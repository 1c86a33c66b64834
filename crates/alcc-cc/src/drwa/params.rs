//! [`DrwaParams`]: lambda, the smoothing, the window's bounds, and their specification
//! `drwa[:lambda=3,alpha=0.875,floor=5792]`.

use crate::spec::{Params, SpecError};

/// DRWA's parameters; the defaults are the paper's (section 4.1: `alpha = 7/8`; section 4.3:
/// `lambda = 3`).
#[derive(Clone, Debug, PartialEq)]
pub struct DrwaParams {
    /// The target RTT as a multiple of `RTT_min` (section 4.3; the paper's 3).
    pub lambda: f64,
    /// The low-pass filter's weight on the previous window estimate (section 4.1; 7/8).
    pub alpha: f64,
    /// The smallest window (bytes) ever advertised (not in the paper; 4 x 1448).
    pub floor: u64,
    /// The largest window (bytes) ever advertised (not in the paper; the transport sets the
    /// socket's limit with [`Drwa::set_ceiling`](super::Drwa::set_ceiling)).
    pub ceiling: u64,
}

impl Default for DrwaParams {
    fn default() -> DrwaParams {
        DrwaParams { lambda: 3.0, alpha: 7.0 / 8.0, floor: 4 * 1448, ceiling: u64::MAX }
    }
}

impl DrwaParams {
    /// The specification's name.
    pub const NAME: &'static str = "drwa";

    /// Parses `drwa[:lambda=L,alpha=A,floor=BYTES]`: lambda in [0.5, 100], alpha in [0, 1),
    /// floor in [1, 2^30] bytes; anything else is an error naming the parameter.
    pub fn parse(spec: &str) -> Result<DrwaParams, SpecError> {
        let mut params = Params::parse(spec)?;
        if params.name() != Self::NAME {
            return Err(SpecError::UnknownName { name: params.name().to_string(), known: Self::NAME.into() });
        }
        let d = DrwaParams::default();
        let lambda = params.take_f64("lambda", d.lambda, 0.5, 100.0)?;
        let alpha = params.take_f64("alpha", d.alpha, 0.0, 0.999_999)?;
        let floor = params.take_u64("floor", d.floor, 1, 1 << 30)?;
        params.finish()?;
        Ok(DrwaParams { lambda, alpha, floor, ceiling: d.ceiling })
    }

    /// The specification that [`parse`](Self::parse) reads back to these parameters (the
    /// ceiling is the transport's, not part of it).
    pub fn spec(&self) -> String {
        format!("{}:lambda={},alpha={},floor={}", Self::NAME, self.lambda, self.alpha, self.floor)
    }
}
