//! `alcc experiment`: sweeps of schemes x traces x runs over the emulator, with one directory
//! of files per run and a results table (docs/experiment-format.md).
//!
//! - [`spec`]: the TOML experiment definition and its checks.
//! - [`direction`]: which way the data goes (download or upload) and what the emulator measures.
//! - [`scheme`]: the kinds of scheme (`tcp-cubic`, `alcc-copa@reno`, `udp-sprout`), one type
//!   each: its server, its client, its columns, what it needs.
//! - [`runner`]: one run (one `alcc link` child) and its files.
//! - [`analysis`]: summary, series and delay samples from the downlink log.
//! - [`per_flow`]: each flow's figures and Jain's index from the emulator's flow log.
//! - [`table`]: the results rows, CSV and JSON, and the medians printed at the end.
//! - [`workload`]: several flows of a scheme and cross traffic (`[[workloads]]`).
//! - [`flows`]: the commands of a run with a workload: servers, clients, cross traffic.
//! - [`sweep`]: the matrix, progress, resume and interruption.
//! - [`shard`]: `--shard K/N`, one machine's disjoint share of the matrix.
//! - [`merge`]: `alcc experiment merge`, the shards' directories joined into one.
//! - [`reanalyze`]: `alcc experiment reanalyze`, a finished sweep's figures computed again from
//!   its link logs.

pub mod analysis;
pub mod direction;
pub mod flows;
pub mod merge;
pub mod per_flow;
pub mod reanalyze;
pub mod runner;
pub mod scheme;
pub mod shard;
pub mod spec;
pub mod sweep;
pub mod table;
pub mod workload;

use anyhow::Result;
use clap::{Args, Subcommand};

/// `alcc experiment ...`
#[derive(Args, Debug)]
pub struct ExperimentArgs {
    #[command(subcommand)]
    command: ExperimentCommand,
}

#[derive(Subcommand, Debug)]
enum ExperimentCommand {
    /// Run an experiment spec over the emulator (root), resuming in an existing --out.
    Run(sweep::RunArgs),
    /// Join the output directories of one sweep's shards (`run --shard K/N`) into one.
    Merge(merge::MergeArgs),
    /// Compute every completed run's figures again from its link log (the common window),
    /// running nothing.
    Reanalyze(reanalyze::ReanalyzeArgs),
}

/// Runs `alcc experiment ...`; returns the exit status.
pub fn run(args: ExperimentArgs) -> Result<i32> {
    match args.command {
        ExperimentCommand::Run(a) => sweep::run(a),
        ExperimentCommand::Merge(a) => merge::run(a),
        ExperimentCommand::Reanalyze(a) => reanalyze::run(a).map(|_| 0),
    }
}
