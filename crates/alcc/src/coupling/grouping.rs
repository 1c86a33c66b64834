//! [`Grouping`]: which flows of a process share one congestion state, and each flow's
//! priority [`Weight`].

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use crate::error::Error;

/// Which flows share one congestion state (RFC 8699's flow group; docs/coupled-flows.md).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Grouping {
    /// Flows to the same peer IP address (any port) form one group: the default, since they
    /// most likely share the bottleneck (a phone's six connections to one server).
    #[default]
    ByPeer,
    /// Flows given the same name form one group, whatever their peers.
    Named(String),
    /// The flow runs alone, uncoupled.
    None,
}

/// The identity of a group within a process (or on a host's manager).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupKey {
    /// Every flow to this peer address.
    Peer(IpAddr),
    /// Every flow in the group of this name.
    Named(String),
    /// Every flow, of any process of the host, in the group of this name on the manager at
    /// this socket (docs/coupled-flows.md "The host manager").
    Managed {
        /// The manager's socket.
        socket: std::path::PathBuf,
        /// The group name.
        name: String,
    },
}

impl Grouping {
    /// The group a flow to `peer` belongs to; `None` for an uncoupled flow, or a flow grouped
    /// by peer whose peer is not known. A named group with a `manager` socket is the host's
    /// (shared with other processes); without, the process's own.
    pub fn key(&self, peer: Option<SocketAddr>, manager: Option<&std::path::Path>) -> Option<GroupKey> {
        match (self, manager) {
            (Grouping::ByPeer, _) => peer.map(|p| GroupKey::Peer(canonical(p.ip()))),
            (Grouping::Named(name), Some(socket)) => {
                Some(GroupKey::Managed { socket: socket.to_path_buf(), name: name.clone() })
            }
            (Grouping::Named(name), None) => Some(GroupKey::Named(name.clone())),
            (Grouping::None, _) => None,
        }
    }

    /// The command-line spelling: `auto`, `none` or the name.
    pub fn spelling(&self) -> &str {
        match self {
            Grouping::ByPeer => "auto",
            Grouping::Named(name) => name,
            Grouping::None => "none",
        }
    }
}

/// An IPv4 peer reached over an IPv6 socket (`::ffff:a.b.c.d`) is the same peer.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The longest group name (it travels in the manager's messages).
pub const MAX_GROUP_NAME: usize = 64;

impl FromStr for Grouping {
    type Err = Error;

    /// `auto` (by peer address), `none` (uncoupled), or a group name of 1 to
    /// [`MAX_GROUP_NAME`] bytes of letters, digits, `-`, `_`, `.`.
    fn from_str(s: &str) -> Result<Grouping, Error> {
        match s {
            "auto" => Ok(Grouping::ByPeer),
            "none" => Ok(Grouping::None),
            name if !name.is_empty()
                && name.len() <= MAX_GROUP_NAME
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) =>
            {
                Ok(Grouping::Named(name.to_string()))
            }
            bad => Err(Error::BadGrouping(format!(
                "group {bad:?}: give auto, none, or a name of 1 to {MAX_GROUP_NAME} letters, digits, '-', '_', '.'"
            ))),
        }
    }
}

impl fmt::Display for Grouping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spelling())
    }
}

/// A flow's priority weight in its group (RFC 8699's `P(i)`): finite and above zero.
pub fn check_weight(weight: f64) -> Result<f64, Error> {
    if weight.is_finite() && weight > 0.0 {
        Ok(weight)
    } else {
        Err(Error::BadGrouping(format!("weight {weight}: give a finite number above 0")))
    }
}

/// Parses a weight (`1`, `2.5`) and checks it ([`check_weight`]).
pub fn parse_weight(s: &str) -> Result<f64, Error> {
    let w: f64 = s.trim().parse().map_err(|_| Error::BadGrouping(format!("weight {s:?}: not a number")))?;
    check_weight(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_parse_and_bad_ones_are_refused() {
        assert_eq!("auto".parse::<Grouping>().unwrap(), Grouping::ByPeer);
        assert_eq!("none".parse::<Grouping>().unwrap(), Grouping::None);
        assert_eq!("video-1".parse::<Grouping>().unwrap(), Grouping::Named("video-1".into()));
        for bad in ["", "a b", "x/y", &"n".repeat(65)] {
            assert!(bad.parse::<Grouping>().is_err(), "{bad:?}");
        }
        assert_eq!(parse_weight("2.5").unwrap(), 2.5);
        for bad in ["0", "-1", "nan", "inf", "x"] {
            assert!(parse_weight(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_by_peer_ignore_the_port_and_the_v6_mapping() {
        let a: SocketAddr = "10.0.0.2:5000".parse().unwrap();
        let b: SocketAddr = "[::ffff:10.0.0.2]:6000".parse().unwrap();
        assert_eq!(Grouping::ByPeer.key(Some(a), None), Grouping::ByPeer.key(Some(b), None));
        assert_eq!(Grouping::None.key(Some(a), None), None);
        assert_eq!(Grouping::ByPeer.key(None, None), None);
        assert_eq!(Grouping::Named("x".into()).key(None, None), Some(GroupKey::Named("x".into())));
        let m = std::path::Path::new("/run/m.sock");
        assert!(matches!(Grouping::Named("x".into()).key(None, Some(m)), Some(GroupKey::Managed { .. })));
    }
}
