//! The public traces in the trace directory (`$ALCC_TRACE_DIR`, default `../shared/traces` beside
//! the repository) parse, and their mean rates match the table in that folder's README. Skipped
//! visibly (a failure in CI) when a trace is absent (alcc-testenv).

use alcc_trace::Trace;

/// (file relative to the trace folder, Mbit/s from the README table, rounded to 0.01).
const EXPECTED: &[(&str, f64)] = &[
    ("alcc-paper/CampusWalk.trace", 8.95),
    ("alcc-paper/City.trace", 10.06),
    ("alcc-paper/CityDrive.trace", 8.76),
    ("alcc-paper/Corniche.trace", 10.33),
    ("alcc-paper/Highway.trace", 6.13),
    ("alcc-paper/highwayGold.trace", 15.86),
    ("alcc-paper/rapidGold.trace", 9.98),
    ("mahimahi/Verizon-LTE-short.down", 5.03),
    ("mahimahi/Verizon-LTE-short.up", 5.95),
    ("mahimahi/TMobile-LTE-short.down", 16.70),
    ("mahimahi/TMobile-LTE-short.up", 13.32),
    ("mahimahi/ATT-LTE-driving.down", 5.17),
    ("mahimahi/ATT-LTE-driving.up", 0.83),
    ("indigo/Verizon-LTE-driving-60s.down", 14.94),
    ("indigo/Verizon-LTE-driving-60s.up", 6.53),
    ("indigo/12mbps.trace", 12.00),
];

#[test]
fn public_traces_parse_with_the_documented_mean_rates() {
    let mut need = alcc_testenv::needs();
    for (file, _) in EXPECTED {
        need = need.trace(file);
    }
    let env = alcc_testenv::require!(need);
    for (file, mbps) in EXPECTED {
        let path = env.trace(file);
        let trace = Trace::parse_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let measured = trace.mean_rate_mbps();
        assert!((measured - mbps).abs() <= 0.005 + 1e-9, "{file}: {measured:.4} Mbit/s, README says {mbps}");
        // Capacity over exactly one period equals the mean rate.
        let bytes = trace.capacity_bytes(0, trace.period_ms());
        let one_loop = trace.opportunities_ms().iter().filter(|&&t| t < trace.period_ms()).count() as u64;
        assert_eq!(bytes, one_loop * alcc_trace::PACKET_BYTES, "{file}");
    }
}
