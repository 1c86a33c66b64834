//! The public API: two network namespaces, "server" and "client", joined only by an emulated
//! uplink (client to server) and downlink (server to client).
//!
//! ```no_run
//! use alcc_link::{DirectionConfig, Schedule, Side, Testbed, TestbedConfig};
//! let link = DirectionConfig::new(Schedule::constant(1)?); // 12 Mbit/s
//! let tb = Testbed::start(TestbedConfig::symmetric(link, 20_000))?;
//! let status = tb.command(Side::Client, "ping").args(["-c", "3", &tb.server_addr().to_string()]).status();
//! let report = tb.stop();
//! # Ok::<(), alcc_link::LinkError>(())
//! ```

use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use alcc_trace::{LogHeader, TimeUnit};

use crate::delay::DelayLine;
use crate::error::LinkError;
use crate::link::Link;
use crate::loss::BernoulliLoss;
use crate::netns::{ip, Netns};
use crate::queue::QueueSpec;
use crate::relay::{create_log, CounterSnapshot, Direction, DirectionReport, LiveCounters};
use crate::schedule::Schedule;
use crate::sys;
use crate::tun::{Tun, DEVICE, MTU};

/// The server's address, inside the server namespace.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 64, 0, 1);
/// The client's address, inside the client namespace.
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 64, 0, 2);

/// One end of the testbed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The namespace holding [`SERVER_ADDR`] (the sender of the downlink).
    Server,
    /// The namespace holding [`CLIENT_ADDR`] (where `alcc link` runs its command).
    Client,
}

/// One direction of the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Client to server.
    Uplink,
    /// Server to client (the direction the ALCC paper measures).
    Downlink,
}

/// How one direction behaves.
#[derive(Clone, Debug)]
pub struct DirectionConfig {
    /// Delivery opportunities.
    pub schedule: Schedule,
    /// The bottleneck queue.
    pub queue: QueueSpec,
    /// Probability that a packet is lost before the queue.
    pub loss: f64,
    /// Where to write the Mahimahi-format log, if anywhere.
    pub log: Option<PathBuf>,
    /// Where to write the flow log (the same events in µs, each packet's flow named:
    /// alcc_trace::flow), if anywhere.
    pub flow_log: Option<PathBuf>,
}

impl DirectionConfig {
    /// An infinite queue, no loss, no log.
    pub fn new(schedule: Schedule) -> Self {
        DirectionConfig { schedule, queue: QueueSpec::Infinite, loss: 0.0, log: None, flow_log: None }
    }
}

/// How the whole testbed behaves.
#[derive(Clone, Debug)]
pub struct TestbedConfig {
    /// Client to server.
    pub uplink: DirectionConfig,
    /// Server to client.
    pub downlink: DirectionConfig,
    /// One-way propagation delay, µs, in each direction.
    pub delay_us: u64,
    /// Seed of the loss generators.
    pub seed: u64,
    /// Unit of the logs' times (Mahimahi writes ms).
    pub log_unit: TimeUnit,
}

impl TestbedConfig {
    /// The same link in both directions.
    pub fn symmetric(link: DirectionConfig, delay_us: u64) -> Self {
        TestbedConfig { uplink: link.clone(), downlink: link, delay_us, seed: 0, log_unit: TimeUnit::Millis }
    }
}

/// What both directions did.
#[derive(Clone, Debug, Default)]
pub struct TestbedReport {
    /// Client to server.
    pub uplink: DirectionReport,
    /// Server to client.
    pub downlink: DirectionReport,
}

/// Two namespaces joined by the emulated link; everything is removed on drop.
#[derive(Debug)]
pub struct Testbed {
    relays: Vec<JoinHandle<DirectionReport>>,
    stop: Arc<AtomicBool>,
    uplink: Arc<LiveCounters>,
    downlink: Arc<LiveCounters>,
    epoch_us: u64,
    // Declared last: dropped after the relays are stopped.
    server: Netns,
    client: Netns,
}

/// Packets the kernel holds in a TUN device's queue until the relay reads them (Linux's
/// default is 500: 3 ms at 2 Gbit/s). Packets beyond it are dropped before the emulator sees
/// them; a longer queue lets a relay that was kept from reading for a moment catch up
/// instead (what is still dropped is counted: [`DirectionReport::device_drops`]).
pub const DEVICE_QUEUE_PACKETS: u32 = 10_000;

