//! Loading the BPF underlay: one registration per process, shared by its flows.
//!
//! Lifetime (issue 10, "What to build" 2). A struct_ops congestion control has one global
//! name, so each process registers its own, `alcc_<pid>`, through a BPF link: the kernel
//! unregisters it when the link's file descriptor closes, which happens when the last flow
//! of the process lets go of its [`Registration`] and, whatever the process did, when it
//! exits (also on kill -9). Two processes at once hold two registrations and never share
//! state; nothing is pinned in bpffs, so a crash leaves no pin, lock or user count behind
//! for the next process to repair. A socket still using a registration that was unregistered
//! keeps it (the kernel holds a reference to the ops while a socket uses them) until the
//! socket closes.
//!
//! Everything a user needs to know when loading fails is in [`UnderlayError`]: the build
//! had no clang, the kernel has no BTF, the process lacks CAP_BPF or CAP_NET_ADMIN, or the
//! verifier refused the program (with libbpf's log).

use std::io;
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use super::target::Target;

/// Where the kernel's own BTF is; libbpf reads it to relocate the program (CO-RE) and to
/// find `struct tcp_congestion_ops`.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// The placeholder name in the object (bpf/alcc_underlay.bpf.c, `.name = "alcc"`).
const PLACEHOLDER: &[u8] = b"alcc\0";

/// Linux capability numbers (include/uapi/linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;

/// Why the `alcc` underlay cannot be used here.
#[derive(Debug, thiserror::Error)]
pub enum UnderlayError {
    /// This build of alcc has no BPF program (clang or the libbpf headers were missing when
    /// it was compiled).
    #[error("the alcc underlay is not in this build of alcc: {0}")]
    NotBuilt(&'static str),
    /// The kernel exposes no BTF, which CO-RE relocation and struct_ops need.
    #[error("the alcc underlay needs the kernel's BTF ({0} is missing: a kernel built with CONFIG_DEBUG_INFO_BTF)")]
    NoBtf(String),
    /// The process lacks a capability.
    #[error("the alcc underlay needs root or {0} (loading a BPF congestion control is privileged)")]
    NoPrivilege(String),
    /// libbpf or the kernel refused a step; `log` is what libbpf said (the verifier's log
    /// when the program was refused).
    #[error("the alcc underlay failed to {stage}: {cause}{log}")]
    Load {
        /// What was being done (`load the BPF program`, `register the congestion control`).
        stage: &'static str,
        /// What libbpf or the kernel answered.
        cause: String,
        /// The matching `errno`.
        errno: i32,
        /// libbpf's messages, prefixed by a newline, or empty.
        log: String,
    },
    /// Writing a socket's target failed.
    #[error("the alcc underlay could not set up the socket: {0}")]
    Socket(#[source] io::Error),
}

impl UnderlayError {
    /// The `errno` a C caller sees.
    pub fn errno(&self) -> i32 {
        match self {
            UnderlayError::NotBuilt(_) | UnderlayError::NoBtf(_) => libc::EOPNOTSUPP,
            UnderlayError::NoPrivilege(_) => libc::EPERM,
            UnderlayError::Load { errno, .. } => *errno,
            UnderlayError::Socket(source) => source.raw_os_error().unwrap_or(libc::EINVAL),
        }
    }

    /// The matching `io::ErrorKind`.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            UnderlayError::NotBuilt(_) | UnderlayError::NoBtf(_) => io::ErrorKind::Unsupported,
            UnderlayError::NoPrivilege(_) => io::ErrorKind::PermissionDenied,
            UnderlayError::Load { errno, .. } => io::Error::from_raw_os_error(*errno).kind(),
            UnderlayError::Socket(source) => source.kind(),
        }
    }
}

/// The process's registered congestion control and its per-socket storage.
pub struct Registration {
    name: String,
    targets: libbpf_rs::MapHandle,
    /// Unregisters the congestion control when dropped (closing the link).
    _link: libbpf_rs::Link,
    /// The loaded programs and maps (kept so that nothing is closed before the link).
    _object: libbpf_rs::Object,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration").field("name", &self.name).finish()
    }
}

impl Registration {
    /// The kernel name of the congestion control (`alcc_<pid>`), for TCP_CONGESTION.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Writes `target` into the storage of socket `fd`.
    pub fn write(&self, fd: RawFd, target: Target) -> io::Result<()> {
        use libbpf_rs::MapCore;
        self.targets
            .update(&fd.to_ne_bytes(), &target.to_bytes(), libbpf_rs::MapFlags::ANY)
            .map_err(|e| io::Error::from_raw_os_error(errno_of(&e)))
    }
}

