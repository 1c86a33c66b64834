//! The host manager's protocol (docs/coupled-flows.md "The host manager"): tiny, binary,
//! fixed-size messages on a Unix stream socket, all numbers little-endian. A member (an alcc
//! process) names its group once, then reports its flows; the manager answers every report
//! with that flow's share.
//!
//! | type | direction | body | bytes |
//! | --- | --- | --- | --- |
//! | 1 `Hello` | member → manager | name length `n` (u8, 1..=64), `n` bytes of name | 2 + n |
//! | 2 `Join` | member → manager | flow (u32), weight (f64), calculated rate (f64, bytes/s) | 21 |
//! | 3 `Change` | member → manager | flow (u32), the controller's change since the last report (f64, bytes/s) | 13 |
//! | 4 `Weight` | member → manager | flow (u32), weight (f64) | 13 |
//! | 5 `Leave` | member → manager | flow (u32) | 5 |
//! | 129 `Share` | manager → member | flow (u32), share (f64, bytes/s), the group's mean rate (f64, bytes/s) | 21 |
//!
//! [`Decoder`] reads them from a byte stream; anything else (an unknown type, a name that is
//! not a group name, a weight not finite and above zero, a rate not finite and at least zero,
//! a change not finite) is a [`ProtocolError`], after which the connection is closed.

use super::grouping::{Grouping, MAX_GROUP_NAME};

/// The longest message, bytes (a `Hello` with the longest name).
pub const MAX_MESSAGE: usize = 2 + MAX_GROUP_NAME;

/// One message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// The member's group (once, first).
    Hello {
        /// The group name (as [`Grouping::Named`] accepts it).
        group: String,
    },
    /// A flow joins with its weight and its controller's calculated rate.
    Join {
        /// The member's number for the flow.
        flow: u32,
        /// Its priority weight.
        weight: f64,
        /// Its controller's rate, bytes/s.
        rate: f64,
    },
    /// The flow's controller changed its rate by this much since the last report.
    Change {
        /// The flow.
        flow: u32,
        /// Bytes/s, either sign.
        change: f64,
    },
    /// The flow's weight changed.
    Weight {
        /// The flow.
        flow: u32,
        /// Its new weight.
        weight: f64,
    },
    /// The flow ended.
    Leave {
        /// The flow.
        flow: u32,
    },
    /// The manager's answer: the flow's share and the group's mean rate (aggregate over flows),
    /// which its controller continues from.
    Share {
        /// The flow.
        flow: u32,
        /// Bytes/s.
        share: f64,
        /// Bytes/s.
        mean: f64,
    },
}

/// A message that breaks the protocol.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProtocolError {
    /// An unknown message type.
    #[error("unknown message type {0}")]
    UnknownType(u8),
    /// A `Hello` whose name is not a group name.
    #[error("bad group name")]
    BadName,
    /// A weight, rate or change out of range.
    #[error("bad number {0} in a {1} message")]
    BadNumber(f64, &'static str),
}

impl Message {
    /// The message's bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Message::Hello { group } => {
                out.push(1);
                out.push(group.len() as u8);
                out.extend_from_slice(group.as_bytes());
            }
            Message::Join { flow, weight, rate } => {
                out.push(2);
                out.extend_from_slice(&flow.to_le_bytes());
                out.extend_from_slice(&weight.to_le_bytes());
                out.extend_from_slice(&rate.to_le_bytes());
            }
            Message::Change { flow, change } => flow_and(out, 3, *flow, *change),
            Message::Weight { flow, weight } => flow_and(out, 4, *flow, *weight),
            Message::Leave { flow } => {
                out.push(5);
                out.extend_from_slice(&flow.to_le_bytes());
            }
            Message::Share { flow, share, mean } => {
                flow_and(out, 129, *flow, *share);
                out.extend_from_slice(&mean.to_le_bytes());
            }
        }
    }
}

fn flow_and(out: &mut Vec<u8>, kind: u8, flow: u32, x: f64) {
    out.push(kind);
    out.extend_from_slice(&flow.to_le_bytes());
    out.extend_from_slice(&x.to_le_bytes());
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn f64_at(b: &[u8], at: usize) -> f64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    f64::from_le_bytes(a)
}

fn weight(w: f64, kind: &'static str) -> Result<f64, ProtocolError> {
    if w.is_finite() && w > 0.0 {
        Ok(w)
    } else {
        Err(ProtocolError::BadNumber(w, kind))
    }
}

