//! The `alcc` command.

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
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Controllers => {
            for e in alcc_cc::registry::ENTRIES {
                println!("{:<8} {}", e.name, e.about);
            }
        }
    }
    Ok(())
}
