//! [`Mode`]: how a flow learns what was delivered (DESIGN.md, "Three ways a flow learns what
//! was delivered").

use std::fmt;
use std::str::FromStr;

/// How a flow learns what was delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Server-side only, any TCP client: the kernel's own ACK information (error-queue ACK
    /// timestamps and TCP_INFO); nothing is added on the wire.
    #[default]
    Kernel,
    /// Both ends run alcc: the server sends each chunk in a data frame, the client returns
    /// only the application bytes to its reader and answers with ACK (and report) frames on
    /// the same connection (docs/wire-format.md). Runs receiver-side algorithms (Sprout).
    Framed,
    /// Native: the same frames as UDP datagrams, one per packet, every one acknowledged, no
    /// retransmission (as the reference implementations the paper compared against).
    Udp,
}

impl Mode {
    /// Every mode, in the order of DESIGN.md.
    pub const ALL: [Mode; 3] = [Mode::Kernel, Mode::Framed, Mode::Udp];

    /// Its name on the command line and in the C ABI.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Kernel => "kernel",
            Mode::Framed => "framed",
            Mode::Udp => "udp",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A mode name that is not one of [`Mode::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode `{0}` (kernel, framed, udp)")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Mode, UnknownMode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownMode(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Mode::ALL {
            assert_eq!(m.name().parse::<Mode>(), Ok(m));
            assert_eq!(m.to_string(), m.name());
        }
        assert_eq!(" Framed ".parse::<Mode>(), Ok(Mode::Framed));
        assert_eq!("UDP".parse::<Mode>(), Ok(Mode::Udp));
        assert_eq!("tcp".parse::<Mode>(), Err(UnknownMode("tcp".into())));
        assert_eq!(Mode::default(), Mode::Kernel);
    }
}
