//! `lossproof`: counts which faults corrupt a CDC lake, by how much, and
//! which are harmless.

mod check;
mod explain;
mod fmt;
mod scenario;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "lossproof", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check scenario files; report every problem in each. Exit 1 if any has an error.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the exact timeline a seed will run: every fault at its offset.
    Explain {
        file: PathBuf,
        /// The seed to expand the scenario's randomness with.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print the plan and timeline as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rewrite scenario files in canonical form (comments kept).
    Fmt {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Change nothing; exit 1 if a file is not formatted.
        #[arg(long)]
        check: bool,
    },
    /// Print the stdlib vocabulary (every word editors highlight) as JSON.
    Vocab,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { files } => check::run(&files),
        Command::Explain { file, seed, json } => explain::run(&file, seed, json),
        Command::Fmt { files, check } => fmt::run(&files, check),
        Command::Vocab => {
            let words = lossproof_lang::vocabulary::Words::of(&lossproof_stdlib::Stdlib);
            println!("{}", serde_json::to_string_pretty(&words).expect("words serialise"));
            Ok(true)
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}
