//! [`RemoteGroup`]: a group kept by the host's manager ([`super::manager`]), seen from one
//! member process: the driver thread's non-blocking connection to the manager's socket, and
//! the last share the manager gave each of the process's flows in the group.
//!
//! Every flow reports its controller's accumulated change at most every [`REPORT_EVERY`]
//! (and at least that often while it steps: the reports are the member's heartbeat), and the
//! manager answers each report with the flow's share. A flow gets each answer once
//! ([`Answer::New`]), with its own change since the report it answers added
//! ([`Portion::moved_by`]: the manager counts that change at the next report); at its steps
//! in between, [`Answer::Held`]. Until the first answer, and while the
//! manager cannot be reached, a flow runs under its own controller; the connection is tried
//! again every [`RETRY_EVERY`], and on reconnecting every flow joins again.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use alcc_cc::Time;

use super::groups::{Answer, Portion};
use super::protocol::{Decoder, Message};

/// How often a flow reports to the manager, at most (and, while it steps, at least).
pub const REPORT_EVERY: Duration = Duration::from_millis(20);

/// How long after a failed connection the next attempt is made.
pub const RETRY_EVERY: Duration = Duration::from_secs(1);

/// Bytes waiting to be written to the manager beyond which the connection is given up (the
/// manager does not read).
const MAX_BACKLOG: usize = 64 << 10;

#[derive(Debug)]
struct RemoteFlow {
    weight: f64,
    joined: bool,
    pending: f64,
    last_report: Option<Time>,
    /// The manager's latest answer, until the flow's next step takes it.
    unread: Option<Portion>,
    /// Whether the manager answered since the flow (last) joined.
    answered: bool,
    /// The change each message not answered yet carried (0 for `Join` and `Weight`), in the
    /// order sent: the manager answers every message of a flow, in order.
    unanswered: VecDeque<f64>,
}

/// One group on the host's manager, as this process sees it.
#[derive(Debug)]
pub(crate) struct RemoteGroup {
    socket: PathBuf,
    name: String,
    conn: Option<UnixStream>,
    retry_at: Time,
    decoder: Decoder,
    backlog: Vec<u8>,
    flows: HashMap<u32, RemoteFlow>,
    next_flow: u32,
}

impl RemoteGroup {
    /// Group `name` on the manager at `socket` (connected at the first report).
    pub fn new(socket: PathBuf, name: String) -> RemoteGroup {
        RemoteGroup {
            socket,
            name,
            conn: None,
            retry_at: Time::ZERO,
            decoder: Decoder::new(),
            backlog: Vec::new(),
            flows: HashMap::new(),
            next_flow: 0,
        }
    }

    /// A new flow with `weight`; its number.
    pub fn add(&mut self, weight: f64) -> u32 {
        let id = self.next_flow;
        self.next_flow = self.next_flow.wrapping_add(1);
        self.flows.insert(
            id,
            RemoteFlow {
                weight,
                joined: false,
                pending: 0.0,
                last_report: None,
                unread: None,
                answered: false,
                unanswered: VecDeque::new(),
            },
        );
        id
    }

    /// Reports flow `id`'s controller (its `rate`, and its `change` since the last call) and
    /// returns the manager's answer not taken yet, or [`Answer::Held`] if the flow took the
    /// latest already; `None` before the first answer.
    pub fn report(&mut self, id: u32, rate: f64, change: f64, now: Time) -> Option<Answer> {
        self.connect(now);
        let connected = self.conn.is_some();
        let f = self.flows.get_mut(&id)?;
        f.pending += change;
        let mut msg = None;
        if connected && !f.joined {
            msg = Some(Message::Join { flow: id, weight: f.weight, rate });
            f.joined = true;
            f.pending = 0.0;
            f.unanswered.push_back(0.0);
            f.last_report = Some(now);
        } else if connected && f.last_report.is_none_or(|t| now >= t + REPORT_EVERY) {
            msg = Some(Message::Change { flow: id, change: f.pending });
            f.unanswered.push_back(f.pending);
            f.pending = 0.0;
            f.last_report = Some(now);
        }
        if let Some(m) = msg {
            m.encode(&mut self.backlog);
        }
        self.exchange(now);
        let f = self.flows.get_mut(&id)?;
        match f.unread.take() {
            Some(p) => Some(Answer::New(p.moved_by(f.pending + f.unanswered.iter().sum::<f64>()))),
            None => f.answered.then_some(Answer::Held),
        }
    }

    /// Sets flow `id`'s weight.
    pub fn set_weight(&mut self, id: u32, weight: f64, now: Time) {
        if let Some(f) = self.flows.get_mut(&id) {
            f.weight = weight;
            if f.joined && self.conn.is_some() {
                Message::Weight { flow: id, weight }.encode(&mut self.backlog);
                f.unanswered.push_back(0.0);
                self.exchange(now);
            }
        }
    }

    /// Flow `id` ended.
    pub fn remove(&mut self, id: u32, now: Time) {
        if self.flows.remove(&id).is_some_and(|f| f.joined) && self.conn.is_some() {
            Message::Leave { flow: id }.encode(&mut self.backlog);
            self.exchange(now);
        }
    }

    /// Whether no flow of this process is in the group.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    fn connect(&mut self, now: Time) {
        if self.conn.is_some() || now < self.retry_at {
            return;
        }
        let attempt = UnixStream::connect(&self.socket).and_then(|c| {
            c.set_nonblocking(true)?;
            Ok(c)
        });
        match attempt {
            Ok(c) => {
                self.conn = Some(c);
                self.decoder = Decoder::new();
                self.backlog.clear();
                Message::Hello { group: self.name.clone() }.encode(&mut self.backlog);
            }
            Err(_) => self.retry_at = now + RETRY_EVERY,
        }
    }

    /// Writes what is waiting and reads the manager's answers, without blocking.
    fn exchange(&mut self, now: Time) {
        if let Err(_e) = self.try_exchange() {
            self.disconnect(now);
        }
    }

    fn try_exchange(&mut self) -> io::Result<()> {
        let Some(conn) = self.conn.as_mut() else { return Ok(()) };
        while !self.backlog.is_empty() {
            match conn.write(&self.backlog) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.backlog.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if self.backlog.len() > MAX_BACKLOG {
            return Err(io::Error::other("the manager does not read"));
        }
        let mut buf = [0u8; 4096];
        loop {
            match conn.read(&mut buf) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => self.decoder.feed(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        while let Some(msg) =
            self.decoder.next_message().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
        {
            if let Message::Share { flow, share, mean } = msg {
                if let Some(f) = self.flows.get_mut(&flow) {
                    f.unread = Some(Portion { share, mean });
                    f.answered = true;
                    f.unanswered.pop_front();
                }
            }
        }
        Ok(())
    }

    /// The manager went away (or broke the protocol): every flow runs alone until the next
    /// connection, when all join again.
    fn disconnect(&mut self, now: Time) {
        self.conn = None;
        // Straight back (a manager that closed an idle member listens still); a connection
        // that then fails waits RETRY_EVERY.
        self.retry_at = now;
        for f in self.flows.values_mut() {
            f.joined = false;
            f.unread = None;
            f.answered = false;
            f.unanswered.clear();
            f.pending = 0.0;
        }
    }
}
