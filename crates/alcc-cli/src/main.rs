//! The `alcc` command.

mod analyze;
mod trace_cmd;

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
    /// Summarise a Mahimahi link log: capacity, throughput, utilization, loss, delay.
    Analyze(analyze::AnalyzeArgs),
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
    }
    Ok(())
}