/// Decodes one message from the start of `buf`: `Ok(None)` when `buf` holds only part of
/// one, else the message and how many bytes it took.
pub fn decode(buf: &[u8]) -> Result<Option<(Message, usize)>, ProtocolError> {
    let Some(&kind) = buf.first() else { return Ok(None) };
    let len = match kind {
        1 => match buf.get(1) {
            None => return Ok(None),
            Some(&n) if n == 0 || usize::from(n) > MAX_GROUP_NAME => return Err(ProtocolError::BadName),
            Some(&n) => 2 + usize::from(n),
        },
        2 | 129 => 21,
        3 | 4 => 13,
        5 => 5,
        other => return Err(ProtocolError::UnknownType(other)),
    };
    if buf.len() < len {
        return Ok(None);
    }
    let b = &buf[..len];
    let msg = match kind {
        1 => {
            let name = std::str::from_utf8(&b[2..]).map_err(|_| ProtocolError::BadName)?;
            match name.parse::<Grouping>() {
                Ok(Grouping::Named(group)) => Message::Hello { group },
                _ => return Err(ProtocolError::BadName),
            }
        }
        2 => {
            let rate = f64_at(b, 13);
            if !(rate.is_finite() && rate >= 0.0) {
                return Err(ProtocolError::BadNumber(rate, "join"));
            }
            Message::Join { flow: u32_at(b, 1), weight: weight(f64_at(b, 5), "join")?, rate }
        }
        3 => {
            let change = f64_at(b, 5);
            if !change.is_finite() {
                return Err(ProtocolError::BadNumber(change, "change"));
            }
            Message::Change { flow: u32_at(b, 1), change }
        }
        4 => Message::Weight { flow: u32_at(b, 1), weight: weight(f64_at(b, 5), "weight")? },
        5 => Message::Leave { flow: u32_at(b, 1) },
        _ => {
            let (share, mean) = (f64_at(b, 5), f64_at(b, 13));
            for x in [share, mean] {
                if !(x.is_finite() && x >= 0.0) {
                    return Err(ProtocolError::BadNumber(x, "share"));
                }
            }
            Message::Share { flow: u32_at(b, 1), share, mean }
        }
    };
    Ok(Some((msg, len)))
}

/// Reads messages from a byte stream fed in pieces.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    /// An empty decoder.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Adds received bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole message, if one is buffered.
    pub fn next_message(&mut self) -> Result<Option<Message>, ProtocolError> {
        match decode(&self.buf)? {
            None => Ok(None),
            Some((msg, used)) => {
                self.buf.drain(..used);
                Ok(Some(msg))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips_in_any_split() {
        let msgs = vec![
            Message::Hello { group: "video-1".into() },
            Message::Join { flow: 7, weight: 2.5, rate: 1e6 },
            Message::Change { flow: 7, change: -1234.5 },
            Message::Weight { flow: 7, weight: 4.0 },
            Message::Leave { flow: 7 },
            Message::Share { flow: 9, share: 3e5, mean: 2e5 },
        ];
        let mut bytes = Vec::new();
        for m in &msgs {
            m.encode(&mut bytes);
        }
        for split in 0..bytes.len() {
            let mut d = Decoder::new();
            let mut got = Vec::new();
            for part in [&bytes[..split], &bytes[split..]] {
                d.feed(part);
                while let Some(m) = d.next_message().unwrap() {
                    got.push(m);
                }
            }
            assert_eq!(got, msgs, "split at {split}");
        }
    }

    #[test]
    fn garbage_is_an_error() {
        assert_eq!(decode(&[0]), Err(ProtocolError::UnknownType(0)));
        assert_eq!(decode(b"GET / HTTP/1.1"), Err(ProtocolError::UnknownType(b'G')));
        assert_eq!(decode(&[1, 0]), Err(ProtocolError::BadName));
        assert_eq!(decode(&[1, 200]), Err(ProtocolError::BadName));
        assert_eq!(decode(&[1, 3, b'a', b' ', b'b']), Err(ProtocolError::BadName));
        assert_eq!(
            decode(&[1, 4, b'a', b'u', b't', b'o']),
            Err(ProtocolError::BadName),
            "auto is not a name"
        );
        let mut b = Vec::new();
        Message::Join { flow: 1, weight: 0.0, rate: 1.0 }.encode(&mut b);
        assert!(matches!(decode(&b), Err(ProtocolError::BadNumber(..))));
        let mut b = Vec::new();
        Message::Change { flow: 1, change: f64::NAN }.encode(&mut b);
        assert!(matches!(decode(&b), Err(ProtocolError::BadNumber(..))));
        assert_eq!(decode(&[3, 1, 2]), Ok(None), "a partial message waits");
    }
}
