//! Verus in the simulator: the scenario targets, and the ordering of the Verus
//! reproduction report (Verus R = 2, 4, 6 and CUBIC on the Verus paper's Etisalat trace):
//! delay rises with R and CUBIC's is the highest. What a simulated minute of Verus costs is
//! measured by `cargo bench -p alcc-cc --bench sim -- verus_reference` (no timed tests).

mod common;

use alcc_trace::metrics::Summary;

/// The loss-based baseline the issue compares against.
fn baseline() -> &'static str {
    "cubic"
}

#[test]
fn reference_link_r2_keeps_a_quarter_of_the_baseline_delay() {
    let s = common::reference_link();
    let base = common::run(&s, baseline());
    let verus = common::run(&s, "verus:r=2");
    assert!(common::p95(&verus) < common::p95(&base) / 4.0, "verus {verus:?}\nbaseline {base:?}");
    assert!(verus.utilization > 0.9, "{verus:?}");
}

#[test]
fn reference_link_delay_rises_with_r() {
    let s = common::reference_link();
    let runs: Vec<Summary> =
        ["verus:r=2", "verus:r=4", "verus:r=6"].iter().map(|spec| common::run(&s, spec)).collect();
    for pair in runs.windows(2) {
        assert!(common::p95(&pair[0]) < common::p95(&pair[1]), "{pair:?}");
    }
    for run in &runs {
        assert!(run.utilization > 0.9, "{run:?}");
        // Verus keeps p95 under R x the round trip (a queue of at most (R - 1) round trips),
        // far from the 1000 ms a full buffer would give.
        assert!(common::p95(run) < 400.0, "{run:?}");
    }
}

#[test]
fn synthetic_cellular_trace_a_quarter_of_the_baseline_delay() {
    for seed in [1, 2] {
        let s = common::cellular_link(seed);
        let base = common::run(&s, baseline());
        let verus = common::run(&s, "verus:r=2");
        assert!(
            common::p95(&verus) * 4.0 <= common::p95(&base),
            "seed {seed}\nverus {verus:?}\nbase {base:?}"
        );
        assert!(
            verus.throughput_mbps >= 0.7 * base.throughput_mbps,
            "seed {seed}\nverus {verus:?}\nbase {base:?}"
        );
    }
}

/// The Verus reproduction report's table ordering on the Etisalat highway trace (and the
/// other traces published with the ALCC paper): p95 delay rises with R, the baseline's is
/// the highest, and throughput does not fall as R grows.
#[test]
fn etisalat_traces_order_delay_by_r_and_baseline_highest() {
    let base_spec = baseline();
    for trace in ["alcc-paper/highwayGold.trace", "alcc-paper/City.trace", "alcc-paper/CampusWalk.trace"] {
        let Some(s) = common::shared_trace_link(trace) else { return };
        eprintln!("{trace}:");
        let specs = ["verus:r=2", "verus:r=4", "verus:r=6", base_spec];
        let runs: Vec<Summary> = specs.iter().map(|spec| common::run(&s, spec)).collect();
        for i in 0..3 {
            assert!(
                common::p95(&runs[i]) < common::p95(&runs[i + 1]),
                "{trace}: {} vs {}",
                specs[i],
                specs[i + 1]
            );
        }
        for i in 0..2 {
            assert!(
                runs[i].throughput_mbps <= runs[i + 1].throughput_mbps * 1.02,
                "{trace}: throughput {} vs {}",
                specs[i],
                specs[i + 1]
            );
        }
    }
}