/// The registration currently alive in this process, if any flow holds it.
static CURRENT: Mutex<Weak<Registration>> = Mutex::new(Weak::new());

/// This process's registration: the one its flows share, or a new one.
pub fn acquire() -> Result<Arc<Registration>, UnderlayError> {
    let mut current = CURRENT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(r) = current.upgrade() {
        return Ok(r);
    }
    let r = Arc::new(register()?);
    *current = Arc::downgrade(&r);
    Ok(r)
}

/// Whether a registration is alive in this process (for tests and diagnostics).
pub fn is_registered() -> bool {
    CURRENT.lock().unwrap_or_else(|p| p.into_inner()).strong_count() > 0
}

/// The name this process registers.
pub fn process_name() -> String {
    format!("alcc_{}", std::process::id())
}

/// Checks what can be checked before asking the kernel: BTF and capabilities.
pub fn precheck(btf: &Path, status: &str) -> Result<(), UnderlayError> {
    if !btf.exists() {
        return Err(UnderlayError::NoBtf(btf.display().to_string()));
    }
    let eff = effective_caps(status);
    let has = |cap: u32| eff.is_some_and(|e| e & (1u64 << cap) != 0);
    let mut missing = Vec::new();
    if !has(CAP_BPF) && !has(CAP_SYS_ADMIN) {
        missing.push("CAP_BPF");
    }
    if !has(CAP_NET_ADMIN) {
        missing.push("CAP_NET_ADMIN");
    }
    if !missing.is_empty() {
        return Err(UnderlayError::NoPrivilege(missing.join(" and ")));
    }
    Ok(())
}

/// The effective capability set from the text of /proc/self/status (`CapEff:` in hex).
fn effective_caps(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

#[cfg(not(alcc_bpf))]
fn register() -> Result<Registration, UnderlayError> {
    Err(UnderlayError::NotBuilt(env!("ALCC_BPF_UNBUILT")))
}

/// The compiled program (build.rs).
#[cfg(alcc_bpf)]
const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/alcc_underlay.bpf.o"));

#[cfg(alcc_bpf)]
fn register() -> Result<Registration, UnderlayError> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| UnderlayError::Load {
        stage: "read /proc/self/status",
        cause: e.to_string(),
        errno: e.raw_os_error().unwrap_or(libc::EIO),
        log: String::new(),
    })?;
    precheck(Path::new(VMLINUX_BTF), &status)?;
    let log = LibbpfLog::capture();
    let result = load(&process_name());
    let said = log.finish();
    result.map_err(|(stage, e)| UnderlayError::Load {
        stage,
        cause: e.to_string(),
        errno: errno_of(&e),
        log: said,
    })
}

/// The `errno` closest to a libbpf error (libbpf-rs keeps the code only inside its message).
fn errno_of(e: &libbpf_rs::Error) -> i32 {
    use libbpf_rs::ErrorKind as K;
    match e.kind() {
        K::NotFound => libc::ENOENT,
        K::PermissionDenied => libc::EPERM,
        K::AlreadyExists => libc::EEXIST,
        K::WouldBlock => libc::EAGAIN,
        K::InvalidInput | K::InvalidData => libc::EINVAL,
        K::TimedOut => libc::ETIMEDOUT,
        K::Interrupted => libc::EINTR,
        K::Unsupported => libc::EOPNOTSUPP,
        K::OutOfMemory => libc::ENOMEM,
        _ => libc::EIO,
    }
}

