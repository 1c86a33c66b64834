//! The shim's configuration, read once from the environment when the library is loaded:
//! `ALCC_CC` (required unless `ALCC_RECEIVER` is set), `ALCC_UNDERLAY`, `ALCC_PORTS`,
//! `ALCC_MODE`, `ALCC_LOG`, `ALCC_QUEUE`, `ALCC_GROUP`, `ALCC_WEIGHT`, `ALCC_MANAGER` (coupled flows,
//! docs/coupled-flows.md), `ALCC_RECEIVER` (the client side, see `crate::receiving`). A value that does not parse stops the program before `main` with a message
//! naming the variable (see [`Config::from_vars`]).

use std::path::PathBuf;

use alcc::{Mode, Options, ReceiveWindow};

/// A configuration error: which variable, and why.
#[derive(Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The environment variable at fault.
    pub variable: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.variable, self.message)
    }
}

/// Which accepted connections the shim governs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ports {
    /// Every TCP connection the program accepts.
    All,
    /// Connections accepted on these local ports only.
    Listed(Vec<u16>),
    /// No accepted connection: `ALCC_RECEIVER` without `ALCC_CC` governs only the
    /// connections the program opens.
    None,
}

impl Ports {
    /// Parses `ALCC_PORTS`: a comma-separated list of ports 1-65535; unset or empty: all.
    pub fn parse(text: Option<&str>) -> Result<Ports, ConfigError> {
        let text = match text.map(str::trim) {
            None | Some("") => return Ok(Ports::All),
            Some(t) => t,
        };
        let mut ports = Vec::new();
        for item in text.split(',') {
            let item = item.trim();
            match item.parse::<u16>() {
                Ok(p) if p > 0 => ports.push(p),
                _ => {
                    return Err(ConfigError {
                        variable: "ALCC_PORTS",
                        message: format!(
                            "`{item}` is not a port (1-65535) in `{text}`; expected e.g. 80,8080"
                        ),
                    })
                }
            }
        }
        Ok(Ports::Listed(ports))
    }

    /// Whether a connection accepted on local port `port` is governed.
    pub fn covers(&self, port: u16) -> bool {
        match self {
            Ports::All => true,
            Ports::Listed(list) => list.contains(&port),
            Ports::None => false,
        }
    }
}

/// Where the shim writes its log lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogTarget {
    /// No log.
    Off,
    /// Standard error.
    Stderr,
    /// Appended to this file.
    File(PathBuf),
}

impl LogTarget {
    /// Parses `ALCC_LOG`: unset or empty (off), `stderr`, or a file path.
    pub fn parse(text: Option<&str>) -> LogTarget {
        match text.map(str::trim) {
            None | Some("") => LogTarget::Off,
            Some("stderr") => LogTarget::Stderr,
            Some(path) => LogTarget::File(PathBuf::from(path)),
        }
    }
}

/// Everything the environment chose.
#[derive(Clone, Debug)]
pub struct Config {
    /// The engine's options for every governed connection.
    pub options: Options,
    /// Which connections are governed.
    pub ports: Ports,
    /// Where log lines go.
    pub log: LogTarget,
    /// The receive window of the connections the program opens (`kernel`: left alone).
    pub receive_window: ReceiveWindow,
    /// When a forked child starts the engine's thread.
    pub fork: ForkStart,
}

/// When a forked child starts the engine's thread (`ALCC_FORK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkStart {
    /// At its first governed connection (`lazy`, the default).
    Lazy,
    /// At once, in fork's child handler (`start`): for servers whose children may not make
    /// threads later (vsftpd sets RLIMIT_NPROC to 0 in its session processes).
    AtFork,
}

impl ForkStart {
    /// Parses `ALCC_FORK`: unset, empty or `lazy`, or `start`.
    pub fn parse(value: Option<&str>) -> Result<ForkStart, ConfigError> {
        match value.map(str::trim) {
            None | Some("") | Some("lazy") => Ok(ForkStart::Lazy),
            Some("start") => Ok(ForkStart::AtFork),
            Some(other) => Err(ConfigError {
                variable: "ALCC_FORK",
                message: format!("`{other}`: expected `lazy` (the default) or `start`"),
            }),
        }
    }
}

