//! Which way an experiment's bytes go (`direction` in the spec): `down` (the server sends
//! through the downlink trace, the default) or `up` (the client sends through the uplink
//! trace to a receiving server, as a phone uploads: issue 17). The emulator measures the
//! direction the data takes: its log, its random loss.

use serde::{Deserialize, Serialize};

use super::scheme::{Download, Kind, Transfer};

/// The measured direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Server to client, through the downlink trace.
    #[default]
    Down,
    /// Client to server, through the uplink trace.
    Up,
}

impl Direction {
    /// The name in the spec and the `direction` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Down => "down",
            Direction::Up => "up",
        }
    }

    /// Whether it is the default (left out of a recorded spec, so that older ones compare
    /// equal).
    pub fn is_down(&self) -> bool {
        *self == Direction::Down
    }

    /// The link that carries the data, as `alcc link` names it.
    pub fn link(self) -> &'static str {
        match self {
            Direction::Down => "downlink",
            Direction::Up => "uplink",
        }
    }

    /// The run directory's packet log of the measured link.
    pub fn log_name(self) -> String {
        format!("{}.log", self.link())
    }

    /// `alcc link`'s option that writes that log.
    pub fn log_flag(self) -> String {
        format!("--{}-log", self.link())
    }

    /// `alcc link`'s option of random loss on the measured link.
    pub fn loss_flag(self) -> String {
        format!("--{}-loss", self.link())
    }

    /// What `kind` runs in this direction, or why it cannot.
    pub fn transfer(self, kind: &dyn Kind) -> Result<Box<dyn Transfer + '_>, String> {
        match self {
            Direction::Down => Ok(Box::new(Download(kind))),
            Direction::Up => kind.upload().map_err(|why| format!("cannot upload: {why}")),
        }
    }

    /// The client script's tail after the transfer: a download waits (up to 10 s) for the
    /// server, the sender, to exit and write its CPU time to `rusage` (shell-quoted); an
    /// upload's sender is the client itself, which wrote it (or has none to write).
    pub fn after_transfer(self, rusage: &str) -> String {
        match self {
            Direction::Down => {
                format!("i=0; while [ ! -e {rusage} ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; ")
            }
            Direction::Up => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::scheme::Scheme;

    #[test]
    fn names_and_the_emulators_options() {
        assert_eq!(Direction::default(), Direction::Down);
        assert_eq!(
            (Direction::Up.log_name(), Direction::Up.log_flag(), Direction::Up.loss_flag()),
            ("uplink.log".to_string(), "--uplink-log".to_string(), "--uplink-loss".to_string())
        );
        assert_eq!(Direction::Down.log_name(), "downlink.log");
        assert_eq!(Direction::Up.after_transfer("/r"), "");
        assert!(Direction::Down.after_transfer("/r").contains("[ ! -e /r ]"));
    }

    #[test]
    fn every_scheme_downloads_and_some_upload() {
        for name in ["tcp-cubic", "alcc-copa", "udp-copa", "ref-copa", "rx-drwa@tcp-cubic", "java-mdi"] {
            let s = Scheme::parse(name).unwrap();
            assert!(Direction::Down.transfer(s.kind()).is_ok(), "{name}");
        }
        for name in ["tcp-reno", "alcc-mdi@reno", "alcc-sprout", "java-copa@bbr"] {
            let s = Scheme::parse(name).unwrap();
            assert!(Direction::Up.transfer(s.kind()).is_ok(), "{name}");
        }
        for (name, why) in [
            ("udp-copa", "UDP mode's sender is the accepting side"),
            ("ref-verus", "the authors' programs"),
            ("rx-drwa@tcp-cubic", "receive window"),
        ] {
            let s = Scheme::parse(name).unwrap();
            let e = Direction::Up.transfer(s.kind()).err().unwrap();
            assert!(e.starts_with("cannot upload: ") && e.contains(why), "{name}: {e}");
        }
    }
}
