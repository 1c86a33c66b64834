//! The text forms of the simulator's queue limit and acknowledgement policy, as `alcc sim
//! --queue/--acks`, `alcc mdi` and the Python package's `alcc.sim(queue=..., acks=...)` accept
//! them: `packets=N`, `bytes=N` or `infinite`; `every`, `delayed` or `stretch=N`.

use std::str::FromStr;

use thiserror::Error;

use crate::sim::ack::{AckPolicy, DelayedAcks};
use crate::sim::bottleneck::QueueLimit;

/// Why a queue or acknowledgement spec was refused; the message names the text.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ParseSimSpecError {
    /// The queue is none of `packets=N`, `bytes=N`, `infinite`.
    #[error("queue must be packets=N, bytes=N or infinite, not `{0}`")]
    QueueForm(String),
    /// The queue's size is not a whole number, or is 0.
    #[error("queue size `{0}` is not a whole number of at least 1")]
    QueueSize(String),
    /// The acknowledgement policy is none of `every`, `delayed`, `stretch=N`.
    #[error("acks must be every, delayed or stretch=N, not `{0}`")]
    AckForm(String),
    /// The stretch factor is not a whole number, or is 0.
    #[error("acks stretch=`{0}` is not a whole number of at least 1")]
    AckStretch(String),
}

/// A whole number of at least 1, or `None`.
fn positive<T: FromStr + PartialEq + From<u8>>(text: &str) -> Option<T> {
    text.parse().ok().filter(|n| *n != T::from(0))
}

impl FromStr for QueueLimit {
    type Err = ParseSimSpecError;

    /// `packets=N`, `bytes=N` (N >= 1) or `infinite`.
    fn from_str(text: &str) -> Result<QueueLimit, ParseSimSpecError> {
        if text == "infinite" {
            return Ok(QueueLimit::Infinite);
        }
        let (kind, value) = text.split_once('=').ok_or_else(|| ParseSimSpecError::QueueForm(text.into()))?;
        let limit = match kind {
            "packets" => QueueLimit::Packets,
            "bytes" => QueueLimit::Bytes,
            _ => return Err(ParseSimSpecError::QueueForm(text.into())),
        };
        positive(value).map(limit).ok_or_else(|| ParseSimSpecError::QueueSize(value.into()))
    }
}

impl FromStr for AckPolicy {
    type Err = ParseSimSpecError;

    /// `every`, `delayed` (Linux's delayed ACKs) or `stretch=N` (N >= 1: the same rules, every
    /// N-th packet).
    fn from_str(text: &str) -> Result<AckPolicy, ParseSimSpecError> {
        match text {
            "every" => Ok(AckPolicy::EveryPacket),
            "delayed" => Ok(AckPolicy::Delayed(DelayedAcks::linux())),
            _ => {
                let n =
                    text.strip_prefix("stretch=").ok_or_else(|| ParseSimSpecError::AckForm(text.into()))?;
                let every = positive(n).ok_or_else(|| ParseSimSpecError::AckStretch(n.into()))?;
                Ok(AckPolicy::Delayed(DelayedAcks::stretched(every)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_parse_and_bad_ones_name_the_text() {
        assert_eq!("infinite".parse(), Ok(QueueLimit::Infinite));
        assert_eq!("packets=100".parse(), Ok(QueueLimit::Packets(100)));
        assert_eq!("bytes=150000".parse(), Ok(QueueLimit::Bytes(150_000)));
        assert_eq!("packets=0".parse::<QueueLimit>(), Err(ParseSimSpecError::QueueSize("0".into())));
        assert_eq!("packets=1.5".parse::<QueueLimit>(), Err(ParseSimSpecError::QueueSize("1.5".into())));
        assert_eq!("frames=3".parse::<QueueLimit>(), Err(ParseSimSpecError::QueueForm("frames=3".into())));
        let message = "100".parse::<QueueLimit>().unwrap_err().to_string();
        assert!(message.contains("`100`"), "{message}");
    }

    #[test]
    fn ack_policies_parse_and_bad_ones_name_the_text() {
        assert_eq!("every".parse(), Ok(AckPolicy::EveryPacket));
        assert_eq!("delayed".parse(), Ok(AckPolicy::Delayed(DelayedAcks::linux())));
        assert_eq!("stretch=8".parse(), Ok(AckPolicy::Delayed(DelayedAcks::stretched(8))));
        assert_eq!("stretch=0".parse::<AckPolicy>(), Err(ParseSimSpecError::AckStretch("0".into())));
        assert_eq!("stretch=x".parse::<AckPolicy>(), Err(ParseSimSpecError::AckStretch("x".into())));
        assert_eq!("sometimes".parse::<AckPolicy>(), Err(ParseSimSpecError::AckForm("sometimes".into())));
    }
}