impl Config {
    /// Reads the configuration through `var` (the environment, or a test's table).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let receive_window = crate::receiving::parse(var("ALCC_RECEIVER").as_deref())?;
        let log = LogTarget::parse(var("ALCC_LOG").as_deref());
        let fork = ForkStart::parse(var("ALCC_FORK").as_deref())?;
        let Some(cc) = var("ALCC_CC").filter(|s| !s.trim().is_empty()) else {
            if receive_window == ReceiveWindow::Kernel {
                return Err(ConfigError {
                    variable: "ALCC_CC",
                    message: "not set; the shim needs a controller (e.g. ALCC_CC=copa, ALCC_CC=verus, \
                              ALCC_CC=fixed) or a client's receive window (ALCC_RECEIVER=drwa)"
                        .into(),
                });
            }
            // The client side alone: the sending side's variables would be ignored.
            for unused in
                ["ALCC_PORTS", "ALCC_MODE", "ALCC_UNDERLAY", "ALCC_QUEUE", "ALCC_GROUP", "ALCC_WEIGHT"]
            {
                if var(unused).is_some_and(|v| !v.trim().is_empty()) {
                    return Err(ConfigError {
                        variable: unused,
                        message: "is for accepted connections, which only ALCC_CC governs (set ALCC_CC too)"
                            .into(),
                    });
                }
            }
            return Ok(Config { options: Options::default(), ports: Ports::None, log, receive_window, fork });
        };
        let cc = cc.trim().to_string();
        let mode = match var("ALCC_MODE").as_deref().map(str::trim) {
            None | Some("") | Some("kernel") => Mode::Kernel,
            Some(other) => {
                return Err(ConfigError {
                    variable: "ALCC_MODE",
                    message: format!(
                        "`{other}`: an unmodified program's clients are plain TCP, so only `kernel` mode can govern them"
                    ),
                })
            }
        };
        alcc::check_spec_for(&cc, mode)
            .map_err(|e| ConfigError { variable: "ALCC_CC", message: e.to_string() })?;
        let mut options = Options { mode, ..Options::with_cc(&cc) };
        if let Some(u) = var("ALCC_UNDERLAY").filter(|s| !s.trim().is_empty()) {
            options.underlay = u.trim().to_string();
        }
        if let Some(q) = var("ALCC_QUEUE").filter(|s| !s.trim().is_empty()) {
            options.queue_capacity =
                q.trim().parse::<usize>().ok().filter(|&q| q > 0).ok_or_else(|| ConfigError {
                    variable: "ALCC_QUEUE",
                    message: format!("`{q}` is not a positive number of bytes"),
                })?;
        }
        if let Some(g) = var("ALCC_GROUP").filter(|s| !s.trim().is_empty()) {
            options.grouping = g
                .trim()
                .parse()
                .map_err(|e: alcc::Error| ConfigError { variable: "ALCC_GROUP", message: e.to_string() })?;
        }
        if let Some(w) = var("ALCC_WEIGHT").filter(|s| !s.trim().is_empty()) {
            options.weight = alcc::coupling::parse_weight(&w)
                .map_err(|e| ConfigError { variable: "ALCC_WEIGHT", message: e.to_string() })?;
        }
        if let Some(m) = var("ALCC_MANAGER").filter(|s| !s.trim().is_empty()) {
            if !matches!(options.grouping, alcc::Grouping::Named(_)) {
                return Err(ConfigError {
                    variable: "ALCC_MANAGER",
                    message: "needs ALCC_GROUP=NAME: a host's group has a name".into(),
                });
            }
            options.manager = Some(PathBuf::from(m.trim()));
        }
        let ports = Ports::parse(var("ALCC_PORTS").as_deref())?;
        Ok(Config { options, ports, log, receive_window, fork })
    }

    /// Checks what needs the kernel (the underlay) once, at start.
    pub fn check_kernel(&self) -> Result<(), ConfigError> {
        alcc::underlay::check(&self.options.underlay)
            .map_err(|e| ConfigError { variable: "ALCC_UNDERLAY", message: e.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_vars(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn a_controller_is_required_and_checked() {
        assert_eq!(config(&[]).unwrap_err().variable, "ALCC_CC");
        let e = config(&[("ALCC_CC", "nosuch")]).unwrap_err();
        assert_eq!(e.variable, "ALCC_CC");
        assert!(e.message.contains("nosuch"), "{e}");
        assert!(config(&[("ALCC_CC", "copa")]).is_ok());
    }

    #[test]
    fn groups_and_weights_parse_or_name_their_variable() {
        let c = config(&[("ALCC_CC", "copa"), ("ALCC_GROUP", "video"), ("ALCC_WEIGHT", "2.5")]).unwrap();
        assert_eq!(c.options.grouping, alcc::Grouping::Named("video".into()));
        assert_eq!(c.options.weight, 2.5);
        let c = config(&[("ALCC_CC", "copa")]).unwrap();
        assert_eq!((c.options.grouping, c.options.weight), (alcc::Grouping::ByPeer, 1.0));
        assert_eq!(config(&[("ALCC_CC", "copa"), ("ALCC_GROUP", "a b")]).unwrap_err().variable, "ALCC_GROUP");
        for bad in ["0", "-1", "x", "inf"] {
            let e = config(&[("ALCC_CC", "copa"), ("ALCC_WEIGHT", bad)]).unwrap_err();
            assert_eq!(e.variable, "ALCC_WEIGHT", "{bad}");
        }
        let e = config(&[("ALCC_CC", "copa"), ("ALCC_MANAGER", "/run/m.sock")]).unwrap_err();
        assert_eq!(e.variable, "ALCC_MANAGER");
        let c =
            config(&[("ALCC_CC", "copa"), ("ALCC_GROUP", "web"), ("ALCC_MANAGER", "/run/m.sock")]).unwrap();
        assert_eq!(c.options.manager.as_deref(), Some(std::path::Path::new("/run/m.sock")));
    }

    #[test]
    fn ports_parse_or_name_the_bad_item() {
        assert_eq!(Ports::parse(None).unwrap(), Ports::All);
        assert_eq!(Ports::parse(Some("80, 8080")).unwrap(), Ports::Listed(vec![80, 8080]));
        let e = Ports::parse(Some("80,http")).unwrap_err();
        assert!(e.message.contains("`http`"), "{e}");
        assert!(Ports::parse(Some("0")).is_err());
        assert!(Ports::parse(Some("70000")).is_err());
        assert!(Ports::Listed(vec![80]).covers(80) && !Ports::Listed(vec![80]).covers(81));
    }

    #[test]
    fn a_receiver_alone_needs_no_controller() {
        let c = config(&[("ALCC_RECEIVER", "drwa:lambda=2")]).unwrap();
        assert!(matches!(c.receive_window, ReceiveWindow::Drwa { .. }));
        assert_eq!(c.ports, Ports::None);
        assert!(!c.ports.covers(80));
        let e = config(&[("ALCC_RECEIVER", "kernel")]).unwrap_err();
        assert!(e.variable == "ALCC_CC" && e.message.contains("ALCC_RECEIVER=drwa"), "{e}");
        let e = config(&[("ALCC_RECEIVER", "drwa"), ("ALCC_PORTS", "80")]).unwrap_err();
        assert_eq!(e.variable, "ALCC_PORTS");
        assert_eq!(config(&[("ALCC_RECEIVER", "drwa:nosuch=1")]).unwrap_err().variable, "ALCC_RECEIVER");
        let both = config(&[("ALCC_CC", "copa"), ("ALCC_RECEIVER", "static:rcvbuf=484848")]).unwrap();
        assert_eq!(both.ports, Ports::All);
        assert_eq!(both.receive_window, ReceiveWindow::Static { rcvbuf: 484848 });
    }

    #[test]
    fn only_kernel_mode_and_a_positive_queue() {
        assert_eq!(
            config(&[("ALCC_CC", "copa"), ("ALCC_MODE", "framed")]).unwrap_err().variable,
            "ALCC_MODE"
        );
        assert_eq!(config(&[("ALCC_CC", "copa"), ("ALCC_QUEUE", "0")]).unwrap_err().variable, "ALCC_QUEUE");
        let c = config(&[("ALCC_CC", "copa"), ("ALCC_QUEUE", "65536"), ("ALCC_UNDERLAY", "cubic")]).unwrap();
        assert_eq!(c.options.queue_capacity, 65536);
        assert_eq!(c.options.underlay, "cubic");
    }

    #[test]
    fn fork_start_is_lazy_or_start() {
        assert_eq!(config(&[("ALCC_CC", "copa")]).unwrap().fork, ForkStart::Lazy);
        assert_eq!(config(&[("ALCC_CC", "copa"), ("ALCC_FORK", "start")]).unwrap().fork, ForkStart::AtFork);
        let e = config(&[("ALCC_CC", "copa"), ("ALCC_FORK", "eager")]).unwrap_err();
        assert!(e.variable == "ALCC_FORK" && e.message.contains("`eager`"), "{e}");
    }
}
