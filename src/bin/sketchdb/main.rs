//! `sketchdb`: the admin shell. Subcommands and the interactive prompt share one command set;
//! everything goes through the library's public API.

mod bench;
mod input;
mod output;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use output::CliError;

/// sketchdb: an embedded database of similarity sketches.
#[derive(Parser, Debug)]
#[command(name = "sketchdb", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a shared benchmark workload and print JSON result lines.
    Bench {
        #[command(subcommand)]
        workload: BenchWorkload,
    },
}

#[derive(Subcommand, Debug)]
enum BenchWorkload {
    /// Build 128-value signatures from a sets-<n>.jsonl file (MinHash, b-bit, OPH).
    MinhashCreate {
        /// The sets file (../shared/bench format).
        #[arg(long)]
        sets: PathBuf,
        /// Use only the first N sets.
        #[arg(long)]
        limit: Option<usize>,
    },
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Bench { workload } => {
            let run = bench::run_id();
            match workload {
                BenchWorkload::MinhashCreate { sets, limit } => bench::minhash_create(&sets, limit, &run),
            }
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sketchdb: error: {e}");
            ExitCode::from(1)
        }
    }
}
