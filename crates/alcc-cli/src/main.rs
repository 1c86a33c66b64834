//! The `alcc` command.
#![deny(unsafe_code)]

mod accept_loop;
mod controller_source;
mod get;
mod http_head;
mod link_cmd;
mod manager_cmd;
mod mdi_cmd;
mod put;
mod receive;
mod serve;
mod serve_plain;
mod sim_cmd;
mod telemetry;
mod trace_cmd;

// The harness, the analysis, the resource reports and the system calls live in the library
// half (src/lib.rs); the command modules above name them as `crate::…` through these.
use alcc_cli::{analyze, experiment, rusage, sys};
use anyhow::Result;
use clap::{Parser, Subcommand};

/// Application-layer congestion control: simulate, emulate, serve and measure.
#[derive(Parser)]
#[command(name = "alcc", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the congestion controllers alcc knows.
    Controllers,
    /// Generate or describe Mahimahi packet-delivery traces.
    Trace(trace_cmd::TraceArgs),
    /// Simulate one controller over a trace-driven bottleneck, in virtual time.
    Sim(sim_cmd::SimArgs),
    /// Summarise a Mahimahi link log: capacity, throughput, utilization, loss, delay.
    Analyze(analyze::AnalyzeArgs),
    /// Serve downloads through alcc streams (each client gets the data).
    Serve(serve::ServeArgs),
    /// Serve downloads over plain kernel TCP by sendfile (no alcc code on the data path).
    ServePlain(serve_plain::ServePlainArgs),
    /// Download from HOST:PORT over plain TCP and report the throughput.
    Get(get::GetArgs),
    /// Upload to HOST:PORT through an alcc stream (framed: to `alcc serve --receive`).
    Put(put::PutArgs),
    /// Run a command behind an emulated trace-driven link (root).
    Link(Box<link_cmd::LinkArgs>),
    /// Run experiments: schemes x traces x runs over the emulator, with a results table.
    Experiment(experiment::ExperimentArgs),
    /// Run a program (at most --seconds) and write its CPU time and peak memory as JSON.
    Rusage(rusage::RusageArgs),
    /// Train MDI models in the simulator and compare them with what they imitate.
    Mdi(mdi_cmd::MdiArgs),
    /// The host's manager of coupled flow groups, for `alcc serve --group NAME --manager PATH`.
    Manager(manager_cmd::ManagerArgs),
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Controllers => {
            for e in alcc_cc::registry::ENTRIES {
                println!("{:<8} {}", e.name, e.about);
            }
        }
        Command::Trace(args) => trace_cmd::run(args)?,
        Command::Analyze(args) => analyze::run(args)?,
        Command::Sim(args) => sim_cmd::run(args)?,
        Command::Serve(args) => serve::run(args)?,
        Command::ServePlain(args) => serve_plain::run(args)?,
        Command::Get(args) => get::run(args)?,
        Command::Put(args) => put::run(args)?,
        Command::Link(args) => std::process::exit(link_cmd::run(*args)?),
        Command::Experiment(args) => std::process::exit(experiment::run(args)?),
        Command::Rusage(args) => std::process::exit(rusage::run(args)?),
        Command::Mdi(args) => mdi_cmd::run(args)?,
        Command::Manager(args) => manager_cmd::run(args)?,
    }
    Ok(())
}