fn configure(ns: &Netns, local: Ipv4Addr, peer: Ipv4Addr) -> Result<(), LinkError> {
    let n = ns.name();
    ip(&["-n", n, "link", "set", "dev", "lo", "up"])?;
    let qlen = DEVICE_QUEUE_PACKETS.to_string();
    ip(&["-n", n, "link", "set", "dev", DEVICE, "mtu", &MTU.to_string(), "txqueuelen", &qlen, "up"])?;
    ip(&["-n", n, "addr", "add", &local.to_string(), "peer", &format!("{peer}/32"), "dev", DEVICE])?;
    Ok(())
}

fn create_tun(ns: &Netns) -> Result<Tun, LinkError> {
    // No IPv6: the link carries only the traffic of the experiment (no router solicitations).
    let _ = ns.run_in(|| {
        for key in ["all", "default"] {
            let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{key}/disable_ipv6"), "1");
        }
    });
    Tun::create_in(ns).map_err(|e| LinkError::io(format!("creating {DEVICE} in {}", ns.name()), e))
}

impl Testbed {
    /// Creates the namespaces and devices and starts the relay threads.
    pub fn start(config: TestbedConfig) -> Result<Testbed, LinkError> {
        if !sys::is_root() {
            return Err(LinkError::NotRoot);
        }
        let up_loss = BernoulliLoss::new(config.uplink.loss, config.seed, 0)?;
        let down_loss = BernoulliLoss::new(config.downlink.loss, config.seed, 1)?;
        let server = Netns::create("server")?;
        let client = Netns::create("client")?;
        let server_tun = Arc::new(create_tun(&server)?);
        let client_tun = Arc::new(create_tun(&client)?);
        configure(&server, SERVER_ADDR, CLIENT_ADDR)?;
        configure(&client, CLIENT_ADDR, SERVER_ADDR)?;

        let init_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        let epoch_us = sys::monotonic_us();
        let stop = Arc::new(AtomicBool::new(false));
        let mut tb = Testbed {
            relays: Vec::new(),
            stop: stop.clone(),
            uplink: Arc::new(LiveCounters::default()),
            downlink: Arc::new(LiveCounters::default()),
            epoch_us,
            server,
            client,
        };
        let plan = [
            ("uplink", config.uplink, up_loss, client_tun.clone(), server_tun.clone(), tb.uplink.clone()),
            ("downlink", config.downlink, down_loss, server_tun, client_tun, tb.downlink.clone()),
        ];
        for (name, dir, loss, src, dst, live) in plan {
            let header = |path: &std::path::Path, what: &str, unit: TimeUnit| LogHeader {
                title: format!(
                    "alcc link ({name}{what}) [{}] > {}",
                    dir.schedule.trace().name(),
                    path.display()
                ),
                queue: Some(dir.queue.to_string()),
                init_timestamp_ms: Some(init_ms),
                base_timestamp_ms: Some(0),
                propagation_delay_us: Some(config.delay_us),
                unit,
            };
            let log = match &dir.log {
                Some(path) => Some((create_log(path)?, header(path, "", config.log_unit))),
                None => None,
            };
            // A flow log is always in µs: flows are compared at sub-ms delays.
            let flow_log = match &dir.flow_log {
                Some(path) => Some((create_log(path)?, header(path, " flows", TimeUnit::Micros))),
                None => None,
            };
            let direction = Direction {
                link: Link::new(dir.schedule, dir.queue),
                delay: DelayLine::new(config.delay_us),
                loss,
                log,
                flow_log,
                name,
                src,
                dst,
                epoch_us,
                stop: stop.clone(),
                live,
            };
            let handle = std::thread::Builder::new()
                .name(format!("alcc-{name}"))
                .spawn(move || direction.run())
                .map_err(|e| LinkError::io("starting a relay thread", e))?;
            tb.relays.push(handle);
        }
        Ok(tb)
    }

    /// The server's address.
    pub fn server_addr(&self) -> Ipv4Addr {
        SERVER_ADDR
    }

    /// The client's address.
    pub fn client_addr(&self) -> Ipv4Addr {
        CLIENT_ADDR
    }

    /// The name of a side's namespace (for `ip netns exec`).
    pub fn namespace(&self, side: Side) -> &str {
        self.ns(side).name()
    }

    fn ns(&self, side: Side) -> &Netns {
        match side {
            Side::Server => &self.server,
            Side::Client => &self.client,
        }
    }

