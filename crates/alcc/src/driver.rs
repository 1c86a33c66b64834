//! The driver: one thread per process that serves every flow through epoll.
//!
//! Application threads hand new flows and wake-ups to the driver through an inbox and an
//! eventfd; sockets report ACK timestamps (EPOLLERR) and send-buffer space (EPOLLOUT),
//! edge-triggered, except while a flow holds its socket's events until its next step
//! (src/flow/socket_hold.rs: the driver stops watching that socket); one timerfd, armed for the earliest entry of a heap of per-flow deadlines
//! (pacing, controller timers), covers time. With nothing to do the thread sleeps in
//! `epoll_wait`: an idle flow costs no CPU.
//!
//! Containment: a panic inside one flow's step (a controller bug, an overflow in a debug
//! build) fails that flow only, with an error naming the panic; the driver drops the flow and
//! serves the others. Should the thread itself ever die, every flow it held or was handed
//! fails, [`has_died`] turns true, every waiting call returns an error
//! ([`Shared::wait_for`](crate::flow::shared::Shared::wait_for) checks it) and new flows are
//! refused: nothing waits forever on a thread that is gone.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::os::fd::AsRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alcc_cc::Time;

use crate::coupling::groups::Groups;
use crate::flow::{Flow, Next, WokenBy};
use crate::step_latency::{LatencyRecorder, StepLatency};
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
    /// The process the thread runs in: a forked child has a copy of this struct but no thread.
    pid: u32,
    /// The thread's own epoll and timer descriptors, which a forked child closes (their owner,
    /// the thread, does not exist there).
    thread_fds: [std::os::fd::RawFd; 2],
    inbox: Mutex<Inbox>,
    eventfd: EventFd,
    next_id: AtomicU64,
    flows: AtomicUsize,
    /// The thread's CPU-time clock (read by [`Driver::cpu_time`] from any thread, so the
    /// thread itself makes no system call for it), [`NO_CLOCK`] until the thread has started.
    cpu_clock: AtomicI32,
    /// The CPU time last read from that clock, nanoseconds (what is reported once the thread
    /// is gone).
    cpu_ns: AtomicU64,
    wakeups: AtomicU64,
    latency: LatencyRecorder,
}

/// The driver started in this process (or, in a forked child, the parent's until replaced).
static DRIVER: Mutex<Option<Result<Arc<Driver>, String>>> = Mutex::new(None);

/// Set once the driver thread has died (see the module docs).
static DIED: AtomicBool = AtomicBool::new(false);

/// Whether the process's driver thread has died; every flow then fails.
pub(crate) fn has_died() -> bool {
    DIED.load(Ordering::Acquire)
}

/// What a panic said, for the error of the flow (or driver) it ended.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_string(),
        (_, Some(s)) => s.clone(),
        _ => "a panic without a message".to_string(),
    }
}

/// The process's driver, started on first use. A forked child inherits a copy of the parent's
/// driver without its thread: the child starts a driver of its own (flows the child inherited
/// stay the parent's; see [`Driver::runs_here`]).
pub(crate) fn get() -> io::Result<Arc<Driver>> {
    let mut slot = DRIVER.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(Ok(d)) = slot.as_ref() {
        if !d.runs_here() {
            // The child's copies of the thread's descriptors have no owner here. The eventfd
            // stays open: the inherited flows' handles still hold (and will close) it.
            for fd in d.thread_fds {
                sys::close_raw(fd);
            }
            // The parent's thread's fate is not the child's.
            DIED.store(false, Ordering::Release);
            *slot = None;
        }
    }
    slot.get_or_insert_with(start).clone().map_err(io::Error::other)
}

