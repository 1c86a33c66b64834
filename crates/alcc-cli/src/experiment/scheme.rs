//! Scheme names of an experiment: `tcp-cubic` (plain kernel TCP), `alcc-copa@reno` (a
//! controller of ours over a kernel CC, in kernel or framed mode as the controller needs),
//! `native-sprout` (the controller over UDP, as its authors ran it).

use std::fmt;

use thiserror::Error;

/// Kernel congestion controls a `tcp-*` scheme may name.
pub const KERNEL_CCS: &[&str] = &["cubic", "reno", "bbr"];

/// The underlay of `alcc-X` when the scheme names none (the paper's ALCC ran over CUBIC).
pub const DEFAULT_UNDERLAY: &str = "cubic";

/// Which kind of sender a scheme is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Plain kernel TCP.
    Tcp,
    /// An alcc controller above kernel TCP.
    Alcc,
    /// An alcc controller over UDP (the native baseline).
    Native,
}

impl Family {
    /// The name in the results table.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Tcp => "tcp",
            Family::Alcc => "alcc",
            Family::Native => "native",
        }
    }
}

/// How the flow learns what was delivered (`alcc serve --mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// The kernel's ACK information; the client is plain `curl`.
    Kernel,
    /// alcc's frames over TCP; the client is `alcc get --mode framed`.
    Framed,
    /// UDP; the client is `alcc get --mode udp`.
    Udp,
}

impl RunMode {
    /// The name `alcc serve --mode` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::Kernel => "kernel",
            RunMode::Framed => "framed",
            RunMode::Udp => "udp",
        }
    }
}

/// A parsed scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheme {
    /// The name as written in the spec (also the run directory's name).
    pub name: String,
    /// tcp, alcc or native.
    pub family: Family,
    /// The controller spec (`copa`, `copa:delta=0.5`), or `none` for plain TCP.
    pub cc: String,
    /// The kernel congestion control under it; `None` for native (UDP) schemes.
    pub underlay: Option<String>,
    /// The serve/get mode.
    pub mode: RunMode,
    /// Whether the registry knows the controller (an unknown one makes every run fail).
    pub known_cc: bool,
}

/// Why a scheme name is not one.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("scheme `{name}`: {reason}")]
pub struct SchemeError {
    /// The name as written.
    pub name: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

fn is_word(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Controller specs may carry parameters (`copa:delta=0.5,mode=default`).
fn is_cc_spec(s: &str) -> bool {
    !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "_:=,.-".contains(c))
}

impl Scheme {
    /// Parses `tcp-KERNELCC`, `alcc-CC[@UNDERLAY]` or `native-CC`. An unregistered controller
    /// is accepted (`known_cc` false): its runs are recorded as failed.
    pub fn parse(name: &str) -> Result<Scheme, SchemeError> {
        let err = |reason: String| SchemeError { name: name.to_string(), reason };
        if let Some(kernel) = name.strip_prefix("tcp-") {
            if !KERNEL_CCS.contains(&kernel) {
                return Err(err(format!(
                    "plain TCP schemes are tcp-{}, not tcp-{kernel}",
                    KERNEL_CCS.join("|tcp-")
                )));
            }
            return Ok(Scheme {
                name: name.to_string(),
                family: Family::Tcp,
                cc: "none".to_string(),
                underlay: Some(kernel.to_string()),
                mode: RunMode::Kernel,
                known_cc: true,
            });
        }
        if let Some(rest) = name.strip_prefix("alcc-") {
            let (cc, underlay) = match rest.rsplit_once('@') {
                Some((cc, u)) => (cc, u),
                None => (rest, DEFAULT_UNDERLAY),
            };
            if !is_cc_spec(cc) {
                return Err(err(format!("`{cc}` is not a controller spec (like copa or copa:delta=0.5)")));
            }
            if underlay.is_empty() {
                return Err(err("`@` must be followed by the underlay (cubic, reno, bbr)".to_string()));
            }
            if !is_word(underlay) {
                return Err(err(format!("`{underlay}` is not a kernel congestion control name")));
            }
            let entry = alcc_cc::registry::entry(cc).ok();
            let mode = match entry {
                Some(e) if e.needs_receiver() => RunMode::Framed,
                _ => RunMode::Kernel,
            };
            return Ok(Scheme {
                name: name.to_string(),
                family: Family::Alcc,
                cc: cc.to_string(),
                underlay: Some(underlay.to_string()),
                mode,
                known_cc: entry.is_some(),
            });
        }
        if let Some(cc) = name.strip_prefix("native-") {
            if !is_cc_spec(cc) {
                return Err(err(format!("`{cc}` is not a controller spec (like copa or copa:delta=0.5)")));
            }
            return Ok(Scheme {
                name: name.to_string(),
                family: Family::Native,
                cc: cc.to_string(),
                underlay: None,
                mode: RunMode::Udp,
                known_cc: alcc_cc::registry::entry(cc).is_ok(),
            });
        }
        Err(err("expected tcp-<cubic|reno|bbr>, alcc-<cc>[@underlay] or native-<cc>".to_string()))
    }

    /// The underlay as the results table writes it (empty for native schemes).
    pub fn underlay_str(&self) -> &str {
        self.underlay.as_deref().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_tcp() {
        let s = Scheme::parse("tcp-bbr").unwrap();
        assert_eq!(
            (s.family, s.cc.as_str(), s.underlay_str(), s.mode),
            (Family::Tcp, "none", "bbr", RunMode::Kernel)
        );
        let e = Scheme::parse("tcp-vegas").unwrap_err();
        assert!(e.to_string().contains("tcp-cubic|tcp-reno|tcp-bbr"), "{e}");
    }

    #[test]
    fn alcc_takes_the_mode_its_controller_needs() {
        let s = Scheme::parse("alcc-copa").unwrap();
        assert_eq!(
            (s.family, s.cc.as_str(), s.underlay_str(), s.mode),
            (Family::Alcc, "copa", "cubic", RunMode::Kernel)
        );
        let s = Scheme::parse("alcc-copa@reno").unwrap();
        assert_eq!((s.cc.as_str(), s.underlay_str()), ("copa", "reno"));
        // Sprout keeps its model at the receiver: framed mode.
        let s = Scheme::parse("alcc-sprout@bbr").unwrap();
        assert_eq!((s.mode, s.underlay_str()), (RunMode::Framed, "bbr"));
        let s = Scheme::parse("alcc-copa:delta=0.1").unwrap();
        assert_eq!((s.cc.as_str(), s.known_cc), ("copa:delta=0.1", true));
    }

    #[test]
    fn native_is_udp_without_underlay() {
        let s = Scheme::parse("native-sprout").unwrap();
        assert_eq!(
            (s.family, s.cc.as_str(), s.underlay, s.mode),
            (Family::Native, "sprout", None, RunMode::Udp)
        );
    }

    #[test]
    fn unknown_controllers_parse_but_are_marked() {
        let s = Scheme::parse("alcc-nonexistent").unwrap();
        assert!(!s.known_cc);
        assert_eq!(s.mode, RunMode::Kernel);
    }

    #[test]
    fn malformed_names_are_refused() {
        for bad in
            ["copa", "alcc-", "alcc-copa@", "alcc-co pa", "native-", "alcc-../x", "native-a/b", "udp-copa"]
        {
            let e = Scheme::parse(bad).unwrap_err();
            assert_eq!(e.name, bad);
        }
    }
}
