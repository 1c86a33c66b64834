//! [`Role`]: whether an alcc connection sends or receives, chosen with `alcc_set_role` (or
//! `ALCC_ROLE`) on a listening or not yet connected socket.
//!
//! Without a choice the roles are the downlink's: the accepting side sends; the connecting side
//! sends in kernel mode and receives in framed mode. The uplink (a phone uploading) is the
//! connecting side choosing `send` and the accepting side choosing `receive` in framed mode.
//! Kernel mode has no alcc receiver (the peer of a kernel-mode sender is any TCP socket), so
//! `receive` is framed mode's only.

use std::str::FromStr;

use engine::Mode;

/// Which end of an alcc connection a descriptor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sends under a controller (`alcc_send`, `alcc_set_cc`, `alcc_get_info`).
    Send,
    /// Receives framed data and acknowledges it (`alcc_recv`).
    Receive,
}

impl Role {
    /// The role when none was chosen: the accepting side sends; the connecting side receives in
    /// framed mode and sends in kernel mode.
    pub fn default_for(mode: Mode, connected: bool) -> Role {
        if connected && mode == Mode::Framed {
            Role::Receive
        } else {
            Role::Send
        }
    }

    /// Whether a connection in `mode` can take this role (kernel mode has no alcc receiver).
    pub fn allowed_in(self, mode: Mode) -> bool {
        self == Role::Send || mode == Mode::Framed
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Role, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "send" => Ok(Role::Send),
            "receive" => Ok(Role::Receive),
            other => Err(format!("unknown role `{other}` (send or receive)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_downlinks() {
        assert_eq!(Role::default_for(Mode::Framed, true), Role::Receive);
        assert_eq!(Role::default_for(Mode::Framed, false), Role::Send);
        assert_eq!(Role::default_for(Mode::Kernel, true), Role::Send);
        assert_eq!(Role::default_for(Mode::Kernel, false), Role::Send);
    }

    #[test]
    fn names_and_what_each_mode_allows() {
        assert_eq!("send".parse::<Role>(), Ok(Role::Send));
        assert_eq!(" Receive ".parse::<Role>(), Ok(Role::Receive));
        assert!("recv".parse::<Role>().unwrap_err().contains("send or receive"));
        assert!(Role::Receive.allowed_in(Mode::Framed));
        assert!(!Role::Receive.allowed_in(Mode::Kernel));
        assert!(Role::Send.allowed_in(Mode::Kernel));
    }
}
