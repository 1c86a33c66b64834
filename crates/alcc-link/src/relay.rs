//! The I/O loop of one direction: read packets from the sending namespace's TUN device, pass
//! them through loss, the link and the delay line, write them into the receiving namespace's
//! device at their due time, and log every event.
//!
//! One thread per direction. Deadlines are absolute (a timerfd armed with TFD_TIMER_ABSTIME
//! on CLOCK_MONOTONIC, timer slack 1 ns, armed slightly early and finished by spinning), so
//! lateness does not accumulate; how late each
//! packet was actually written is measured ([`Lateness`]). Reads are drained in batches after
//! each wake-up. The threads run with SCHED_FIFO priority when allowed, so that compilers and
//! other busy processes on the machine do not delay packets (the loop always blocks in
//! `poll`, so it cannot starve them).

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use alcc_trace::{FlowId, LogHeader};

use crate::delay::DelayLine;
use crate::link::{Link, LinkCounters, LinkEvent};
use crate::logger::Logger;
use crate::loss::BernoulliLoss;
use crate::pool::PacketPool;
use crate::queue::Queued;
use crate::sys;
use crate::tun::Tun;

/// The longest the loop sleeps without a deadline, so that it notices a stop request and
/// keeps the log's opportunity lines flowing on an idle link.
const IDLE_WAKE_US: u64 = 50_000;
/// Packets read per wake-up before the loop serves its deadlines again.
const READ_BATCH: usize = 256;
/// The timer fires early by twice the measured wake-up latency (an EWMA) plus 20 µs, within
/// these bounds, and the thread spins the rest: waking a sleeping thread took 50 to 100 µs on
/// the virtual machines we measured.
const EARLY_WAKE_MIN_US: u64 = 10;
const EARLY_WAKE_MAX_US: u64 = 300;
const EARLY_WAKE_INITIAL_US: u64 = 100;
/// SCHED_FIFO priority of the relay threads (low among real-time threads, above every
/// ordinary process).
const REALTIME_PRIORITY: i32 = 10;
/// Free packet buffers a direction keeps for reuse (about 1.5 MB of 1500-byte packets).
const POOL_LIMIT: usize = 1024;

/// How late packets were written compared with their due time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lateness {
    /// Packets written.
    pub packets: u64,
    /// Sum of lateness, µs.
    pub total_us: u64,
    /// Largest lateness, µs.
    pub max_us: u64,
    /// Packets written more than 100 µs late.
    pub over_100us: u64,
    /// Packets written more than 500 µs late.
    pub over_500us: u64,
    /// Median lateness, µs (from a histogram of every packet's, 1 µs resolution).
    pub p50_us: u64,
    /// 99th percentile of lateness, µs.
    pub p99_us: u64,
    /// 99.9th percentile of lateness, µs.
    pub p999_us: u64,
}

/// Every packet's lateness, for [`Lateness`]'s percentiles (HdrHistogram: constant memory,
/// 3 significant digits, the same library as the engine's step latency).
struct LatenessRecorder {
    totals: Lateness,
    histogram: Option<hdrhistogram::Histogram<u64>>,
}

impl LatenessRecorder {
    fn new() -> Self {
        LatenessRecorder { totals: Lateness::default(), histogram: hdrhistogram::Histogram::new(3).ok() }
    }

    fn record(&mut self, late_us: u64) {
        self.totals.record(late_us);
        if let Some(h) = self.histogram.as_mut() {
            h.saturating_record(late_us);
        }
    }

    fn finish(self) -> Lateness {
        let mut l = self.totals;
        if let Some(h) = self.histogram.filter(|h| !h.is_empty()) {
            l.p50_us = h.value_at_quantile(0.5);
            l.p99_us = h.value_at_quantile(0.99);
            l.p999_us = h.value_at_quantile(0.999);
        }
        l
    }
}

impl Lateness {
    fn record(&mut self, late_us: u64) {
        self.packets += 1;
        self.total_us += late_us;
        self.max_us = self.max_us.max(late_us);
        self.over_100us += u64::from(late_us > 100);
        self.over_500us += u64::from(late_us > 500);
    }

    /// Mean lateness, µs.
    pub fn mean_us(&self) -> f64 {
        if self.packets == 0 {
            0.0
        } else {
            self.total_us as f64 / self.packets as f64
        }
    }
}

/// Counters of one direction, readable while it runs.
#[derive(Debug, Default)]
pub struct LiveCounters {
    arrivals: AtomicU64,
    departures: AtomicU64,
    departure_bytes: AtomicU64,
    drops: AtomicU64,
    lost: AtomicU64,
    opportunities: AtomicU64,
    delivered: AtomicU64,
}

