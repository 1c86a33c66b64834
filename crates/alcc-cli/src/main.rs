//! The `alcc` command.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod link_cmd;

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
    /// Run a command behind an emulated trace-driven link (root).
    Link(Box<link_cmd::LinkArgs>),
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Controllers => {
            for e in alcc_cc::registry::ENTRIES {
                println!("{:<8} {}", e.name, e.about);
            }
        }
        Command::Link(args) => std::process::exit(link_cmd::run(*args)?),
    }
    Ok(())
}