fn start() -> Result<Arc<Driver>, String> {
    let setup = || -> io::Result<(Arc<Driver>, Epoll, TimerFd)> {
        let epoll = Epoll::new()?;
        let timer = TimerFd::new()?;
        let driver = Arc::new(Driver {
            pid: sys::process_id(),
            thread_fds: [epoll.raw(), timer.raw()],
            inbox: Mutex::new(Inbox::default()),
            eventfd: EventFd::new()?,
            next_id: AtomicU64::new(0),
            flows: AtomicUsize::new(0),
            cpu_clock: AtomicI32::new(NO_CLOCK),
            cpu_ns: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            latency: LatencyRecorder::new(),
        });
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
    /// Whether this driver's thread runs in the calling process (not in a forked child, which
    /// has a copy of the struct but not the thread).
    pub fn runs_here(&self) -> bool {
        self.pid == sys::process_id()
    }

    /// A fresh flow id; an error once 2^63 ids were handed out (never, in practice).
    pub fn next_id(&self) -> io::Result<FlowId> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if id >= Token::RESERVED {
            return Err(io::Error::other("alcc driver: flow ids exhausted"));
        }
        Ok(FlowId(id))
    }

    /// Hands a new flow to the driver; refused once the driver has died.
    pub fn register(&self, flow: Flow) -> io::Result<()> {
        let mut inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
        if has_died() {
            return Err(died_error());
        }
        inbox.new.push(flow);
        drop(inbox);
        self.eventfd.notify();
        Ok(())
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

    /// Durations of the thread's steps and wake-ups so far.
    pub fn step_latency(&self) -> StepLatency {
        self.latency.snapshot()
    }

    /// CPU time the driver thread has used.
    pub fn cpu_time(&self) -> Duration {
        let clock = self.cpu_clock.load(Ordering::Acquire);
        match (clock != NO_CLOCK).then(|| sys::cpu_clock_time(clock)).flatten() {
            Some(t) => {
                self.cpu_ns.store(u64::try_from(t.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
                t
            }
            None => Duration::from_nanos(self.cpu_ns.load(Ordering::Relaxed)),
        }
    }
}

struct Loop<'a> {
    driver: &'a Driver,
    epoll: &'a Epoll,
    flows: HashMap<FlowId, Flow>,
    deadlines: BinaryHeap<Reverse<(Time, FlowId)>>,
    /// The process's flow groups (src/coupling).
    groups: Groups,
    /// The flows to step in this wake-up, and why.
    due: Vec<(FlowId, WokenBy)>,
    /// This wake-up's step durations, nanoseconds (recorded at its end).
    step_ns: Vec<u64>,
}

/// The error of every flow once the driver thread has died.
pub(crate) fn died_error() -> io::Error {
    io::Error::other("alcc: the driver thread died; this flow can make no progress")
}

/// [`Driver::cpu_clock`] before the thread has set it. A thread's clock id is negative (the
/// kernel encodes the thread id and the clock kind in it), but its low three bits, the
/// kind, are never all zero, as they are in this value.
const NO_CLOCK: libc::clockid_t = libc::clockid_t::MIN;

fn run(driver: &Driver, epoll: &Epoll, timer: &TimerFd) {
    if let Ok(clock) = sys::thread_cpu_clock() {
        driver.cpu_clock.store(clock, Ordering::Release);
    }
    let mut l = Loop {
        driver,
        epoll,
        flows: HashMap::new(),
        deadlines: BinaryHeap::new(),
        groups: Groups::default(),
        due: Vec::new(),
        step_ns: Vec::new(),
    };
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| serve(&mut l, timer))) {
        l.die(&panic_message(payload.as_ref()));
    }
}

