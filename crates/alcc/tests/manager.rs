//! The host manager (src/coupling/manager.rs) spoken to over its socket: shares across members,
//! a garbage message closes that member only, a silent member is dropped within
//! MEMBER_TIMEOUT and its share reclaimed, and the socket's permissions keep other users out.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use alcc::coupling::manager::{Access, Manager, MEMBER_TIMEOUT};
use alcc::coupling::protocol::{Decoder, Message};

/// A scratch directory others may enter (so that only the socket's own mode decides).
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("alcc-manager-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn start(dir: &Dir, access: Access) -> PathBuf {
    let path = dir.0.join("m.sock");
    let m = Manager::bind(&path, access).unwrap();
    std::thread::spawn(move || m.serve());
    path
}

/// A member speaking the protocol by hand.
struct Member {
    conn: UnixStream,
    decoder: Decoder,
}

impl Member {
    fn join(path: &Path, group: &str) -> Member {
        let conn = UnixStream::connect(path).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut m = Member { conn, decoder: Decoder::new() };
        m.send(Message::Hello { group: group.into() });
        m
    }

    fn send(&mut self, msg: Message) {
        let mut b = Vec::new();
        msg.encode(&mut b);
        self.conn.write_all(&b).unwrap();
    }

    /// Sends `msg` and returns the share in the answer.
    fn ask(&mut self, msg: Message) -> f64 {
        self.send(msg);
        let mut buf = [0u8; 256];
        loop {
            if let Some(Message::Share { share, .. }) = self.decoder.next_message().unwrap() {
                return share;
            }
            let n = self.conn.read(&mut buf).unwrap();
            assert!(n > 0, "the manager closed the member");
            self.decoder.feed(&buf[..n]);
        }
    }
}

#[test]
fn members_share_a_group_and_garbage_closes_only_its_sender() {
    let dir = Dir::new("garbage");
    let path = start(&dir, Access::User);
    let mut a = Member::join(&path, "g");
    let mut b = Member::join(&path, "g");
    assert_eq!(a.ask(Message::Join { flow: 0, weight: 1.0, rate: 1000.0 }), 1000.0);
    assert_eq!(b.ask(Message::Join { flow: 0, weight: 3.0, rate: 1000.0 }), 1500.0);
    assert_eq!(a.ask(Message::Change { flow: 0, change: 0.0 }), 500.0, "1:3 of 2000");
    // A third connection sends garbage: it is closed, the others go on.
    let mut g = UnixStream::connect(&path).unwrap();
    g.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    g.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(g.read(&mut buf).unwrap_or(0), 0, "the garbage sender is closed");
    assert_eq!(b.ask(Message::Change { flow: 0, change: 400.0 }), 1800.0, "the group goes on: 3/4 of 2400");
    // A member that joins a flow and then says nothing is dropped after MEMBER_TIMEOUT; the
    // others take its share.
    let mut c = Member::join(&path, "g");
    assert_eq!(c.ask(Message::Join { flow: 0, weight: 4.0, rate: 1600.0 }), 2000.0, "4/8 of 4000");
    let silent = Instant::now();
    loop {
        let share = a.ask(Message::Change { flow: 0, change: 0.0 });
        if share == 1000.0 {
            break; // 1/4 of 4000: c left
        }
        assert!(silent.elapsed() < MEMBER_TIMEOUT * 3, "the silent member was not dropped");
        std::thread::sleep(Duration::from_millis(20));
        b.send(Message::Change { flow: 0, change: 0.0 });
    }
    let took = silent.elapsed();
    assert!(took >= MEMBER_TIMEOUT / 2, "dropped after {took:?}, before its timeout");
}

#[test]
fn another_user_is_refused_unless_given_group_access() {
    alcc_testenv::require!(alcc_testenv::needs()
        .root("to run a client as another user")
        .program("setpriv")
        .program("/usr/bin/python3"));
    let connect_as_nobody = |path: &Path| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c"])
            .arg("import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])")
            .arg(path)
            .output()
            .unwrap()
    };
    let dir = Dir::new("user");
    let path = start(&dir, Access::User);
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let out = connect_as_nobody(&path);
    assert!(!out.status.success(), "another user connected to a user-only manager");
    assert!(String::from_utf8_lossy(&out.stderr).contains("PermissionError"), "{out:?}");
    // Group access for gid 65534 (nogroup): the same user may connect, without groups it may not.
    let dir = Dir::new("group");
    let path = start(&dir, Access::Group(65534));
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o660);
    let out = connect_as_nobody(&path);
    assert!(out.status.success(), "a member of the group was refused: {out:?}");
}
