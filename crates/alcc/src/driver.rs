//! The driver: one thread per process that serves every flow through epoll.
//!
//! Application threads hand new flows and wake-ups to the driver through an inbox and an
//! eventfd; sockets report ACK timestamps (EPOLLERR) and send-buffer space (EPOLLOUT),
//! edge-triggered; one timerfd, armed for the earliest entry of a heap of per-flow deadlines
//! (pacing, controller timers), covers time. With nothing to do the thread sleeps in
//! `epoll_wait`: an idle flow costs no CPU.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use alcc_cc::Time;

use crate::flow::{Flow, Next};
use crate::sys::{self, Epoll, EventFd, TimerFd};

/// A sending flow's number in the process's driver. Ids are below 2^63, so that an epoll
/// token can tell them from the driver's own descriptors ([`Token`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct FlowId(u64);

/// What an epoll event is about: the driver's own descriptors have the top bit set, flows
/// do not, so no flow id can be taken for a wake-up or the timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    /// The eventfd: the inbox has new flows or wake-ups.
    Wake,
    /// The timerfd: a deadline passed.
    Timer,
    /// A flow's socket.
    Flow(FlowId),
}

impl Token {
    const RESERVED: u64 = 1 << 63;

    fn encode(self) -> u64 {
        match self {
            Token::Wake => Token::RESERVED,
            Token::Timer => Token::RESERVED | 1,
            Token::Flow(FlowId(id)) => id,
        }
    }

    fn decode(token: u64) -> Token {
        match token {
            t if t == Token::Wake.encode() => Token::Wake,
            t if t == Token::Timer.encode() => Token::Timer,
            id => Token::Flow(FlowId(id)),
        }
    }
}

#[derive(Default)]
struct Inbox {
    new: Vec<Flow>,
    wake: Vec<FlowId>,
}

/// The application side's handle on the driver thread.
pub(crate) struct Driver {
    inbox: Mutex<Inbox>,
    eventfd: EventFd,
    next_id: AtomicU64,
    flows: AtomicUsize,
    cpu_ns: AtomicU64,
    wakeups: AtomicU64,
}

static DRIVER: OnceLock<Result<Arc<Driver>, String>> = OnceLock::new();

/// The process's driver, started on first use.
pub(crate) fn get() -> io::Result<Arc<Driver>> {
    DRIVER.get_or_init(start).clone().map_err(io::Error::other)
}

fn start() -> Result<Arc<Driver>, String> {
    let setup = || -> io::Result<(Arc<Driver>, Epoll, TimerFd)> {
        let driver = Arc::new(Driver {
            inbox: Mutex::new(Inbox::default()),
            eventfd: EventFd::new()?,
            next_id: AtomicU64::new(0),
            flows: AtomicUsize::new(0),
            cpu_ns: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
        });
        let epoll = Epoll::new()?;
        let timer = TimerFd::new()?;
        epoll.add(driver.eventfd.raw(), libc::EPOLLIN as u32, Token::Wake.encode())?;
        epoll.add(timer.raw(), libc::EPOLLIN as u32, Token::Timer.encode())?;
        Ok((driver, epoll, timer))
    };
    let (driver, epoll, timer) = setup().map_err(|e| format!("alcc driver setup failed: {e}"))?;
    let d = driver.clone();
    std::thread::Builder::new()
        .name("alcc-driver".into())
        .spawn(move || run(&d, &epoll, &timer))
        .map_err(|e| format!("alcc driver thread: {e}"))?;
    Ok(driver)
}

impl Driver {
    /// A fresh flow id; an error once 2^63 ids were handed out (never, in practice).
    pub fn next_id(&self) -> io::Result<FlowId> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if id >= Token::RESERVED {
            return Err(io::Error::other("alcc driver: flow ids exhausted"));
        }
        Ok(FlowId(id))
    }

    /// Hands a new flow to the driver.
    pub fn register(&self, flow: Flow) {
        self.inbox.lock().unwrap_or_else(|p| p.into_inner()).new.push(flow);
        self.eventfd.notify();
    }

    /// Asks the driver to step flow `id` soon.
    pub fn wake(&self, id: FlowId) {
        self.inbox.lock().unwrap_or_else(|p| p.into_inner()).wake.push(id);
        self.eventfd.notify();
    }

    /// Flows the driver currently holds.
    pub fn flows(&self) -> usize {
        self.flows.load(Ordering::Relaxed)
    }

    /// Times the driver thread woke up.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }

    /// CPU time the driver thread has used (updated before it sleeps).
    pub fn cpu_time(&self) -> Duration {
        Duration::from_nanos(self.cpu_ns.load(Ordering::Relaxed))
    }
}

