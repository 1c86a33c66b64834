//! End to end: a synthetic cellular trace drives a drop-tail FIFO link fed by a saturating
//! sender; the link writes a Mahimahi log; the log read back gives the same metrics as the
//! per-packet records the link kept itself, and those metrics are what the trace implies.

use std::collections::VecDeque;

use alcc_trace::metrics::{summarize, time_series, DEFAULT_BIN_US};
use alcc_trace::synth::{cellular, CellularModel};
use alcc_trace::{
    Log, LogHeader, LogWriter, Opportunity, PacketRecord, Recording, TimeUnit, Trace, PACKET_BYTES,
};

const PROPAGATION_US: u64 = 10_000;

/// Offers one 1500-byte packet every `gap_us` to a FIFO of at most `limit_bytes`, served by
/// `trace` for `run_ms`; returns the log text and the records the link kept.
fn run_link(
    trace: &Trace,
    gap_us: u64,
    limit_bytes: u64,
    run_ms: u64,
    unit: TimeUnit,
) -> (Vec<u8>, Recording) {
    let header = LogHeader {
        title: "scenario (downlink)".into(),
        queue: Some(format!("droptail [bytes={limit_bytes}]")),
        init_timestamp_ms: Some(1_700_000_000_000),
        base_timestamp_ms: Some(0),
        propagation_delay_us: Some(PROPAGATION_US),
        unit,
    };
    let mut log = LogWriter::new(Vec::new(), &header).unwrap();
    let mut records = Recording { propagation_delay_us: PROPAGATION_US, ..Recording::default() };
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut queued_bytes = 0;
    let mut next_arrival = 0;
    for at_ms in trace.opportunities_from(0).take_while(|&t| t < run_ms) {
        let at_us = at_ms * 1000;
        while next_arrival <= at_us {
            log.arrival(next_arrival, PACKET_BYTES).unwrap();
            records.packets.push(PacketRecord {
                bytes: PACKET_BYTES,
                sent_us: next_arrival,
                departed_us: None,
            });
            if queued_bytes + PACKET_BYTES <= limit_bytes {
                queue.push_back(records.packets.len() - 1);
                queued_bytes += PACKET_BYTES;
            } else {
                log.drop_packets(next_arrival, 1, PACKET_BYTES).unwrap();
            }
            next_arrival += gap_us;
        }
        log.opportunity(at_us, PACKET_BYTES).unwrap();
        records.opportunities.push(Opportunity { at_us, bytes: PACKET_BYTES });
        if let Some(i) = queue.pop_front() {
            queued_bytes -= PACKET_BYTES;
            records.packets[i].departed_us = Some(at_us);
            log.departure(at_us, PACKET_BYTES, records.packets[i].sent_us).unwrap();
        }
    }
    (log.finish().unwrap(), records)
}

#[test]
fn saturated_cellular_link() {
    let model = CellularModel { duration_ms: 30_000, ..CellularModel::default() };
    let trace = cellular(&model, 11).unwrap();
    // 24 Mbit/s offered (a packet every 0.5 ms) into a 150 kB buffer, for one trace period.
    let (text, direct) = run_link(&trace, 500, 150_000, 30_000, TimeUnit::Micros);
    let log = Log::parse("scenario.log", text.as_slice()).unwrap();
    let from_log = log.to_recording();
    let mut a = direct.packets.clone();
    let mut b = from_log.packets.clone();
    a.sort_by_key(|p| (p.sent_us, p.departed_us));
    b.sort_by_key(|p| (p.sent_us, p.departed_us));
    assert_eq!(a, b, "the log reconstructs every packet's fate");
    let s = summarize(&direct);
    assert_eq!(summarize(&from_log), s);

    // The capacity is the trace's, over the opportunities' span.
    let opportunities = trace.opportunities_ms().iter().filter(|&&t| t < 30_000).count() as f64;
    let first = trace.opportunities_ms()[0] as f64;
    let last = *trace.opportunities_ms().iter().rfind(|&&t| t < 30_000).unwrap() as f64;
    assert!((s.capacity_mbps - opportunities * 12.0 / (last - first)).abs() < 1e-9);
    // A saturated link uses every opportunity but the few before the first arrival.
    assert!(s.utilization > 0.99 && s.utilization < 1.01, "{}", s.utilization);
    // It drops what the link cannot carry: about 1 - capacity / offered.
    let expected_loss = 1.0 - s.capacity_mbps / 24.0;
    assert!((s.loss - expected_loss).abs() < 0.03, "loss {} vs {expected_loss}", s.loss);
    // Nothing waits longer than a full buffer at the slowest rate, and the median packet waits
    // about a full buffer at the mean rate (100 packets / (rate / 12 kbit per ms)).
    let p50 = s.delay_p50_ms.unwrap();
    let full_buffer_ms = 100.0 * 12.0 / s.capacity_mbps + PROPAGATION_US as f64 / 1000.0;
    assert!(p50 > 0.5 * full_buffer_ms && p50 < 3.0 * full_buffer_ms, "p50 {p50} vs {full_buffer_ms}");
    assert!(s.delay_p99_ms.unwrap() >= s.delay_p95_ms.unwrap());

    // The series adds up to the summary.
    let bins = time_series(&direct, DEFAULT_BIN_US).unwrap();
    let departed: f64 = bins.iter().map(|b| b.throughput_mbps * 0.5e6 / 8.0).sum();
    assert!((departed - s.bytes_departed as f64).abs() < 1e-3);
}

#[test]
fn millisecond_logs_match_their_own_rounding() {
    let trace = alcc_trace::synth::constant(6.0, 1000).unwrap();
    // A packet every 3 ms into a link that serves one every 2 ms: no queue builds.
    let (text, direct) = run_link(&trace, 3_000, 1_000_000, 3_000, TimeUnit::Millis);
    let s = summarize(&Log::parse("ms.log", text.as_slice()).unwrap().to_recording());
    let d = summarize(&direct);
    assert_eq!(s.loss, 0.0);
    assert_eq!(s.packets_departed, d.packets_departed);
    // Arrivals at 0, 3, 6, ..., 2997 ms meet opportunities at 2, 4, 6, ... ms: the first waits
    // 2 ms, then odd multiples of 3 wait 1 ms (500 packets), even ones 0 ms (499 packets).
    // Sorted delays with 10 ms propagation: 499 x 10, 500 x 11, 1 x 12 ms.
    assert_eq!(s.packets_departed, 1000);
    assert_eq!(s.delay_p50_ms, Some(11.0));
    assert_eq!(s.delay_p99_ms, Some(11.0));
    assert_eq!(s.delay_mean_ms, Some((499.0 * 10.0 + 500.0 * 11.0 + 12.0) / 1000.0));
}
