//! `lossproof`: counts which faults corrupt a CDC lake, by how much, and
//! which are harmless.

mod check;
mod explain;
mod fmt;
mod lsp;
mod scenario;
mod stack_cli;

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
    /// Start the local stack (`PostgreSQL`, broker, registry, Kafka Connect + Debezium) and wait until healthy.
    Up {
        /// State directory: data, logs, ports and pids of this stack.
        #[arg(long, default_value = ".lossproof")]
        state: PathBuf,
    },
    /// Stop every component of the local stack.
    Down {
        #[arg(long, default_value = ".lossproof")]
        state: PathBuf,
        /// Also delete the state directory (data and logs).
        #[arg(long)]
        purge: bool,
    },
    /// Each component's pid, port, health and version; connectors; replication slots and lag.
    Status {
        #[arg(long, default_value = ".lossproof")]
        state: PathBuf,
        /// Also print start-up time and resident memory per component.
        #[arg(long)]
        verbose: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the end of a component's log.
    Logs {
        /// source-postgres, broker-postgres, broker, registry or connect.
        component: String,
        #[arg(long, default_value = ".lossproof")]
        state: PathBuf,
        /// How many lines.
        #[arg(short = 'n', long, default_value_t = 50)]
        lines: usize,
    },
    /// Run the language server over stdio (for editors).
    Lsp {
        /// Accepted and ignored: stdio is the only transport (VS Code's client passes it).
        #[arg(long, hide = true)]
        stdio: bool,
    },
    /// Run the embedded Confluent-compatible schema registry until SIGTERM/SIGINT.
    Registry {
        /// Loopback address to listen on, e.g. 127.0.0.1:8081 (port 0: any free port).
        #[arg(long)]
        listen: std::net::SocketAddr,
        /// Directory holding the registry's state (subjects, versions, ids).
        #[arg(long)]
        state: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { files } => check::run(&files),
        Command::Explain { file, seed, json } => explain::run(&file, seed, json),
        Command::Fmt { files, check } => fmt::run(&files, check),
        Command::Lsp { stdio: _ } => lsp::run(),
        Command::Registry { listen, state } => lossproof_registry::main_entry(listen, &state)
            .map(|()| true)
            .map_err(|e| e.to_string()),
        Command::Up { state } => stack_cli::up(&state),
        Command::Down { state, purge } => stack_cli::down(&state, purge),
        Command::Status {
            state,
            verbose,
            json,
        } => stack_cli::status(&state, verbose, json),
        Command::Logs {
            component,
            state,
            lines,
        } => stack_cli::logs(&state, &component, lines),
        Command::Vocab => {
            let words = lossproof_lang::vocabulary::Words::of(&lossproof_stdlib::Stdlib);
            println!(
                "{}",
                serde_json::to_string_pretty(&words).expect("words serialise")
            );
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