/// A snapshot of [`LiveCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    /// Packets that reached the link (random losses excluded).
    pub arrivals: u64,
    /// Packets that left the link.
    pub departures: u64,
    /// Bytes that left the link.
    pub departure_bytes: u64,
    /// Packets the queue dropped.
    pub drops: u64,
    /// Packets lost at random before the queue.
    pub lost: u64,
    /// Delivery opportunities begun.
    pub opportunities: u64,
    /// Packets written to the receiving device.
    pub delivered: u64,
}

impl LiveCounters {
    fn publish(&self, c: &LinkCounters, lost: u64, delivered: u64) {
        self.arrivals.store(c.arrivals, Ordering::Relaxed);
        self.departures.store(c.departures, Ordering::Relaxed);
        self.departure_bytes.store(c.departure_bytes, Ordering::Relaxed);
        self.drops.store(c.drops, Ordering::Relaxed);
        self.lost.store(lost, Ordering::Relaxed);
        self.opportunities.store(c.opportunities, Ordering::Relaxed);
        self.delivered.store(delivered, Ordering::Relaxed);
    }

    /// The current values.
    pub fn snapshot(&self) -> CounterSnapshot {
        CounterSnapshot {
            arrivals: self.arrivals.load(Ordering::Relaxed),
            departures: self.departures.load(Ordering::Relaxed),
            departure_bytes: self.departure_bytes.load(Ordering::Relaxed),
            drops: self.drops.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            opportunities: self.opportunities.load(Ordering::Relaxed),
            delivered: self.delivered.load(Ordering::Relaxed),
        }
    }
}

/// What one direction did, once stopped.
#[derive(Clone, Debug, Default)]
pub struct DirectionReport {
    /// The link's totals.
    pub counters: LinkCounters,
    /// Packets lost at random before the queue.
    pub lost: u64,
    /// Packets written to the receiving device.
    pub delivered: u64,
    /// Packets the receiving device refused.
    pub write_errors: u64,
    /// Packets the sending device dropped before the relay read them (its queue,
    /// [`crate::testbed::DEVICE_QUEUE_PACKETS`], was full); `None` if unknown.
    pub device_drops: Option<u64>,
    /// Scheduling precision of the writes.
    pub lateness: Lateness,
    /// CPU time of the thread, µs.
    pub cpu_us: u64,
    /// Wall time the thread ran, µs.
    pub wall_us: u64,
    /// The first error that stopped the loop early, if any.
    pub error: Option<String>,
}

/// Everything one direction's thread owns.
pub(crate) struct Direction {
    pub(crate) link: Link<Vec<u8>>,
    pub(crate) delay: DelayLine<Vec<u8>>,
    pub(crate) loss: BernoulliLoss,
    pub(crate) log: Option<(File, LogHeader)>,
    pub(crate) flow_log: Option<(File, LogHeader)>,
    pub(crate) name: &'static str,
    pub(crate) src: Arc<Tun>,
    pub(crate) dst: Arc<Tun>,
    pub(crate) epoch_us: u64,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) live: Arc<LiveCounters>,
}

impl Direction {
    /// Runs until `stop` is set or a device fails.
    pub(crate) fn run(self) -> DirectionReport {
        let cpu0 = sys::thread_cpu_us();
        let wall0 = sys::monotonic_us();
        let mut report = DirectionReport::default();
        let mut lateness = LatenessRecorder::new();
        if let Err(e) = self.run_loop(&mut report, &mut lateness) {
            report.error = Some(e.to_string());
        }
        report.lateness = lateness.finish();
        report.cpu_us = sys::thread_cpu_us() - cpu0;
        report.wall_us = sys::monotonic_us() - wall0;
        report
    }

