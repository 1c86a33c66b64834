//! The host manager (`alcc manager --socket PATH`): flow groups shared by the alcc processes of
//! one host over a Unix stream socket ([`super::protocol`]; docs/coupled-flows.md).
//!
//! One thread per member, so that a member that stops reading or writing holds up only its
//! own thread; the groups are behind one lock held for arithmetic only, never across I/O.
//! A member is closed (its flows leave their group, the others' shares grow at their next
//! report) when it closes or crashes (EOF), sends nothing for [`MEMBER_TIMEOUT`], does not take
//! an answer within [`MEMBER_TIMEOUT`], or breaks the protocol.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alcc_cc::fse::{FlowGroup, FlowId};

use super::protocol::{Decoder, Message};

/// A member that sends nothing (or takes no answer) for this long is closed. Members report
/// every flow at least every [`super::remote::REPORT_EVERY`] while it runs.
pub const MEMBER_TIMEOUT: Duration = Duration::from_millis(500);

/// The most members at once; more are refused (closed at once).
pub const MAX_MEMBERS: usize = 1024;

/// The most flows one member may have in its group.
pub const MAX_FLOWS_PER_MEMBER: usize = 1 << 16;

/// Who may connect: the socket file's permissions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// The manager's own user only (mode 0600).
    User,
    /// The manager's user and the members of this group id (mode 0660, the file's group).
    Group(u32),
}

/// The groups of a host's manager.
#[derive(Default)]
struct Groups {
    groups: HashMap<String, FlowGroup>,
    members: usize,
}

/// A bound manager, ready to [`serve`](Manager::serve).
pub struct Manager {
    listener: UnixListener,
    path: PathBuf,
    groups: Arc<Mutex<Groups>>,
}

/// The group id of group `name` (a name from /etc/group, or a number).
pub fn group_id(name: &str) -> io::Result<u32> {
    if let Ok(gid) = name.parse() {
        return Ok(gid);
    }
    let groups = fs::read_to_string("/etc/group")?;
    groups
        .lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let (n, _, gid) = (f.next()?, f.next()?, f.next()?);
            (n == name).then(|| gid.parse().ok()).flatten()
        })
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no group {name:?} in /etc/group")))
}

impl Manager {
    /// Binds the socket at `path` with `access`. A socket file nobody listens on is replaced;
    /// one a manager listens on is an `AddrInUse` error.
    pub fn bind(path: &Path, access: Access) -> io::Result<Manager> {
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("a manager already listens at {}", path.display()),
                ));
            }
            fs::remove_file(path)?;
        }
        let listener = UnixListener::bind(path)?;
        // The socket starts at 0777 & ~umask; narrowed at once (connecting needs write access).
        let mode = match access {
            Access::User => 0o600,
            Access::Group(gid) => {
                std::os::unix::fs::chown(path, None, Some(gid))?;
                0o660
            }
        };
        fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
        Ok(Manager { listener, path: path.to_path_buf(), groups: Arc::default() })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serves members until the listener fails; one thread per member.
    pub fn serve(self) -> io::Result<()> {
        for conn in self.listener.incoming() {
            let Ok(conn) = conn else { continue };
            let groups = self.groups.clone();
            {
                let mut g = lock(&groups);
                if g.members >= MAX_MEMBERS {
                    continue;
                }
                g.members += 1;
            }
            let spawned = std::thread::Builder::new().name("alcc-member".into()).spawn(move || {
                let mut member = Member { groups: groups.clone(), group: None, flows: HashMap::new() };
                let _ = member.serve(conn);
                member.leave_all();
                lock(&groups).members -= 1;
            });
            if spawned.is_err() {
                lock(&self.groups).members -= 1;
            }
        }
        Ok(())
    }
}

fn lock(groups: &Mutex<Groups>) -> std::sync::MutexGuard<'_, Groups> {
    groups.lock().unwrap_or_else(|p| p.into_inner())
}

/// One connected member.
struct Member {
    groups: Arc<Mutex<Groups>>,
    /// Its group, once it said `Hello`.
    group: Option<String>,
    /// Its flows' ids in the group.
    flows: HashMap<u32, FlowId>,
}

impl Member {
    fn serve(&mut self, mut conn: UnixStream) -> io::Result<()> {
        conn.set_read_timeout(Some(MEMBER_TIMEOUT))?;
        conn.set_write_timeout(Some(MEMBER_TIMEOUT))?;
        let mut decoder = Decoder::new();
        let mut buf = [0u8; 4096];
        let mut out = Vec::new();
        loop {
            let n = conn.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            decoder.feed(&buf[..n]);
            while let Some(msg) =
                decoder.next_message().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
            {
                if let Some(reply) = self.handle(msg)? {
                    reply.encode(&mut out);
                }
            }
            if !out.is_empty() {
                conn.write_all(&out)?;
                out.clear();
            }
        }
    }

    /// Applies one message; returns the answer, if any. A message out of order (anything
    /// before `Hello`, a second `Hello`, an unknown flow, a `Share`) is a protocol error.
    fn handle(&mut self, msg: Message) -> io::Result<Option<Message>> {
        let bad = |why: &str| Err(io::Error::new(io::ErrorKind::InvalidData, why.to_string()));
        let Some(name) = self.group.clone() else {
            return match msg {
                Message::Hello { group } => {
                    self.group = Some(group);
                    Ok(None)
                }
                _ => bad("the first message must be Hello"),
            };
        };
        let mut groups = lock(&self.groups);
        let group = groups.groups.entry(name).or_default();
        let share = match msg {
            Message::Join { flow, weight, rate } => {
                if self.flows.contains_key(&flow) || self.flows.len() >= MAX_FLOWS_PER_MEMBER {
                    return bad("a flow joined twice, or too many flows");
                }
                let id = group.join(weight, rate).map_err(io::Error::other)?;
                self.flows.insert(flow, id);
                Some((flow, group.rate(id)))
            }
            Message::Change { flow, change } => {
                let Some(&id) = self.flows.get(&flow) else { return bad("change of an unknown flow") };
                Some((flow, group.change(id, change)))
            }
            Message::Weight { flow, weight } => {
                let Some(&id) = self.flows.get(&flow) else { return bad("weight of an unknown flow") };
                group.set_priority(id, weight).map_err(io::Error::other)?;
                Some((flow, group.rate(id)))
            }
            Message::Leave { flow } => {
                if let Some(id) = self.flows.remove(&flow) {
                    let _ = group.leave(id);
                }
                None
            }
            Message::Hello { .. } | Message::Share { .. } => {
                return bad("Hello twice, or a Share from a member")
            }
        };
        let mean = if group.len() == 1 { None } else { Some(group.aggregate() / group.len() as f64) };
        Ok(match share {
            // A lone flow's mean is its share, exactly.
            Some((flow, Ok(share))) => Some(Message::Share { flow, share, mean: mean.unwrap_or(share) }),
            _ => None,
        })
    }

    /// The member is gone: its flows leave their group, which is forgotten once empty.
    fn leave_all(&mut self) {
        let Some(name) = self.group.take() else { return };
        let mut groups = lock(&self.groups);
        if let Some(group) = groups.groups.get_mut(&name) {
            for (_, id) in self.flows.drain() {
                let _ = group.leave(id);
            }
            if group.is_empty() {
                groups.groups.remove(&name);
            }
        }
    }
}
