//! Exact tests of the MDI controller on small crafted models.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::event::AckSample;

/// Window buckets [-10, 0) (centre -5, "shrink") and [0, 10) (centre +5, "grow"); delay
/// buckets [-10, 0) ("fell") and [0, 10) ("rose"). Rows are (d, w) = (0,0), (0,1), (1,0),
/// (1,1); each row holds block c = 0 (delay fell) then c = 1 (delay rose). Every seen block is
/// certain: grow when the delay fell, shrink when it rose. Row 2's "rose" block is unseen.
const CERTAIN: &str = "2,-10,0,10,2,-10,0,10
0,1,1,0
0,1,1,0
0,1,0,0
0,1,1,0
";

/// Same layout; from state (1, 1) with the delay rising, shrink or grow with equal chance.
const COIN: &str = "2,-10,0,10,2,-10,0,10
0,1,1,0
0,1,1,0
0,1,1,0
0,1,0.5,0.5
";

const MSS: u64 = 1000;

fn mdi(text: &str, seed: u64) -> Mdi {
    let model = Arc::new(MdiModel::read(text.as_bytes()).unwrap());
    Mdi::new(model, seed, &Config { mss: MSS, seed: 99 })
}

fn ack(c: &mut Mdi, at_ms: u64, rtt_us: u64) {
    let sample = AckSample {
        seq: 0,
        bytes: MSS,
        sent_at: Time::ZERO,
        rtt: Duration::from_micros(rtt_us),
        bytes_in_flight: 0,
        delivered: MSS,
        memo: 0,
    };
    c.on_ack(Time::from_millis(at_ms), &sample);
}

fn timer(c: &mut Mdi, at_ms: u64) {
    c.on_timer(Time::from_millis(at_ms));
}

#[test]
fn one_decision_per_epoch_from_the_delay_trend() {
    let mut c = mdi(CERTAIN, 1);
    assert_eq!(c.decision(), Decision { window: 10_000, pacing_rate: None });
    assert_eq!(c.next_timer(), None);
    ack(&mut c, 0, 100_000); // starts the clock: epochs end at 5, 10, 15 ms ...
    assert_eq!(c.next_timer(), Some(Time::from_millis(5)));
    ack(&mut c, 1, 100_000);
    timer(&mut c, 5); // first Dmax (100 ms): nothing to compare with yet
    assert_eq!(c.decision().window, 10_000);
    assert_eq!(c.stats().decisions, 0);

    ack(&mut c, 6, 104_000);
    ack(&mut c, 7, 110_000);
    ack(&mut c, 8, 101_000);
    timer(&mut c, 10);
    // Dmax 110: change (110/100 x 100 - 100) x log10(100) = +20 -> "rose" (clamped to the top
    // bucket). State (1, 1) -> shrink by 5 % weighted by log10(10) = 1: 10 x (1 - 0.05) = 9.5.
    assert_eq!(c.decision().window, 9_500);
    assert_eq!(c.state(), (1, 0));

    ack(&mut c, 11, 99_000);
    timer(&mut c, 15);
    // Dmax 99 < 110: "fell"; state (1, 0) -> grow: 9.5 x (1 + 5 / (100 x log10 9.5)).
    let expected = 9.5 * (1.0 + 5.0 / (100.0 * 9.5f64.log10()));
    assert_eq!(c.window_packets(), expected);
    assert_eq!(c.decision().window, (expected * MSS as f64) as u64);
    assert_eq!(c.state(), (0, 1));
    assert_eq!(c.stats(), MdiStats { epochs: 3, decisions: 2, unseen: 0 });
}

#[test]
fn an_unseen_situation_uses_the_nearest_seen_state() {
    let mut c = mdi(CERTAIN, 1);
    ack(&mut c, 0, 100_000);
    timer(&mut c, 5); // Dmax 100
    ack(&mut c, 6, 120_000);
    timer(&mut c, 10); // rose: state (1, 0), window 9.5
    assert_eq!(c.state(), (1, 0));
    ack(&mut c, 11, 130_000);
    timer(&mut c, 15);
    // Row 2 (1, 0) has never seen "rose". Seen rows for "rose": 0 (0,0) at distance 1,
    // 1 (0,1) at 2, 3 (1,1) at 1: the tie goes to row 0, which shrinks.
    assert_eq!(c.stats().unseen, 1);
    let expected = 9.5 * (1.0 - 5.0 / (100.0 * 9.5f64.log10()));
    assert_eq!(c.window_packets(), expected);
    assert_eq!(c.state(), (1, 0));
}

#[test]
fn silence_counts_as_delay_and_a_jump_runs_one_epoch() {
    let mut c = mdi(CERTAIN, 1);
    ack(&mut c, 0, 50_000);
    timer(&mut c, 5); // Dmax 50
    timer(&mut c, 10); // no ACK: max(50, 10 ms of silence) = 50: change 0 -> "rose" bucket
    assert_eq!(c.decision().window, 9_500);
    // Jump to 200 ms: one epoch, Dmax = 200 ms of silence (rose) -> shrink again.
    timer(&mut c, 200);
    assert_eq!(c.stats().epochs, 3);
    assert_eq!(c.next_timer(), Some(Time::from_millis(205)));
    assert!(c.window_packets() < 9.5);
}