    fn run_loop(self, report: &mut DirectionReport, lateness: &mut LatenessRecorder) -> io::Result<()> {
        let Direction { mut link, mut delay, mut loss, log, flow_log, name, src, dst, epoch_us, stop, live } =
            self;
        let flows_logged = flow_log.is_some();
        sys::tighten_timer_slack();
        // Best effort: without it (no CAP_SYS_NICE) the loop still runs, less precisely.
        let _ = sys::set_realtime_priority(REALTIME_PRIORITY);
        let timer = File::from(sys::timerfd()?);
        let mut log: Option<Logger> = match (log, flow_log) {
            (None, None) => None,
            (log, flows) => Some(Logger::start(log, flows, name)?),
        };
        // The flow of the packet being enqueued (an arrival event carries no packet).
        let arriving = std::cell::Cell::new(FlowId::Other);
        let flow_of = |payload: &[u8]| if flows_logged { FlowId::of_ipv4(payload) } else { FlowId::Other };
        let mut buf = vec![0u8; 65_536];
        let pool = std::cell::RefCell::new(PacketPool::new(POOL_LIMIT));
        let mut armed: Option<u64> = None;
        let mut wake_at = 0u64;
        let mut wake_latency_us = (EARLY_WAKE_INITIAL_US - 20) as f64 / 2.0;
        let now_us = || sys::monotonic_us().saturating_sub(epoch_us);
        while !stop.load(Ordering::Relaxed) {
            let mut sink = |e: LinkEvent<Vec<u8>>| {
                if let Some(l) = log.as_mut() {
                    let flow = match &e {
                        LinkEvent::Opportunity { .. } => FlowId::Other,
                        LinkEvent::Arrival { .. } => arriving.get(),
                        LinkEvent::Drop { packet, .. } | LinkEvent::Departure { packet, .. } => {
                            flow_of(&packet.payload)
                        }
                    };
                    l.event(&e, flow);
                }
                match e {
                    LinkEvent::Departure { at_us, packet } => delay.push(at_us, packet.payload),
                    LinkEvent::Drop { packet, .. } => pool.borrow_mut().give_back(packet.payload),
                    LinkEvent::Opportunity { .. } | LinkEvent::Arrival { .. } => {}
                }
            };
            link.advance(now_us(), &mut sink);
            for _ in 0..READ_BATCH {
                match src.recv(&mut buf) {
                    Ok(n) => {
                        let now = now_us();
                        if loss.lose() {
                            link.advance(now, &mut sink);
                            report.lost += 1;
                            // Logged as an arrival and a drop of one packet, so that the
                            // log's loss rate includes random loss.
                            let bytes = n as u64;
                            arriving.set(flow_of(&buf[..n]));
                            sink(LinkEvent::Arrival { at_us: now, bytes });
                            // The payload only names the flow (when flows are logged).
                            let payload = if flows_logged {
                                pool.borrow_mut().copy_of(&buf[..n.min(64)])
                            } else {
                                Vec::new()
                            };
                            let packet = Queued { payload, bytes, arrival_us: now };
                            sink(LinkEvent::Drop { at_us: now, packet });
                        } else {
                            arriving.set(flow_of(&buf[..n]));
                            // Its own statement: the sink takes the pool back while enqueueing.
                            let packet = pool.borrow_mut().copy_of(&buf[..n]);
                            link.enqueue(now, packet, n as u64, &mut sink);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
            let now = now_us();
            while let Some((due, packet)) = delay.pop_due(now) {
                // Lateness when the write starts (the write itself runs the receiving
                // namespace's network stack).
                lateness.record(now_us().saturating_sub(due));
                match dst.send(&packet) {
                    Ok(_) => report.delivered += 1,
                    Err(_) => report.write_errors += 1,
                }
                pool.borrow_mut().give_back(packet);
            }
            live.publish(&link.counters(), report.lost, report.delivered);
            if let Some(l) = log.as_mut() {
                l.hand_over();
            }
            // The link's departures carry their own (opportunity) times, so the link needs
            // serving only when its next departure would be due at the output, one delay
            // later: one wake-up per delivered packet instead of two. Arrivals wake the loop
            // anyway and advance the link to their time first.
            let link_due = link.next_wakeup().map(|t| t.saturating_add(delay.delay_us()));
            let next = [link_due, delay.next_due()].into_iter().flatten().min();
            let deadline = next.unwrap_or(u64::MAX).min(now + IDLE_WAKE_US);
            if deadline <= now_us() {
                continue;
            }
            if armed != Some(deadline) {
                let early = ((wake_latency_us * 2.0) as u64 + 20).clamp(EARLY_WAKE_MIN_US, EARLY_WAKE_MAX_US);
                wake_at = deadline.saturating_sub(early).max(now_us() + 1);
                sys::timerfd_arm_at(timer.as_fd(), epoch_us + wake_at)?;
                armed = Some(deadline);
            }
            let [_, fired] = sys::poll_readable([src.as_fd(), timer.as_fd()], -1)?;
            if fired {
                let mut expirations = [0u8; 8];
                let _ = io::Read::read(&mut &timer, &mut expirations);
                let late = now_us().saturating_sub(wake_at) as f64;
                wake_latency_us += (late.min(EARLY_WAKE_MAX_US as f64) - wake_latency_us) / 8.0;
                // Woken early on purpose: spin the last few microseconds.
                while now_us() < deadline {
                    std::hint::spin_loop();
                }
                armed = None;
            }
        }
        // Account (and log) the opportunities up to the stop.
        link.advance(now_us(), &mut |e| {
            if let Some(l) = log.as_mut() {
                l.event(&e, FlowId::Other);
            }
        });
        report.counters = link.counters();
        match log {
            Some(l) => l.finish(),
            None => Ok(()),
        }
    }
}

/// Opens a log file for writing (truncating it).
pub(crate) fn create_log(path: &std::path::Path) -> Result<File, crate::LinkError> {
    File::create(path).map_err(|e| crate::LinkError::io(format!("creating log {}", path.display()), e))
}
