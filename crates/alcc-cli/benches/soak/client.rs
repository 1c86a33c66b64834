//! The soak's client side: fetches one transfer as its fate says and checks every byte.

use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use alcc::{AlccReceiver, Mode, Options, ReceiveWindow};

use crate::content;
use crate::plan::{Fate, Transfer, FATED_RCVBUF};

/// How long one read may wait before the client gives the transfer up as stuck.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// What the client saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Every byte arrived, in order, and the stream ended where it should.
    Intact,
    /// The stream ended without an error but its bytes or its length were wrong: the one
    /// outcome a transport must never produce.
    Wrong(String),
    /// A read (or the connect) failed: the error reached the application.
    Failed(String),
    /// The client reset or abandoned the transfer as planned, after reading that many bytes.
    Ended(u64),
}

/// Opens the receiving side of `t` at `addr`, in the calling thread's network namespace.
/// A transfer the client will end early gets a small locked receive buffer, so that the
/// sender cannot have had everything acknowledged when it ends.
pub fn connect(t: &Transfer, addr: SocketAddr) -> io::Result<AlccReceiver> {
    let window = if t.fate.is_early_end() && t.mode != Mode::Udp {
        ReceiveWindow::Static { rcvbuf: FATED_RCVBUF }
    } else {
        ReceiveWindow::Kernel
    };
    let options = Options { receive_window: window.clone(), ..Options::with_cc("none").mode(t.mode) };
    let receiver = match (t.mode, &window) {
        (Mode::Framed, ReceiveWindow::Static { .. }) => {
            let fd = alcc::sys::tcp_socket_for(&addr)?;
            window.prepare(fd.as_raw_fd()).map_err(io::Error::other)?;
            alcc::sys::connect(fd.as_raw_fd(), &addr)?;
            AlccReceiver::from_tcp(TcpStream::from(fd), &options)
        }
        _ => AlccReceiver::connect(addr, &options),
    };
    receiver.map_err(io::Error::other)
}

/// Reads `t` from `receiver` as its fate says.
pub fn fetch(t: &Transfer, mut receiver: AlccReceiver) -> Seen {
    receiver.set_read_timeout(Some(READ_TIMEOUT));
    let stop_at = match t.fate {
        Fate::Complete => None,
        Fate::Reset { at } | Fate::Abort { at } => Some(at),
    };
    let mut buf = vec![0u8; 256 << 10];
    let mut got = 0u64;
    // UDP mode retransmits nothing: the bytes of a lost datagram are missing from the
    // stream, and the transport reports it at the end (the last read fails). So a mismatch
    // there is judged at the end; in TCP modes at once.
    let mut differs: Option<String> = None;
    loop {
        if let Some(at) = stop_at.filter(|&at| got >= at) {
            match t.fate {
                Fate::Reset { .. } => receiver.abort(),
                _ => drop(receiver),
            }
            return Seen::Ended(at);
        }
        let want = match stop_at {
            Some(at) => ((at - got) as usize).min(buf.len()),
            None => buf.len(),
        };
        match receiver.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => {
                if differs.is_none() && !content::matches(t.content_offset(), got, &buf[..n]) {
                    let what = format!("bytes differ within {got}..{}", got + n as u64);
                    if t.mode != Mode::Udp {
                        return Seen::Wrong(what);
                    }
                    differs = Some(what);
                }
                got += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Seen::Failed(format!(
                    "after {got} bytes{}: {e}",
                    differs.map(|d| format!(" ({d})")).unwrap_or_default()
                ))
            }
        }
    }
    if let Some(what) = differs {
        return Seen::Wrong(format!("{what}, and the stream ended without an error"));
    }
    if stop_at.is_some() {
        return Seen::Wrong(format!("the stream ended after {got} bytes, before the planned end"));
    }
    if t.mode == Mode::Framed {
        // Sends the acknowledgements still owed, so that the sender's close completes.
        if let Err(e) = receiver.close(Some(Duration::from_secs(10))) {
            return Seen::Failed(format!("closing after {got} bytes: {e}"));
        }
    }
    if got == t.size {
        Seen::Intact
    } else {
        Seen::Wrong(format!("{got} bytes of {}, ended without an error", t.size))
    }
}
