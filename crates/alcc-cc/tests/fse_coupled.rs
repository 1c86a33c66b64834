//! A controller coupled through a flow group ([`alcc_cc::fse::Coupling`]), as the engine
//! couples its flows: a group of one flow runs exactly as the controller alone (same packets,
//! same windows, in the simulator), and the shares of a group reach controllers that adopt
//! them (Copa, Reno) and those that do not (`fixed`).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alcc_cc::fse::{FlowGroup, Share};
use alcc_cc::sim::{Capacity, Scenario};
use alcc_cc::{registry, AckSample, Config, Controller, Time};
use common::coupled::{couple_with, Grouped};

fn scenarios() -> Vec<Scenario> {
    let constant =
        Scenario { duration: Duration::from_secs(20), ..Scenario::new(Capacity::ConstantMbps(12.0)) };
    // A varying link: 1 to 8 packets per millisecond in a 2 s cycle.
    let ms: Vec<u64> =
        (1..=2000u64).flat_map(|t| std::iter::repeat_n(t, 1 + (t / 250) as usize % 8)).collect();
    let varying =
        Scenario { duration: Duration::from_secs(20), loss: 0.001, ..Scenario::new(Capacity::Trace(ms)) };
    vec![constant, varying]
}

#[test]
fn a_group_of_one_flow_runs_exactly_as_its_controller_alone() {
    for spec in ["copa", "reno", "cubic", "verus", "fixed:window=40"] {
        for s in scenarios() {
            let config = Config { mss: s.packet_bytes, seed: s.seed };
            let alone = s.run_with(registry::build(spec, &config).unwrap(), None).unwrap();
            let group = Arc::new(Mutex::new(FlowGroup::new()));
            let grouped = Grouped::new(registry::build(spec, &config).unwrap(), group.clone(), 3.0);
            let coupled = s.run_with(Box::new(grouped), None).unwrap();
            assert!(alone.packets.len() > 1000, "{spec}: the run sent {} packets", alone.packets.len());
            assert_eq!(alone.packets, coupled.packets, "{spec}: packets differ");
            assert_eq!(alone.windows, coupled.windows, "{spec}: windows differ");
            assert_eq!(group.lock().unwrap().len(), 1, "{spec}: the flow joined its group");
        }
    }
}

fn ack(seq: u64, bytes: u64, sent_at: Time, rtt: Duration) -> AckSample {
    AckSample { seq, bytes, sent_at, rtt, bytes_in_flight: 0, delivered: bytes, memo: 0 }
}

#[test]
fn shares_reach_adopting_and_non_adopting_controllers() {
    let rtt = Duration::from_millis(100);
    let config = Config { mss: 1000, seed: 0 };
    let group = Arc::new(Mutex::new(FlowGroup::new()));
    // Two `fixed` flows of 100 packets per RTT (1 MB/s each), weights 1 and 3: the aggregate
    // 2 MB/s is shared 0.5 : 1.5 MB/s by scaling their decisions (fixed does not adopt).
    let mut a = Grouped::new(registry::build("fixed:window=100", &config).unwrap(), group.clone(), 1.0);
    let mut b = Grouped::new(registry::build("fixed:window=100", &config).unwrap(), group.clone(), 3.0);
    a.mss = 1000;
    b.mss = 1000;
    // Feed each an RTT sample through its metrics-free path: fixed keeps no RTT, so couple
    // with an explicit RTT.
    for g in [&mut a, &mut b] {
        couple_with(g, Time::from_millis(1), rtt);
    }
    couple_with(&mut a, Time::from_millis(2), rtt);
    assert_eq!(group.lock().unwrap().aggregate(), 2_000_000.0);
    assert_eq!(a.decision().window, 50_000);
    assert_eq!(b.decision().window, 150_000);
    // Copa adopts: its own window becomes the share.
    let mut copa = registry::build("copa", &config).unwrap();
    copa.on_ack(Time::from_millis(100), &ack(0, 1000, Time::ZERO, rtt));
    copa.adopt_share(Time::from_millis(100), &Share { rate: 300_000.0, rtt });
    assert_eq!(copa.decision().window, 30_000);
    let mut reno = registry::build("reno", &config).unwrap();
    reno.adopt_share(Time::ZERO, &Share { rate: 10.0, rtt });
    assert_eq!(reno.decision().window, 2000, "never below two segments");
}

#[test]
fn controllers_continue_from_the_mean_and_flows_send_their_weighted_share() {
    // Two Copa flows, weights 1 and 3, 100 packets per RTT each: both controllers continue
    // from the mean (100 packets), the flows send 50 and 150 (their decisions are scaled).
    let rtt = Duration::from_millis(100);
    let config = Config { mss: 1000, seed: 0 };
    let group = Arc::new(Mutex::new(FlowGroup::new()));
    let mut flows: Vec<Grouped> = [1.0, 3.0]
        .iter()
        .map(|&w| {
            let mut c = registry::build("copa", &config).unwrap();
            c.on_ack(Time::from_millis(100), &ack(0, 1000, Time::ZERO, rtt));
            c.adopt_share(Time::from_millis(100), &Share { rate: 1_000_000.0, rtt });
            let mut g = Grouped::new(c, group.clone(), w);
            g.mss = 1000;
            g
        })
        .collect();
    for g in flows.iter_mut() {
        couple_with(g, Time::from_millis(101), rtt);
    }
    couple_with(&mut flows[0], Time::from_millis(102), rtt);
    assert_eq!(flows[0].inner.decision().window, 100_000, "the controller holds the mean");
    assert_eq!(flows[1].inner.decision().window, 100_000, "the controller holds the mean");
    assert_eq!(flows[0].decision().window, 50_000, "weight 1 sends a quarter");
    assert_eq!(flows[1].decision().window, 150_000, "weight 3 sends three quarters");
}