struct Loop<'a> {
    driver: &'a Driver,
    epoll: &'a Epoll,
    flows: HashMap<FlowId, Flow>,
    deadlines: BinaryHeap<Reverse<(Time, FlowId)>>,
    due: Vec<FlowId>,
}

fn run(driver: &Driver, epoll: &Epoll, timer: &TimerFd) {
    let mut l = Loop { driver, epoll, flows: HashMap::new(), deadlines: BinaryHeap::new(), due: Vec::new() };
    let mut events = Vec::with_capacity(256);
    let mut armed: Option<Time> = None;
    loop {
        driver.cpu_ns.store(sys::thread_cpu_time().as_nanos() as u64, Ordering::Relaxed);
        if epoll.wait(&mut events, None).is_err() {
            // epoll_wait fails only on programming errors; back off rather than spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        driver.wakeups.fetch_add(1, Ordering::Relaxed);
        l.due.clear();
        for ev in &events {
            match Token::decode(ev.u64) {
                Token::Wake => {
                    driver.eventfd.drain();
                    let inbox = std::mem::take(&mut *driver.inbox.lock().unwrap_or_else(|p| p.into_inner()));
                    for flow in inbox.new {
                        l.add(flow);
                    }
                    l.due.extend(inbox.wake);
                }
                Token::Timer => {
                    timer.drain();
                    armed = None;
                }
                Token::Flow(id) => l.due.push(id),
            }
        }
        let now = sys::now();
        while let Some(Reverse((t, id))) = l.deadlines.peek().copied() {
            if t > now {
                break;
            }
            l.deadlines.pop();
            if let Some(f) = l.flows.get_mut(&id).filter(|f| f.scheduled == Some(t)) {
                f.scheduled = None;
                l.due.push(id);
            }
        }
        l.due.sort_unstable();
        l.due.dedup();
        let due = std::mem::take(&mut l.due);
        for &id in &due {
            l.step(id, now);
        }
        l.due = due;
        // Drop stale deadlines from the top so that they do not wake the thread.
        while let Some(Reverse((t, id))) = l.deadlines.peek().copied() {
            if l.flows.get(&id).is_some_and(|f| f.scheduled == Some(t)) {
                break;
            }
            l.deadlines.pop();
        }
        let next = l.deadlines.peek().map(|Reverse((t, _))| *t);
        if next != armed {
            // A failure to arm leaves flows to their socket events; nothing better to do.
            let _ = timer.set(next);
            armed = next;
        }
        driver.flows.store(l.flows.len(), Ordering::Relaxed);
    }
}

impl Loop<'_> {
    fn add(&mut self, flow: Flow) {
        let id = flow.id;
        let mut events = (libc::EPOLLOUT | libc::EPOLLERR | libc::EPOLLHUP | libc::EPOLLET) as u32;
        if flow.reads_socket() {
            events |= libc::EPOLLIN as u32;
        }
        if let Err(e) = self.epoll.add(flow.fd.as_raw_fd(), events, Token::Flow(id).encode()) {
            flow.shared.lock().fail(e.kind(), format!("epoll: {e}"));
            flow.shared.notify();
            return;
        }
        self.flows.insert(id, flow);
        self.due.push(id);
    }

    fn step(&mut self, id: FlowId, now: Time) {
        let Some(flow) = self.flows.get_mut(&id) else { return };
        match flow.step(now) {
            Next::Keep(wake) => {
                // An earlier wake-up already scheduled serves as well (the step re-plans).
                let earlier = matches!((flow.scheduled, wake), (Some(s), Some(w)) if s > now && s <= w);
                if wake != flow.scheduled && !earlier {
                    flow.scheduled = wake;
                    if let Some(t) = wake {
                        self.deadlines.push(Reverse((t, id)));
                    }
                }
            }
            Next::Release => {
                if let Some(flow) = self.flows.remove(&id) {
                    let _ = self.epoll.delete(flow.fd.as_raw_fd());
                    self.driver.flows.store(self.flows.len(), Ordering::Relaxed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_of_flows_never_equal_the_drivers_own() {
        for id in [0, 1, 2, u64::MAX >> 1, (1 << 63) - 2] {
            let t = Token::Flow(FlowId(id));
            assert_eq!(Token::decode(t.encode()), t);
            assert_ne!(t.encode(), Token::Wake.encode());
            assert_ne!(t.encode(), Token::Timer.encode());
        }
        assert_eq!(Token::decode(Token::Wake.encode()), Token::Wake);
        assert_eq!(Token::decode(Token::Timer.encode()), Token::Timer);
    }
}
