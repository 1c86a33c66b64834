//! The soak's schedule: every transfer's path, lane, mode, controller, size and fate, drawn
//! from one seed, so that the server process and the client process derive the same plan.

use alcc::Mode;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Transfers smaller than this always complete: a fate needs room to strike mid-transfer.
pub const FATE_MIN_SIZE: u64 = 1 << 20;
/// A reset or abort leaves at least this many bytes unread. The client's receive buffer is
/// locked at [`FATED_RCVBUF`], so these bytes cannot all have been acknowledged, and the
/// sender cannot have finished: it must see an error.
pub const FATE_UNREAD_MIN: u64 = 512 << 10;
/// The receive buffer of a client that will reset or abort (SO_RCVBUF, as read back).
pub const FATED_RCVBUF: u64 = 128 << 10;

/// Where a transfer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// The loopback interface of the server's network namespace.
    Loopback,
    /// Through the emulated link (alcc-link), with random loss.
    Emulated,
}

impl Path {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Path::Loopback => "loopback",
            Path::Emulated => "emulated",
        }
    }
}

/// What the client does to a transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Reads it to the end and checks every byte.
    Complete,
    /// Reads `at` bytes, then resets the connection (SO_LINGER 0 and close).
    Reset {
        /// Bytes read first.
        at: u64,
    },
    /// Reads `at` bytes, then closes without reading the rest (TCP answers the unread data
    /// with a reset; in UDP mode the closed port answers with ICMP port unreachable).
    Abort {
        /// Bytes read first.
        at: u64,
    },
}

impl Fate {
    /// Whether the client ends the transfer early.
    pub fn is_early_end(self) -> bool {
        !matches!(self, Fate::Complete)
    }
}

/// One transfer of the soak.
#[derive(Clone, Debug)]
pub struct Transfer {
    /// Position in the plan (from 0).
    pub index: usize,
    /// Loopback or emulated.
    pub path: Path,
    /// The lane (server port) that carries it; lanes are numbered across both paths.
    pub lane: usize,
    /// How feedback reaches the sender.
    pub mode: Mode,
    /// The sender's controller.
    pub cc: String,
    /// Bytes sent.
    pub size: u64,
    /// What the client does.
    pub fate: Fate,
}

impl Transfer {
    /// Where this transfer's bytes start in the content block: each transfer sends
    /// different bytes, so that a stream delivered to the wrong client cannot pass.
    pub fn content_offset(&self) -> u64 {
        self.index as u64 * 7919
    }
}

/// What the plan is made of.
#[derive(Clone, Debug)]
pub struct PlanSpec {
    /// Seed of every draw.
    pub seed: u64,
    /// Transfers over loopback.
    pub loopback: usize,
    /// Transfers through the emulator.
    pub emulated: usize,
    /// Concurrent transfers over loopback.
    pub loopback_lanes: usize,
    /// Concurrent transfers through the emulator.
    pub emulated_lanes: usize,
    /// Largest transfer, bytes.
    pub max_size: u64,
    /// Whether the server couples its flows to one peer (alcc's default, `Grouping::ByPeer`)
    /// or runs each alone (`Grouping::None`).
    pub coupled: bool,
    /// Whether UDP mode is in the mix (kernel and framed always are).
    pub udp: bool,
}

impl PlanSpec {
    /// All lanes.
    pub fn lanes(&self) -> usize {
        self.loopback_lanes + self.emulated_lanes
    }

    /// The command-line arguments that make another process derive the same plan.
    pub fn to_args(&self) -> Vec<String> {
        [
            ("--seed", self.seed),
            ("--loopback", self.loopback as u64),
            ("--emulated", self.emulated as u64),
            ("--loopback-lanes", self.loopback_lanes as u64),
            ("--emulated-lanes", self.emulated_lanes as u64),
            ("--max-size", self.max_size),
        ]
        .into_iter()
        .flat_map(|(k, v)| [k.to_string(), v.to_string()])
        .chain(["--grouping".to_string(), if self.coupled { "peer" } else { "none" }.to_string()])
        .chain([
            "--modes".to_string(),
            if self.udp { "kernel,framed,udp" } else { "kernel,framed" }.to_string(),
        ])
        .collect()
    }
}

/// Controllers per mode: the registered ones that mode can run (Sprout with its forecaster
/// needs an alcc receiver, so kernel mode has `sprout-ack` instead; `none` is plain TCP
/// through the engine, which UDP mode does not have).
fn controllers(mode: Mode) -> &'static [&'static str] {
    match mode {
        Mode::Kernel => &["copa", "verus", "sprout-ack", "reno", "cubic", "fixed:window=64", "none"],
        Mode::Framed => {
            &["copa", "verus", "sprout", "sprout-ack", "reno", "cubic", "fixed:window=64", "none"]
        }
        Mode::Udp => &["copa", "verus", "sprout", "reno", "cubic", "fixed:window=64"],
    }
}

/// A size between 0 and `max`: 0 in 3 % of draws, otherwise log-uniform over [1, max].
fn draw_size(rng: &mut ChaCha8Rng, max: u64) -> u64 {
    if rng.random_bool(0.03) {
        return 0;
    }
    let x: f64 = rng.random_range(0.0..=(max as f64).ln());
    (x.exp() as u64).clamp(1, max)
}

/// The plan: loopback and emulated transfers interleaved at random, each path's transfers
/// dealt round-robin to its lanes.
pub fn plan(spec: &PlanSpec) -> Vec<Transfer> {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let total = spec.loopback + spec.emulated;
    let (mut left_loop, mut left_emu) = (spec.loopback, spec.emulated);
    let (mut next_loop, mut next_emu) = (0usize, 0usize);
    let mut out = Vec::with_capacity(total);
    for index in 0..total {
        let emulated = rng.random_range(0..left_loop + left_emu) >= left_loop;
        let (path, lane) = if emulated {
            left_emu -= 1;
            next_emu += 1;
            (Path::Emulated, spec.loopback_lanes + (next_emu - 1) % spec.emulated_lanes.max(1))
        } else {
            left_loop -= 1;
            next_loop += 1;
            (Path::Loopback, (next_loop - 1) % spec.loopback_lanes.max(1))
        };
        let mode = match rng.random_range(0..10) {
            0..=4 => Mode::Kernel,
            5..=7 => Mode::Framed,
            _ if spec.udp => Mode::Udp,
            _ => Mode::Kernel,
        };
        let ccs = controllers(mode);
        let cc = ccs[rng.random_range(0..ccs.len())].to_string();
        let size = draw_size(&mut rng, spec.max_size);
        let roll: f64 = rng.random();
        let fate = if size < FATE_MIN_SIZE.max(FATE_UNREAD_MIN + 1) {
            Fate::Complete
        } else {
            let at = rng.random_range(0..=size - FATE_UNREAD_MIN);
            match roll {
                r if r < 0.1 => Fate::Reset { at },
                r if r < 0.2 => Fate::Abort { at },
                _ => Fate::Complete,
            }
        };
        out.push(Transfer { index, path, lane, mode, cc, size, fate });
    }
    out
}
