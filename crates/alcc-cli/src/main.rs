//! The `alcc` command.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod get;
mod serve;
mod telemetry;

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
    /// Serve downloads through alcc streams (each client gets the data).
    Serve(serve::ServeArgs),
    /// Download from HOST:PORT over plain TCP and report the throughput.
    Get(get::GetArgs),
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Controllers => {
            for e in alcc_cc::registry::ENTRIES {
                println!("{:<8} {}", e.name, e.about);
            }
        }
        Command::Serve(args) => serve::run(args)?,
        Command::Get(args) => get::run(args)?,
    }
    Ok(())
}
