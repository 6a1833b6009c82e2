//! What the stack benchmarks share: their arguments' state directory, the
//! running stack, an async runtime, and how they report an error.

use std::path::Path;

use lossproof_runtime::{Ports, Stack};

/// An error a benchmark stops on (printed, exit 2).
pub(crate) type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The arguments after `cargo bench`'s own `--bench` flag (a benchmark
/// with `harness = false` receives it too).
pub(crate) fn args() -> impl Iterator<Item = String> {
    std::env::args().filter(|a| a != "--bench")
}

/// The stack in `state` and its ports; the error says how to start it.
pub(crate) fn running(state: &Path) -> BenchResult<(Stack, Ports)> {
    let stack = Stack::open(state)?;
    let ports = stack
        .ports()
        .map_err(|e| format!("{e} --state {}", state.display()))?;
    Ok((stack, ports))
}

/// Two worker threads: the machines this targets have two cores.
pub(crate) fn runtime() -> BenchResult<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Exit 0 when the benchmark's own checks held, 1 when not, 2 on an error.
pub(crate) fn exit(result: BenchResult<bool>) -> std::process::ExitCode {
    match result {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::from(2)
        }
    }
}