#[test]
fn an_ack_after_the_epoch_end_closes_the_epoch_first() {
    // Transport A serves the timer before the ACK, transport B delivers the ACK first.
    let mut a = mdi(CERTAIN, 1);
    let mut b = mdi(CERTAIN, 1);
    for c in [&mut a, &mut b] {
        ack(c, 0, 100_000);
        timer(c, 5);
        ack(c, 6, 90_000);
    }
    timer(&mut a, 10);
    ack(&mut a, 10, 200_000);
    ack(&mut b, 10, 200_000);
    timer(&mut b, 10);
    // Both closed epoch (5, 10] with Dmax 90 ("fell": grow); the 200 ms sample is the next's.
    assert_eq!(a.window_packets(), b.window_packets());
    assert!(a.window_packets() > INITIAL_WINDOW);
    timer(&mut a, 15);
    timer(&mut b, 15);
    assert_eq!(a.window_packets(), b.window_packets());
    assert_eq!(a.state(), (1, 0));
}

#[test]
fn the_window_stays_within_its_limits() {
    // Certain "shrink by 30" everywhere: the window falls to MIN_WINDOW and stays.
    let layout_line = "2,-60,0,60,1,-5,-5,5\n";
    let text = format!("{layout_line}1,0\n1,0\n");
    let mut c = mdi(&text, 1);
    for ms in 0..100 {
        ack(&mut c, ms, 40_000);
    }
    assert_eq!(c.window_packets(), MIN_WINDOW);
    assert_eq!(c.decision().window, 2 * MSS);
    // Certain "grow by 30": the window rises towards MAX_WINDOW and stops there.
    let text = format!("{layout_line}0,1\n0,1\n");
    let mut c = mdi(&text, 1);
    for ms in 0..20_000 {
        ack(&mut c, ms, 40_000);
    }
    assert_eq!(c.window_packets(), MAX_WINDOW);
}

#[test]
fn sampling_follows_the_seeded_stream() {
    // From state (1, 1) with the delay rising every epoch, COIN shrinks when u < 0.5 and grows
    // otherwise; after a shrink the state is (1, 0), which always shrinks ("rose" in row 2
    // of COIN is certain), so the first draw decides the first move only.
    for seed in 0..50 {
        let mut c = mdi(COIN, seed);
        let u = sampler::Uniform::new(seed).next_f64();
        ack(&mut c, 0, 100_000);
        timer(&mut c, 5);
        ack(&mut c, 6, 110_000);
        timer(&mut c, 10);
        let grew = c.window_packets() > INITIAL_WINDOW;
        assert_eq!(grew, u >= 0.5, "seed {seed}, u {u}");
    }
}

#[test]
fn same_seed_same_decisions() {
    let run = |seed: u64| {
        let mut c = mdi(COIN, seed);
        let mut windows = Vec::new();
        for k in 0..4000u64 {
            // Rising delay every epoch keeps the flow in the delay-rose states.
            ack(&mut c, k * 5 + 1, 100_000 + k * 1000);
            timer(&mut c, k * 5 + 5);
            windows.push(c.decision().window);
        }
        windows
    };
    let a = run(7);
    let b = run(7);
    let other = run(8);
    assert_eq!(a, b);
    assert_ne!(a, other);
}

#[test]
fn spec_reads_the_model_file_and_names_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("alcc-mdi-spec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.csv");
    let bad = dir.join("bad.csv");
    std::fs::write(&good, CERTAIN).unwrap();
    std::fs::write(&bad, "2,-10,0,10,2,-10,0,10\n0,1,1,0\n0,x,1,0\n").unwrap();
    let result = std::panic::catch_unwind(|| {
        let c = crate::registry::by_name(&format!("mdi:model={},seed=3", good.display())).unwrap();
        assert_eq!(c.name(), "mdi");
        assert_eq!(c.decision().window, 10 * Config::default().mss);
        let builtin = crate::registry::by_name("mdi").unwrap();
        assert_eq!(builtin.decision().window, 10 * Config::default().mss);
        let err =
            crate::registry::by_name(&format!("mdi:model={}", bad.display())).err().unwrap().to_string();
        assert!(err.contains("bad.csv") && err.contains("line 3"), "{err}");
        let missing = dir.join("missing.csv");
        let err =
            crate::registry::by_name(&format!("mdi:model={}", missing.display())).err().unwrap().to_string();
        assert!(err.contains("missing.csv") && err.contains("cannot read"), "{err}");
    });
    std::fs::remove_dir_all(&dir).unwrap();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn random_events_keep_the_invariants() {
    use proptest::prelude::*;
    let model = Arc::new(MdiModel::read(COIN.as_bytes()).unwrap());
    proptest!(|(ops in crate::testing::ops(), seed in any::<u64>())| {
        let mut c = Mdi::new(Arc::clone(&model), seed, &Config::default());
        crate::testing::drive(&mut c, &ops, 2 * Config::default().mss)?;
    });
}

#[test]
fn the_builtin_model_imitates_verus_on_the_published_layout() {
    let m = builtin_model().unwrap();
    assert_eq!(m.layout(), Layout::published());
    assert!(Arc::ptr_eq(&m, &builtin_model().unwrap()));
}