#[cfg(alcc_bpf)]
type Stage<T> = Result<T, (&'static str, libbpf_rs::Error)>;

#[cfg(alcc_bpf)]
fn load(name: &str) -> Stage<Registration> {
    use libbpf_rs::{MapCore, ObjectBuilder};

    let fail = |stage: &'static str| move |e: libbpf_rs::Error| (stage, e);
    // libelf reads the ELF in place: give it an allocation of its own (aligned) rather
    // than the bytes of the executable's read-only data.
    let bytes = OBJECT.to_vec();
    let mut open = ObjectBuilder::default().open_memory(&bytes).map_err(fail("open the BPF object"))?;
    let mut named = false;
    for mut map in open.maps_mut() {
        if map.name() != "alcc" {
            continue;
        }
        let Some(value) = map.initial_value_mut() else { continue };
        // `name` is the first member of our struct tcp_congestion_ops (kernel_types.h).
        if value.len() >= 16 && value.starts_with(PLACEHOLDER) {
            value[..16].fill(0);
            let n = name.len().min(15);
            value[..n].copy_from_slice(&name.as_bytes()[..n]);
            named = true;
        }
    }
    if !named {
        let e = libbpf_rs::Error::from(io::Error::new(
            io::ErrorKind::InvalidData,
            "struct_ops map `alcc` with the name placeholder first not found in the object",
        ));
        return Err(("name the congestion control", e));
    }
    let mut object = open.load().map_err(fail("load the BPF program"))?;
    let mut targets = None;
    let mut link = None;
    for mut map in object.maps_mut() {
        if map.name() == "alcc_targets" {
            targets = Some(libbpf_rs::MapHandle::try_from(&map).map_err(fail("open the socket storage"))?);
        } else if map.name() == "alcc" {
            link = Some(map.attach_struct_ops().map_err(fail("register the congestion control"))?);
        }
    }
    let missing = |what: &str| {
        libbpf_rs::Error::from(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("no map `{what}` in the object"),
        ))
    };
    let targets = targets.ok_or_else(|| ("open the socket storage", missing("alcc_targets")))?;
    let link = link.ok_or_else(|| ("register the congestion control", missing("alcc")))?;
    Ok(Registration { name: name.to_string(), targets, _link: link, _object: object })
}

/// libbpf's messages while loading, collected instead of printed (they go into the error).
#[cfg(alcc_bpf)]
struct LibbpfLog {
    previous: Option<(libbpf_rs::PrintLevel, libbpf_rs::PrintCallback)>,
}

/// What libbpf said during the current load (loads are serialised by [`CURRENT`]'s lock).
#[cfg(alcc_bpf)]
static SAID: Mutex<String> = Mutex::new(String::new());

/// How much of libbpf's log an error keeps (the verifier's last lines say why).
#[cfg(alcc_bpf)]
const LOG_KEEP: usize = 4096;

#[cfg(alcc_bpf)]
impl LibbpfLog {
    fn capture() -> LibbpfLog {
        SAID.lock().unwrap_or_else(|p| p.into_inner()).clear();
        let previous = libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Warn, Self::collect)));
        LibbpfLog { previous }
    }

    fn collect(_level: libbpf_rs::PrintLevel, msg: String) {
        SAID.lock().unwrap_or_else(|p| p.into_inner()).push_str(&msg);
    }

    fn finish(self) -> String {
        libbpf_rs::set_print(self.previous);
        let said = std::mem::take(&mut *SAID.lock().unwrap_or_else(|p| p.into_inner()));
        let said = said.trim();
        if said.is_empty() {
            return String::new();
        }
        let start = said.len().saturating_sub(LOG_KEEP);
        let start = (start..said.len()).find(|&i| said.is_char_boundary(i)).unwrap_or(said.len());
        format!("\nlibbpf: {}", &said[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "Name:\tx\nCapEff:\t000001ffffffffff\n";
    const NOBODY: &str = "Name:\tx\nCapEff:\t0000000000000000\n";

    #[test]
    fn privilege_is_checked_before_loading() {
        let btf = Path::new("/");
        assert!(precheck(btf, ROOT).is_ok());
        let e = precheck(btf, NOBODY).unwrap_err();
        assert_eq!(e.to_string(), "the alcc underlay needs root or CAP_BPF and CAP_NET_ADMIN (loading a BPF congestion control is privileged)");
        assert_eq!((e.errno(), e.kind()), (libc::EPERM, io::ErrorKind::PermissionDenied));
        // CAP_SYS_ADMIN stands in for CAP_BPF; CAP_NET_ADMIN is still needed.
        let admin = format!("CapEff:\t{:016x}\n", 1u64 << CAP_SYS_ADMIN);
        assert!(precheck(btf, &admin).unwrap_err().to_string().contains("root or CAP_NET_ADMIN ("));
        let both = format!("CapEff:\t{:016x}\n", (1u64 << CAP_BPF) | (1u64 << CAP_NET_ADMIN));
        assert!(precheck(btf, &both).is_ok());
        // An unreadable status is no privilege.
        assert!(matches!(precheck(btf, "garbage"), Err(UnderlayError::NoPrivilege(_))));
    }

    #[test]
    fn missing_btf_is_named() {
        let e = precheck(Path::new("/nonexistent/vmlinux"), ROOT).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/vmlinux is missing"), "{e}");
        assert_eq!(e.errno(), libc::EOPNOTSUPP);
    }
}
