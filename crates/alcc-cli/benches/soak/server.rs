//! The soak's server process: one thread per lane, each accepting its transfers in plan
//! order (a TCP listener and a UDP port per lane) and sending each through an `AlccStream`
//! with the transfer's mode and controller. Every outcome is one line on stdout:
//! `done INDEX ok BYTES`, `done INDEX error KIND: MESSAGE`, or `done INDEX panic MESSAGE`.

use std::io::{self, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use alcc::{AlccStream, AlccUdpListener, Grouping, Mode, Options};

use crate::content;
use crate::plan::{plan, PlanSpec, Transfer};

/// How long a sender's close waits for the last acknowledgements.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a UDP lane waits for its client's start request before it reports a failure.
const UDP_ACCEPT_TIMEOUT: Duration = Duration::from_secs(120);

/// One lane's sockets: a TCP listener and a UDP-mode listener on the same port.
struct Lane {
    tcp: TcpListener,
    udp: AlccUdpListener,
}

impl Lane {
    fn bind() -> io::Result<Lane> {
        for _ in 0..100 {
            let tcp = TcpListener::bind("0.0.0.0:0")?;
            if let Ok(udp) = AlccUdpListener::bind(tcp.local_addr()?) {
                return Ok(Lane { tcp, udp });
            }
        }
        Err(io::Error::new(io::ErrorKind::AddrInUse, "no port free for both TCP and UDP"))
    }

    /// Accepts the next transfer's connection in its mode.
    fn accept(&mut self, t: &Transfer, options: &Options) -> io::Result<AlccStream> {
        match t.mode {
            Mode::Udp => {
                self.udp.set_read_timeout(Some(UDP_ACCEPT_TIMEOUT))?;
                let (stream, _) = self.udp.accept(options).map_err(io::Error::other)?;
                Ok(stream)
            }
            _ => {
                let (tcp, _) = self.tcp.accept()?;
                AlccStream::from_tcp(tcp, options).map_err(io::Error::other)
            }
        }
    }
}

/// Sends one transfer; returns the bytes sent once the close succeeded.
fn send(lane: &mut Lane, t: &Transfer, coupled: bool) -> io::Result<u64> {
    let grouping = if coupled { Grouping::ByPeer } else { Grouping::None };
    let options = Options { grouping, ..Options::with_cc(&t.cc).mode(t.mode) };
    let mut stream = lane.accept(t, &options)?;
    let mut sent = 0u64;
    while sent < t.size {
        let bytes = content::slice(t.content_offset(), sent, (t.size - sent).min(256 << 10) as usize);
        stream.write_all(bytes)?;
        sent += bytes.len() as u64;
    }
    stream.close(Some(CLOSE_TIMEOUT))?;
    Ok(sent)
}

fn say(out: &Mutex<io::Stdout>, line: &str) {
    let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

/// Runs the server until every lane has served its transfers and stdin ends.
pub fn run(spec: &PlanSpec) -> io::Result<()> {
    let transfers = Arc::new(plan(spec));
    let coupled = spec.coupled;
    let lanes: Vec<Lane> = (0..spec.lanes()).map(|_| Lane::bind()).collect::<io::Result<_>>()?;
    let out = Arc::new(Mutex::new(io::stdout()));
    let ports: Vec<String> =
        lanes.iter().map(|l| l.tcp.local_addr().map_or(0, |a| a.port()).to_string()).collect();
    say(&out, &format!("ports {}", ports.join(" ")));
    let workers: Vec<_> = lanes
        .into_iter()
        .enumerate()
        .map(|(n, mut lane)| {
            let (transfers, out) = (transfers.clone(), out.clone());
            thread::spawn(move || {
                for t in transfers.iter().filter(|t| t.lane == n) {
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        send(&mut lane, t, coupled)
                    }));
                    let line = match outcome {
                        Ok(Ok(n)) => format!("done {} ok {n}", t.index),
                        Ok(Err(e)) => format!("done {} error {:?}: {e}", t.index, e.kind()),
                        Err(p) => {
                            let msg = p
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default();
                            format!("done {} panic {msg}", t.index)
                        }
                    };
                    say(&out, &line.replace('\n', " "));
                }
                // Kept open until the end, so that idle samples count the same sockets.
                lane
            })
        })
        .collect();
    let _lanes: Vec<Lane> = workers.into_iter().filter_map(|w| w.join().ok()).collect();
    say(&out, "end");
    // Stay until the coordinator has taken its last sample (it closes our stdin).
    let _ = io::copy(&mut io::stdin(), &mut io::sink());
    Ok(())
}