    /// A command running `program` in a side's namespace, with the environment variables
    /// `ALCC_SERVER` and `MAHIMAHI_BASE` (the server's address), `ALCC_CLIENT`, and
    /// `ALCC_SERVER_NS` / `ALCC_CLIENT_NS` (the namespaces' names). Whatever it starts is
    /// killed when the testbed goes away.
    pub fn command(&self, side: Side, program: &str) -> Command {
        let mut c = self.ns(side).command(program);
        c.env("ALCC_SERVER", SERVER_ADDR.to_string())
            .env("MAHIMAHI_BASE", SERVER_ADDR.to_string())
            .env("ALCC_CLIENT", CLIENT_ADDR.to_string())
            .env("ALCC_SERVER_NS", self.server.name())
            .env("ALCC_CLIENT_NS", self.client.name());
        c
    }

    /// Runs `f` on a thread inside a side's namespace (sockets it opens live there).
    pub fn run_in<T: Send>(&self, side: Side, f: impl FnOnce() -> T + Send) -> Result<T, LinkError> {
        self.ns(side).run_in(f).map_err(|e| LinkError::io(format!("entering {}", self.namespace(side)), e))
    }

    /// Sets a sysctl under `/proc/sys/` in a side's namespace, e.g.
    /// `("net/ipv4/tcp_congestion_control", "cubic")`.
    pub fn set_sysctl(&self, side: Side, key: &str, value: &str) -> Result<(), LinkError> {
        let path = format!("/proc/sys/{key}");
        self.run_in(side, || std::fs::write(&path, value))?
            .map_err(|e| LinkError::io(format!("writing {path} in {}", self.namespace(side)), e))
    }

    /// Counters of one direction, now.
    pub fn counters(&self, dir: Dir) -> CounterSnapshot {
        match dir {
            Dir::Uplink => self.uplink.snapshot(),
            Dir::Downlink => self.downlink.snapshot(),
        }
    }

    /// Microseconds since the link started (time 0 of the traces and logs).
    pub fn elapsed_us(&self) -> u64 {
        sys::monotonic_us().saturating_sub(self.epoch_us)
    }

    fn shutdown(&mut self) -> TestbedReport {
        // What each direction's sending device dropped before the relay read it: read while
        // the relays still hold the devices (they disappear with their last descriptor).
        let (up_drops, down_drops) = (device_tx_drops(&self.client), device_tx_drops(&self.server));
        self.stop.store(true, Ordering::Relaxed);
        let mut reports = self.relays.drain(..).map(|h| h.join().unwrap_or_default());
        let mut uplink = reports.next().unwrap_or_default();
        let mut downlink = reports.next().unwrap_or_default();
        uplink.device_drops = up_drops;
        downlink.device_drops = down_drops;
        TestbedReport { uplink, downlink }
    }

    /// Stops the relays (flushing the logs), kills what runs in the namespaces, removes them,
    /// and reports what each direction did.
    pub fn stop(mut self) -> TestbedReport {
        self.shutdown()
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if !self.relays.is_empty() {
            self.shutdown();
        }
        // The namespaces' guards then kill their processes and delete them.
    }
}

/// Packets the namespace's [`DEVICE`] dropped on transmit (its queue was full): the `dropped`
/// column of `ip -s link`'s TX statistics; `None` when they cannot be read.
fn device_tx_drops(ns: &Netns) -> Option<u64> {
    let out = ip(&["-n", ns.name(), "-s", "-o", "link", "show", "dev", DEVICE]).ok()?;
    parse_tx_dropped(&String::from_utf8_lossy(&out.stdout))
}

/// The TX `dropped` count of one line of `ip -s -o link show` (sections separated by `\`:
/// a `TX:` header, then its numbers).
fn parse_tx_dropped(line: &str) -> Option<u64> {
    let mut sections = line.split('\\').map(str::trim);
    sections.find(|s| s.starts_with("TX:"))?;
    sections.next()?.split_whitespace().nth(3)?.parse().ok()
}

/// Sets the TCP congestion control of one socket (`cubic`, `reno`, `bbr`, ...).
pub fn set_congestion_control(socket: &impl AsFd, name: &str) -> std::io::Result<()> {
    sys::set_string_sockopt(socket.as_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn tx_dropped_is_read_from_ip_s_o_link() {
        let line = "7: alcc0: <POINTOPOINT,UP> mtu 1500 qdisc fq_codel state UNKNOWN qlen 10000\\    link/none \\    RX:  bytes packets errors dropped  missed   mcast \\    10 1 0 0 0 0 \\    TX:  bytes packets errors dropped carrier collsns \\    3000 2 0 17 0 0 ";
        assert_eq!(super::parse_tx_dropped(line), Some(17));
        assert_eq!(super::parse_tx_dropped("garbage"), None);
    }
}
