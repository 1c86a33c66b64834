//! `alcc manager --socket PATH [--group-access GROUP]`: the host's manager of coupled flow
//! groups (docs/coupled-flows.md "The host manager"), and [`ensure_running`], which
//! `alcc serve --manager PATH` uses to start one on demand.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alcc::coupling::manager::{group_id, Access, Manager};
use anyhow::{bail, Context, Result};

/// Arguments of `alcc manager`.
#[derive(clap::Args, Debug)]
pub struct ManagerArgs {
    /// The Unix socket to listen on (replaced if no manager listens there).
    #[arg(long)]
    socket: PathBuf,
    /// Let this group's members connect too (socket mode 0660, the file's group; a name from
    /// /etc/group or a number). Without it only this user may (mode 0600).
    #[arg(long, value_name = "GROUP")]
    group_access: Option<String>,
}

/// Runs the manager until it is killed.
pub fn run(args: ManagerArgs) -> Result<()> {
    let access = match &args.group_access {
        None => Access::User,
        Some(g) => Access::Group(group_id(g).with_context(|| format!("--group-access {g}"))?),
    };
    let manager = Manager::bind(&args.socket, access)
        .with_context(|| format!("alcc manager: binding {}", args.socket.display()))?;
    println!("alcc manager: listening on {}", manager.path().display());
    manager.serve().context("alcc manager")
}

/// Makes sure a manager listens at `socket`: if none does, starts `alcc manager --socket
/// socket` (this program, detached: it outlives the caller) and waits up to 2 s for it.
pub fn ensure_running(socket: &Path) -> Result<()> {
    if std::os::unix::net::UnixStream::connect(socket).is_ok() {
        return Ok(());
    }
    let exe = std::env::current_exe().context("finding the alcc program to start its manager")?;
    Command::new(exe)
        .arg("manager")
        .arg("--socket")
        .arg(socket)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting alcc manager --socket {}", socket.display()))?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        if std::os::unix::net::UnixStream::connect(socket).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!("alcc manager at {} did not start within 2 s", socket.display())
}
