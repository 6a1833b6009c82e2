//! `lossproof consumer careless …`: a reference consumer as a long-running
//! program (the executor runs it as a child process and may SIGKILL it at any
//! instant; SIGTERM or Ctrl-C stop it after the batch being written).

use std::path::Path;
use std::time::Duration;

use crate::CliResult;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_stdlib::consumer::{self, careless, correct};

/// What to consume and where to write, as given on the command line.
pub struct Args<'a> {
    pub state: &'a Path,
    /// An external profile instead of the local stack in `state`.
    pub profile: Option<&'a Path>,
    /// The source tables as JSON (`--tables`), else the `orders` workload's.
    pub tables: Option<&'a Path>,
    pub run: &'a str,
    pub namespace: Option<&'a str>,
    pub group: Option<&'a str>,
    pub batch_max: usize,
    pub linger_ms: u64,
    pub auto_commit_ms: u64,
}

pub fn careless(args: &Args<'_>) -> CliResult<bool> {
    // A seed's child: it must not outlive the run that started it.
    lossproof_runtime::supervisor::die_with_parent();
    let (_stack, endpoints) = crate::stack_cli::running(args.state, args.profile)?;
    let runtime = crate::stack_cli::runtime()?;
    let names = CaptureNames::for_run(args.run);
    let namespace = args
        .namespace
        .map_or_else(|| format!("careless_{}", names.topic_prefix), str::to_owned);
    let group = args.group.map_or_else(
        || format!("lossproof-careless-{}", names.topic_prefix),
        str::to_owned,
    );
    let workload = workload(args.tables)?;
    runtime.block_on(async {
        let lake = endpoints.open_lake().await?;
        let tables = consumer::ensure_tables(&lake, &namespace, workload).await?;
        let config = careless::Config {
            // Through the fault proxy's links on the local stack, like every
            // client under test.
            kafka: endpoints.consumer_kafka.clone(),
            registry: endpoints.registry.clone(),
            topics: tables
                .iter()
                .map(|t| names.topic("public", &t.source_table))
                .collect(),
            tables,
            group,
            auto_commit: Duration::from_millis(args.auto_commit_ms),
            batch_max: args.batch_max,
            linger: Duration::from_millis(args.linger_ms),
            stop_after: None,
        };
        let (stop_tx, stop) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            stop_signal().await;
            let _ = stop_tx.send(true);
        });
        let log = |line: &str| eprintln!("{line}");
        careless::run(&lake, &config, stop, &log).await?;
        Ok(true)
    })
}

/// The workload a consumer process writes: the tables `run` wrote to
/// `file` for a scenario's own schema, else the stdlib's `orders`. Read
/// once at start and kept for the life of the process.
fn workload(file: Option<&Path>) -> CliResult<&'static lossproof_lang::vocabulary::WorkloadSig> {
    let Some(file) = file else {
        return Ok(lossproof_stdlib::workloads::orders());
    };
    let workload = lossproof_stdlib::workloads::from_file(file)?;
    Ok(Box::leak(Box::new(workload)))
}

/// SIGTERM or SIGINT.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// `lossproof consumer correct …`, as given on the command line.
pub struct CorrectArgs<'a> {
    pub state: &'a Path,
    /// An external profile instead of the local stack in `state`.
    pub profile: Option<&'a Path>,
    /// The source tables as JSON (`--tables`), else the `orders` workload's.
    pub tables: Option<&'a Path>,
    pub run: &'a str,
    pub namespace: Option<&'a str>,
    pub batch_max: usize,
    pub linger_ms: u64,
    pub rebuild: bool,
    pub failpoint: Option<&'a str>,
}

/// Exit code of a correct consumer that stopped on a change it must not
/// guess at (the executor reports the seed FAIL with the reason).
pub const FATAL_EXIT: i32 = 3;

pub fn correct(args: &CorrectArgs<'_>) -> CliResult<bool> {
    // A seed's child: it must not outlive the run that started it.
    lossproof_runtime::supervisor::die_with_parent();
    let (_stack, endpoints) = crate::stack_cli::running(args.state, args.profile)?;
    let runtime = crate::stack_cli::runtime()?;
    let names = CaptureNames::for_run(args.run);
    let namespace = args
        .namespace
        .map_or_else(|| consumer::namespace("correct", &names), str::to_owned);
    let workload = workload(args.tables)?;
    let failpoint = args
        .failpoint
        .map(str::parse::<correct::Failpoint>)
        .transpose()?;
    let config = correct::Config {
        // Through the fault proxy's links on the local stack, like every
        // client under test.
        kafka: endpoints.consumer_kafka.clone(),
        registry: endpoints.registry.clone(),
        namespace,
        table_prefix: String::new(),
        workload,
        topics: consumer::topics(&names, workload),
        group: consumer::group("correct", &names),
        batch_max: args.batch_max,
        linger: Duration::from_millis(args.linger_ms),
        stop_after: None,
        until_end: false,
        failpoint,
    };
    let result = runtime.block_on(async {
        let lake = endpoints
            .open_lake()
            .await
            .map_err(|e| correct::Fatal::Other(e.to_string()))?;
        let (stop_tx, stop) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            stop_signal().await;
            let _ = stop_tx.send(true);
        });
        let log = |line: &str| eprintln!("{line}");
        if args.rebuild {
            correct::rebuild::run(&lake, &config, stop, &log).await
        } else {
            correct::run(&lake, &config, stop, &log).await.map(|_| ())
        }
    });
    match result {
        Ok(()) => Ok(true),
        Err(fatal @ correct::Fatal::Schema { .. }) => {
            eprintln!("fatal: {fatal}");
            std::process::exit(FATAL_EXIT);
        }
        Err(other) => Err(other.into()),
    }
}
