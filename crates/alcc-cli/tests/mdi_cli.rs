//! Runs `alcc mdi train`, `info` and `compare` on short synthetic traces, and on bad input.

use std::process::{Command, Output};

mod common;
use common::TmpDir;

fn alcc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_alcc")).args(args).env("RUST_BACKTRACE", "0").output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn train_then_describe_and_compare() {
    let dir = TmpDir::new("mdi-train");
    let model = dir.path("copa.csv");
    let m = model.to_str().unwrap();
    let out = alcc(&["mdi", "train", "--cc", "copa", "--synthetic", "2", "--duration", "5", "--out", m]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("transitions from 2 links"), "{}", text(&out.stderr));
    let first = std::fs::read_to_string(&model).unwrap();
    assert!(first.starts_with("25,-60,60,5,9,-25,15,5\n"));

    // Deterministic: the same command writes the same model.
    let again = dir.path("again.csv");
    let out = alcc(&[
        "mdi",
        "train",
        "--cc",
        "copa",
        "--synthetic",
        "2",
        "--duration",
        "5",
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&again).unwrap(), first);

    let out = alcc(&["mdi", "info", m]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("states: 225"), "{}", text(&out.stdout));

    let out = alcc(&[
        "mdi",
        "compare",
        "--cc",
        "copa",
        "--model",
        m,
        "--synthetic",
        "1",
        "--duration",
        "5",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["scheme"], "mdi(copa)");
    assert!(rows[1]["throughput_mbps"].as_f64().unwrap() > 0.5, "{rows:?}");
}

#[test]
fn bad_models_and_links_are_named() {
    let dir = TmpDir::new("mdi-bad");
    let bad = dir.path("bad.csv");
    std::fs::write(&bad, "25,-60,60,5,9,-25,15\n").unwrap();
    let out = alcc(&["mdi", "info", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("bad.csv") && err.contains("line 1"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let out = alcc(&["mdi", "train", "--cc", "verus", "--out", dir.path("x.csv").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("no links"), "{}", text(&out.stderr));
}
