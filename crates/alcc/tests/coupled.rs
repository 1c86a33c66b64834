//! Coupled flows (docs/coupled-flows.md) over real kernel TCP on loopback: a group divides
//! its aggregate by weight, a flow alone in its group runs as an uncoupled flow, flows join
//! and leave. Each test uses its own group name: the tests of this binary share one driver.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use alcc::{AlccListener, AlccStream, Grouping, Options};

/// A client that counts what it reads into `counter` until the connection ends.
fn counting_client(addr: std::net::SocketAddr, counter: Arc<AtomicU64>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut buf = vec![0u8; 64 << 10];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            counter.fetch_add(n as u64, Ordering::Relaxed);
        }
    })
}

/// Writes to `stream` until `stop` (then aborts it).
fn writer(mut stream: AlccStream, until: Instant) -> thread::JoinHandle<alcc::FlowInfo> {
    thread::spawn(move || {
        let buf = vec![7u8; 64 << 10];
        stream.set_write_timeout(Some(Duration::from_millis(50)));
        while Instant::now() < until {
            match stream.write(&buf) {
                Ok(_) => {}
                Err(e)
                    if e.kind() == std::io::ErrorKind::TimedOut
                        || e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("write: {e}"),
            }
        }
        let info = stream.info();
        stream.abort();
        info
    })
}

/// Flows of `weights` from one listener under `options`, each written for `secs`; returns
/// each flow's bytes between `from` and the end, and their final infos.
fn run_group(
    options: Options,
    weights: &[f64],
    from: Duration,
    secs: f64,
) -> (Vec<f64>, Vec<alcc::FlowInfo>) {
    let listener = AlccListener::bind("127.0.0.1:0", options).unwrap();
    let addr = listener.local_addr().unwrap();
    let counters: Vec<Arc<AtomicU64>> = weights.iter().map(|_| Arc::new(AtomicU64::new(0))).collect();
    let until = Instant::now() + Duration::from_secs_f64(secs);
    let mut clients = Vec::new();
    let mut writers = Vec::new();
    for (w, c) in weights.iter().zip(&counters) {
        clients.push(counting_client(addr, c.clone()));
        let (stream, _) = listener.accept().unwrap();
        stream.set_weight(*w).unwrap();
        writers.push(writer(stream, until));
    }
    thread::sleep(from.saturating_sub(Duration::ZERO));
    let at_from: Vec<u64> = counters.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let t0 = Instant::now();
    let infos: Vec<alcc::FlowInfo> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    let span = t0.elapsed().as_secs_f64();
    let rates =
        counters.iter().zip(at_from).map(|(c, a)| (c.load(Ordering::Relaxed) - a) as f64 / span).collect();
    for c in clients {
        c.join().unwrap();
    }
    (rates, infos)
}

#[test]
fn weights_one_to_four_divide_a_paced_aggregate() {
    // Four flows paced at 16 Mbit/s each (`fixed:rate=16`): the group's aggregate is 64 Mbit/s
    // (8 MB/s), shared 1:2:3:4. `fixed` does not adopt its share; its decision is scaled.
    let options = Options::with_cc("fixed:rate=16").grouping(Grouping::Named("weights".into()));
    let (rates, infos) = run_group(options, &[1.0, 2.0, 3.0, 4.0], Duration::from_secs(1), 3.0);
    let total: f64 = rates.iter().sum();
    eprintln!("rates {rates:?} total {total}");
    assert!((total / 8e6 - 1.0).abs() < 0.1, "aggregate {total} B/s, not 8 MB/s");
    for (i, r) in rates.iter().enumerate() {
        let want = (i + 1) as f64 / 10.0;
        assert!((r / total - want).abs() <= 0.1 * want, "flow {i}: share {:.3}, want {want}", r / total);
        assert!(infos[i].group_share.is_some() && infos[i].shares_applied > 0);
    }
}

#[test]
fn a_flow_alone_in_its_group_runs_as_an_uncoupled_flow() {
    // Copa adopts shares: alone in its group it must never be handed one that differs from
    // its own rate, so it runs exactly as it would uncoupled.
    for grouping in [Grouping::Named("alone".into()), Grouping::None] {
        let coupled = !matches!(grouping, Grouping::None);
        let options = Options::with_cc("copa").grouping(grouping).weight(3.0);
        let (rates, infos) = run_group(options, &[3.0], Duration::from_millis(200), 1.0);
        assert!(rates[0] > 0.0);
        assert_eq!(infos[0].shares_applied, 0, "a lone flow was handed a share");
        assert_eq!(infos[0].group_share.is_some(), coupled, "joined its group: {coupled}");
        if let Some(share) = infos[0].group_share {
            let own = infos[0].window as f64 / (infos[0].kernel_rtt_us as f64 / 1e6);
            assert!(share > 0.0 && share.is_finite(), "share {share}, own rate {own}");
        }
    }
}

#[test]
fn a_flow_that_ends_leaves_and_the_other_takes_its_share() {
    // Two flows paced at 16 Mbit/s each, weights 1 and 1: 1 MB/s each; when the first ends,
    // the second gets the whole 4 MB/s aggregate... of both rates (the group keeps S_CR).
    let options = Options::with_cc("fixed:rate=16").grouping(Grouping::Named("leave".into()));
    let listener = AlccListener::bind("127.0.0.1:0", options).unwrap();
    let addr = listener.local_addr().unwrap();
    let (ca, cb) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let client_a = counting_client(addr, ca.clone());
    let (a, _) = listener.accept().unwrap();
    let client_b = counting_client(addr, cb.clone());
    let (b, _) = listener.accept().unwrap();
    let start = Instant::now();
    let wa = writer(a, start + Duration::from_secs(1));
    let wb = writer(b, start + Duration::from_secs(3));
    thread::sleep(Duration::from_millis(500));
    let b_half = cb.load(Ordering::Relaxed);
    thread::sleep(Duration::from_millis(500));
    let b_one = cb.load(Ordering::Relaxed);
    wa.join().unwrap();
    client_a.join().unwrap();
    thread::sleep(Duration::from_millis(1000));
    let b_two = cb.load(Ordering::Relaxed);
    thread::sleep(Duration::from_millis(500));
    let b_late = cb.load(Ordering::Relaxed);
    let info = wb.join().unwrap();
    client_b.join().unwrap();
    let before = (b_one - b_half) as f64 / 0.5;
    let after = (b_late - b_two) as f64 / 0.5;
    eprintln!("b before {before} after {after}");
    // Together 4 MB/s: 2 MB/s each; alone, the second flow keeps the aggregate, 4 MB/s.
    assert!((before / 2e6 - 1.0).abs() < 0.15, "before the leave: {before} B/s");
    assert!((after / 4e6 - 1.0).abs() < 0.15, "after the leave: {after} B/s");
    assert!(info.group_share.is_some());
    let _ = std::io::stderr().flush();
}
