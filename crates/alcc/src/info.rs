//! [`FlowInfo`]: what one flow's controller and kernel socket are doing, for telemetry and
//! for applications.

use alcc_cc::Metrics;
use serde::Serialize;

use crate::sys::TcpInfo;

/// A snapshot of one flow.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct FlowInfo {
    /// The controller's specification (`copa:delta=0.5`), or `none` for plain kernel TCP.
    pub controller: String,
    /// The kernel congestion control under it (`cubic`, `reno`, `bbr`).
    pub underlay: String,
    /// The kernel congestion control the socket had when the flow started, before alcc
    /// chose its underlay (its listener's, or the host's default when nobody set one on the
    /// listener; empty in UDP mode). `bbr` here under another underlay means the kernel
    /// still paces the socket: BBR's init turned the kernel's pacing on and changing the
    /// congestion control never turns it off (crates/alcc/src/underlay/initial.rs).
    pub prior_congestion: String,
    /// The controller's own metrics (`None` for `none`).
    pub metrics: Option<Metrics>,
    /// The window in force in bytes (`u64::MAX` when unbounded): the controller's, or in a
    /// flow group its share of it.
    pub window: u64,
    /// The flow's share in its group (RFC 8699's `FSE_R`), bytes/s, as last applied; `None`
    /// for an uncoupled flow or before it joined (docs/coupled-flows.md).
    pub group_share: Option<f64>,
    /// Steps at which the group's share differed from the controller's own rate and was
    /// applied (0 for a flow alone in its group: it runs exactly as an uncoupled flow).
    pub shares_applied: u64,
    /// The controller's pacing rate in bytes/s, if it paces.
    pub pacing_rate: Option<u64>,
    /// Bytes written into the kernel and not yet acknowledged.
    pub bytes_in_flight: u64,
    /// The largest `bytes_in_flight` seen right after a write.
    pub max_bytes_in_flight: u64,
    /// The most bytes in flight beyond the controller's window right after a write; 0 when
    /// every write fitted the window in force at that moment.
    pub max_window_overshoot: u64,
    /// Bytes waiting in alcc's send queue.
    pub queued: u64,
    /// Bytes written into the kernel so far.
    pub bytes_written: u64,
    /// Bytes the peer acknowledged so far.
    pub bytes_acked: u64,
    /// Chunks handed to the kernel.
    pub chunks_sent: u64,
    /// Loss events handed to the controller.
    pub losses: u64,
    /// ACK timestamps read from the error queue.
    pub ack_stamps: u64,
    /// Chunks acknowledged by an ACK timestamp that matched them (framed and UDP mode: by an
    /// ACK frame or datagram).
    pub stamp_acks: u64,
    /// Chunks acknowledged through TCP_INFO because no ACK timestamp had come for them.
    pub info_acks: u64,
    /// UDP mode: datagrams that reached the flow's socket without its connection id (another
    /// flow's, a forgery, garbage), dropped without effect (docs/wire-format.md).
    pub foreign_datagrams: u64,
    /// Kernel mode: steps woken by the socket alone that ended after one TCP_INFO read showed
    /// nothing new (a SCHED stamp of a segment sent from the kernel's queue).
    pub quiet_steps: u64,
    /// Kernel mode: steps after which the driver left the socket's events unheard until the
    /// flow's next step, the controller's feedback being able to wait for it (`socket_hold`).
    pub socket_holds: u64,
    /// Sum over ACK stamps of the time from the kernel stamping the ACK to the driver reading
    /// it, microseconds: divided by `ack_stamps`, the mean user-space feedback latency.
    pub ack_latency_total_us: u64,
    /// The longest time an ACK stamp waited for the driver, microseconds.
    pub ack_latency_max_us: u64,
    /// The kernel's congestion window in bytes (`snd_cwnd` x `snd_mss`).
    pub kernel_cwnd: u64,
    /// The kernel's congestion window in segments.
    pub kernel_cwnd_segments: u32,
    /// The kernel's MSS.
    pub kernel_mss: u32,
    /// The kernel's smoothed RTT, microseconds.
    pub kernel_rtt_us: u32,
    /// The kernel's minimum RTT, microseconds.
    pub kernel_min_rtt_us: u32,
    /// Bytes in the kernel not yet sent (`tcpi_notsent_bytes`).
    pub kernel_notsent: u32,
    /// Segments the kernel has sent and not yet seen acknowledged.
    pub kernel_unacked_segments: u32,
    /// The kernel's delivery-rate estimate, bytes/s.
    pub kernel_delivery_rate: u64,
    /// The kernel's own pacing rate, bytes/s.
    pub kernel_pacing_rate: u64,
    /// Segments the kernel retransmitted.
    pub kernel_total_retrans: u32,
    /// The cap on the kernel's pacing (SO_MAX_PACING_RATE), bytes/s; `u64::MAX`: none.
    pub kernel_max_pacing_rate: u64,
    /// Microseconds the kernel had data in flight (`tcpi_busy_time`).
    pub kernel_busy_us: u64,
    /// Of those, microseconds it was limited by the peer's receive window (`tcpi_rwnd_limited`).
    pub kernel_rwnd_limited_us: u64,
    /// Of those, microseconds it was limited by the send buffer (`tcpi_sndbuf_limited`).
    pub kernel_sndbuf_limited_us: u64,
    /// The peer's advertised receive window, bytes (`tcpi_snd_wnd`).
    pub kernel_snd_wnd: u32,
    /// Retransmission timeouts so far (`tcpi_total_rto`).
    pub kernel_total_rto: u16,
    /// Under alcc's BPF underlay, the kernel window last written for this socket, segments
    /// (the kernel takes it on its next ACK); 0 over a kernel congestion control.
    pub underlay_cwnd_segments: u32,
}

impl FlowInfo {
    /// Fills the kernel fields from a TCP_INFO.
    pub(crate) fn set_kernel(&mut self, i: &TcpInfo) {
        self.kernel_cwnd_segments = i.snd_cwnd;
        self.kernel_mss = i.snd_mss;
        self.kernel_cwnd = u64::from(i.snd_cwnd) * u64::from(i.snd_mss);
        self.kernel_rtt_us = i.rtt;
        self.kernel_min_rtt_us = i.min_rtt;
        self.kernel_notsent = i.notsent_bytes;
        self.kernel_unacked_segments = i.unacked;
        self.kernel_delivery_rate = i.delivery_rate;
        self.kernel_pacing_rate = i.pacing_rate;
        self.kernel_total_retrans = i.total_retrans;
        self.kernel_max_pacing_rate = i.max_pacing_rate;
        self.kernel_busy_us = i.busy_time;
        self.kernel_rwnd_limited_us = i.rwnd_limited;
        self.kernel_sndbuf_limited_us = i.sndbuf_limited;
        self.kernel_snd_wnd = i.snd_wnd;
        self.kernel_total_rto = i.total_rto;
    }
}