/// The driver's loop; returns only by a panic (then [`Loop::die`]).
fn serve(l: &mut Loop<'_>, timer: &TimerFd) {
    let (driver, epoll) = (l.driver, l.epoll);
    let mut events = Vec::with_capacity(256);
    let mut armed: Option<Time> = None;
    loop {
        if epoll.wait(&mut events, None).is_err() {
            // epoll_wait fails only on programming errors; back off rather than spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        driver.wakeups.fetch_add(1, Ordering::Relaxed);
        let woke = Instant::now();
        l.due.clear();
        l.step_ns.clear();
        for ev in &events {
            match Token::decode(ev.u64) {
                Token::Wake => {
                    driver.eventfd.drain();
                    let inbox = std::mem::take(&mut *driver.inbox.lock().unwrap_or_else(|p| p.into_inner()));
                    for flow in inbox.new {
                        l.add(flow);
                    }
                    l.due.extend(inbox.wake.into_iter().map(|id| (id, WokenBy::Other)));
                }
                Token::Timer => {
                    timer.drain();
                    armed = None;
                }
                Token::Flow(id) => l.due.push((id, WokenBy::socket_event(ev.events))),
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
                l.due.push((id, WokenBy::Other));
            }
        }
        // One step per flow; a flow due for a deadline or the application as well as for
        // its socket is stepped as woken by the other (`WokenBy::Other` sorts first; a
        // socket reports one event per wake-up).
        l.due.sort_unstable();
        l.due.dedup_by_key(|(id, _)| *id);
        let due = std::mem::take(&mut l.due);
        for &(id, woken_by) in &due {
            l.step(id, now, woken_by);
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
        let round = u64::try_from(woke.elapsed().as_nanos()).unwrap_or(u64::MAX);
        driver.latency.record_round(&l.step_ns, round);
    }
}

/// Watches the socket of `flow`, edge-triggered; an event already pending is reported at the
/// next wait.
fn watch(epoll: &Epoll, flow: &Flow) -> io::Result<()> {
    let mut events = (libc::EPOLLOUT | libc::EPOLLERR | libc::EPOLLHUP | libc::EPOLLET) as u32;
    if flow.reads_socket() {
        events |= libc::EPOLLIN as u32;
    }
    epoll.add(flow.fd.as_raw_fd(), events, Token::Flow(flow.id).encode())
}

impl Loop<'_> {
    fn add(&mut self, flow: Flow) {
        let id = flow.id;
        if let Err(e) = watch(self.epoll, &flow) {
            flow.shared.lock().fail(e.kind(), format!("epoll: {e}"));
            flow.shared.notify();
            return;
        }
        self.flows.insert(id, flow);
        self.due.push((id, WokenBy::Other));
    }

    /// Stops or resumes watching the socket of flow `id` as its last step asked
    /// (src/flow/socket_hold.rs): a held socket's events (each SCHED stamp an EPOLLERR, which
    /// no event mask can leave out) wake nothing until the flow's next step. A socket that
    /// cannot be watched again fails its flow.
    fn sync_watch(&mut self, id: FlowId) {
        let Some(flow) = self.flows.get_mut(&id) else { return };
        if flow.holds_socket == flow.socket_unwatched {
            return;
        }
        if flow.holds_socket {
            flow.socket_unwatched = self.epoll.delete(flow.fd.as_raw_fd()).is_ok();
            return;
        }
        if let Err(e) = watch(self.epoll, flow) {
            flow.shared.lock().fail(e.kind(), format!("epoll: {e}"));
            flow.shared.notify();
            self.release(id);
            return;
        }
        flow.socket_unwatched = false;
    }

    /// Forgets flow `id`: it leaves its group and its socket is no longer watched.
    fn release(&mut self, id: FlowId) {
        if let Some(mut flow) = self.flows.remove(&id) {
            flow.leave_group(&mut self.groups);
            if !flow.socket_unwatched {
                let _ = self.epoll.delete(flow.fd.as_raw_fd());
            }
            self.driver.flows.store(self.flows.len(), Ordering::Relaxed);
        }
    }

    /// The driver thread is going: every flow it holds or was handed fails with
    /// [`died_error`], and no flow is accepted any more.
    fn die(&mut self, why: &str) {
        let inbox = {
            let mut inbox = self.driver.inbox.lock().unwrap_or_else(|p| p.into_inner());
            DIED.store(true, Ordering::Release);
            std::mem::take(&mut *inbox)
        };
        let message = format!("{} (it panicked: {why})", died_error());
        for flow in inbox.new.iter().chain(self.flows.values()) {
            flow.shared.lock().fail(io::ErrorKind::Other, message.clone());
            flow.shared.notify();
        }
        self.flows.clear();
        self.driver.flows.store(0, Ordering::Relaxed);
    }

    fn step(&mut self, id: FlowId, now: Time, woken_by: WokenBy) {
        let Some(flow) = self.flows.get_mut(&id) else { return };
        let started = Instant::now();
        let groups = &mut self.groups;
        let next =
            catch_unwind(AssertUnwindSafe(|| flow.step(now, groups, woken_by))).unwrap_or_else(|payload| {
                // The flow's state may be half-updated: it ends here, the others go on.
                let message =
                    format!("alcc: this flow failed inside the driver: {}", panic_message(payload.as_ref()));
                flow.shared.lock().fail(io::ErrorKind::Other, message);
                flow.shared.notify();
                Next::Release
            });
        self.step_ns.push(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
        match next {
            Next::Keep(wake) => {
                // An earlier wake-up already scheduled serves as well (the step re-plans).
                let earlier = matches!((flow.scheduled, wake), (Some(s), Some(w)) if s > now && s <= w);
                if wake != flow.scheduled && !earlier {
                    flow.scheduled = wake;
                    if let Some(t) = wake {
                        self.deadlines.push(Reverse((t, id)));
                    }
                }
                self.sync_watch(id);
            }
            Next::Release => self.release(id),
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
