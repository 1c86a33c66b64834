//! Four Copa flows over one bottleneck in the simulator ([`alcc_cc::sim::flows`]), coupled in
//! one flow group (as `alcc serve --group auto` couples them) or each alone: what the group
//! does to the queue, deterministically (issue 14's delay goal; bench/coupled-results.md).
//! The flows run `copa:mode=drain`: a group leaves the competitive mode by draining together
//! (docs/coupled-flows.md), which the default `mode=nocheck` (the authors' switch) never does.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alcc_cc::fse::FlowGroup;
use alcc_cc::sim::{FlowSpec, Scenario, SimResult};
use alcc_cc::{registry, Controller};
use common::coupled::{Grouped, Probe, Sample};

/// What a run of several flows came to.
#[derive(Debug)]
struct Outcome {
    /// All flows' delivered bytes over the run, Mbit/s.
    aggregate_mbps: f64,
    /// p95 one-way delay of every delivered packet of every flow, ms.
    p95_ms: f64,
    /// Each flow's share of the delivered bytes.
    shares: Vec<f64>,
    /// The fraction of samples (100 ms, every flow) in Copa's competitive mode.
    competitive: f64,
    /// The longest stretch in competitive mode of any flow, seconds.
    longest_competitive_s: f64,
}

/// Runs `weights.len()` Copa flows (`spec`), started `stagger` apart, coupled in one group or
/// each alone.
fn run(s: &Scenario, spec: &str, weights: &[f64], coupled: bool, stagger: Duration) -> Outcome {
    let group = Arc::new(Mutex::new(FlowGroup::new()));
    let mut probes = Vec::new();
    let flows = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let copa = registry::build(spec, &s.config()).unwrap();
            let (probe, samples) = Probe::new(copa, Duration::from_millis(100));
            probes.push(samples);
            let controller: Box<dyn Controller> = if coupled {
                Box::new(Grouped::new(Box::new(probe), group.clone(), w))
            } else {
                Box::new(probe)
            };
            FlowSpec::new(stagger * i as u32, controller)
        })
        .collect();
    let results = s.run_flows(flows).unwrap();
    outcome(s, &results, &probes)
}

fn outcome(s: &Scenario, results: &[SimResult], probes: &[Arc<Mutex<Vec<Sample>>>]) -> Outcome {
    let bytes: Vec<f64> = results
        .iter()
        .map(|r| r.packets.iter().filter(|p| p.one_way_delay().is_some()).map(|p| p.bytes as f64).sum())
        .collect();
    let total: f64 = bytes.iter().sum();
    let mut delays: Vec<f64> = results
        .iter()
        .flat_map(|r| r.packets.iter().filter_map(|p| p.one_way_delay()))
        .map(|d| d.as_secs_f64() * 1e3)
        .collect();
    delays.sort_by(f64::total_cmp);
    let p95_ms = delays[((delays.len() - 1) as f64 * 0.95) as usize];
    let (mut n, mut comp, mut longest) = (0usize, 0usize, 0.0f64);
    for samples in probes {
        let samples = samples.lock().unwrap();
        let mut since = None;
        for x in samples.iter() {
            n += 1;
            if x.state == "competitive" {
                comp += 1;
                let from = *since.get_or_insert(x.at);
                longest = longest.max(x.at.saturating_since(from).as_secs_f64());
            } else {
                since = None;
            }
        }
    }
    Outcome {
        aggregate_mbps: total * 8.0 / s.duration.as_secs_f64() / 1e6,
        p95_ms,
        shares: bytes.iter().map(|b| b / total).collect(),
        competitive: comp as f64 / n.max(1) as f64,
        longest_competitive_s: longest,
    }
}

/// A coupled group of four Copa flows, equal weights and 1:2:3:4, over the 12 Mbit/s link and
/// the synthetic cellular trace: the group drains its queue together, so Copa's competitive
/// mode, entered when the queue did not empty for a while, ends within a few seconds, and the
/// p95 one-way delay stays near the four-flow equilibrium. Before the group drained together,
/// each flow's drain check was undone by the share at its next step and the others kept the
/// queue full: the group stayed in competitive mode for 17 s (cellular, equal weights; p95
/// 444 ms) and 26 s (12 Mbit/s, 1:2:3:4; p95 717 ms).
#[test]
fn a_coupled_copa_group_drains_together_and_leaves_competitive_mode() {
    for (name, s) in [("const12", common::reference_link()), ("cellular", common::cellular_link(1))] {
        for weights in [[1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0]] {
            let o = run(&s, "copa:mode=drain", &weights, true, Duration::ZERO);
            let alone = run(&s, "copa:mode=drain", &weights, false, Duration::ZERO);
            eprintln!("{name} {weights:?}: coupled {o:?}\n  uncoupled {alone:?}");
            assert!(o.longest_competitive_s < 5.0, "{name} {weights:?}: {o:?}");
            assert!(o.p95_ms < 150.0, "{name} {weights:?}: {o:?}");
            // The weights still hold, and the link is used as by uncoupled flows.
            let sum: f64 = weights.iter().sum();
            for (share, w) in o.shares.iter().zip(weights) {
                assert!((share - w / sum).abs() < 0.1 * w / sum, "{name} {weights:?}: {o:?}");
            }
            assert!(o.aggregate_mbps > 0.95 * alone.aggregate_mbps, "{name}: {o:?} vs {alone:?}");
        }
    }
}

/// Prints the study (`cargo test --release -p alcc-cc --test fse_copa_group -- --ignored
/// --nocapture`): 4 Copa flows, coupled and uncoupled, equal and 1:2:3:4 weights, over the
/// 12 Mbit/s link and the synthetic cellular trace, flows started 0-9 ms apart.
#[test]
#[ignore]
fn study() {
    for (name, s) in [("const12", common::reference_link()), ("cellular", common::cellular_link(1))] {
        for weights in [[1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0]] {
            for coupled in [true, false] {
                for stagger_ms in [0, 1, 3, 7, 9] {
                    let o = run(&s, "copa:mode=drain", &weights, coupled, Duration::from_millis(stagger_ms));
                    eprintln!(
                        "{name:<9} w={weights:?} {:<9} stagger {stagger_ms} ms: agg {:5.2} Mbit/s p95 {:6.1} ms comp {:4.2} longest {:5.1} s shares {:.3?}",
                        if coupled { "coupled" } else { "uncoupled" },
                        o.aggregate_mbps, o.p95_ms, o.competitive, o.longest_competitive_s, o.shares
                    );
                }
            }
        }
    }
}
