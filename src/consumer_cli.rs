//! `lossproof consumer careless|correct …`: a reference consumer as a
//! long-running program (the executor runs it as a child process and may
//! SIGKILL it at any instant; SIGTERM or Ctrl-C stop it after the batch
//! being written). What it tells the executor goes to `--messages` as
//! typed JSON lines (`lossproof_consumers::Message`).

use std::path::PathBuf;
use std::time::Duration;

use crate::CliResult;
use lossproof_consumers::{Message, Messages, careless, correct};
use lossproof_runtime::debezium::CaptureNames;

/// What every reference consumer takes.
#[derive(clap::Args)]
pub(crate) struct Common {
    /// The run whose topics (`lp_<run>.public.<table>`) to consume.
    #[arg(long)]
    run: String,
    #[command(flatten)]
    stack: crate::StackArgs,
    /// The source tables as JSON (`run` writes `tables.json` in the seed's
    /// log folder for a scenario's own tables) [default: the `orders`
    /// workload's].
    #[arg(long)]
    tables: Option<PathBuf>,
    /// Iceberg namespace for its tables [default: <consumer>_lp_<run>].
    #[arg(long)]
    namespace: Option<String>,
    /// Records per batch at most.
    #[arg(long, default_value_t = 500)]
    batch: usize,
    /// A batch closes this long after its first record.
    #[arg(long, default_value_t = 200)]
    linger_ms: u64,
    /// Append what the executor reads (a fatal stop, each commit the lake
    /// refused) to this file, as JSON lines.
    #[arg(long)]
    messages: Option<PathBuf>,
}

/// What a consumer process starts from: the stack, its names, the workload.
struct Started {
    runtime: tokio::runtime::Runtime,
    endpoints: lossproof_runtime::Endpoints,
    names: CaptureNames,
    workload: &'static lossproof_lang::vocabulary::WorkloadSig,
    messages: Messages,
    /// Where the correct consumer keeps its key indexes (`<state>/index`).
    index_dir: PathBuf,
    _stack: lossproof_runtime::Stack,
}

impl Common {
    fn start(&self) -> CliResult<Started> {
        // A seed's child: it must not outlive the run that started it.
        lossproof_runtime::supervisor::die_with_parent();
        let (stack, endpoints) =
            crate::stack_cli::running(&self.stack.state, self.stack.profile.as_deref())?;
        let messages = match &self.messages {
            Some(file) => Messages::to_file(file)
                .map_err(|e| format!("cannot write messages to {}: {e}", file.display()))?,
            None => Messages::none(),
        };
        Ok(Started {
            runtime: crate::stack_cli::runtime()?,
            endpoints,
            names: CaptureNames::for_run(&self.run),
            workload: workload(self.tables.as_deref())?,
            messages,
            index_dir: lossproof_consumers::correct::index::dir(stack.state().root()),
            _stack: stack,
        })
    }

    /// Its namespace: `--namespace`, else the run's for `consumer`.
    fn namespace(&self, consumer: &str, names: &CaptureNames) -> String {
        self.namespace
            .clone()
            .unwrap_or_else(|| lossproof_consumers::namespace(consumer, names))
    }
}

/// `lossproof consumer careless`.
pub(crate) fn careless(
    common: &Common,
    group: Option<&str>,
    auto_commit_ms: u64,
) -> CliResult<bool> {
    let started = common.start()?;
    let names = &started.names;
    let namespace = common.namespace("careless", names);
    let group = group.map_or_else(
        || lossproof_consumers::group("careless", names),
        str::to_owned,
    );
    started.runtime.block_on(async {
        let lake = started.endpoints.open_lake().await?;
        let tables =
            lossproof_consumers::ensure_tables(&lake, &namespace, started.workload).await?;
        let config = careless::Config {
            // Through the fault proxy's links on the local stack, like every
            // client under test.
            kafka: started.endpoints.consumer_kafka.clone(),
            registry: started.endpoints.registry.clone(),
            topics: tables
                .iter()
                .map(|t| names.topic("public", &t.source_table))
                .collect(),
            tables,
            group,
            auto_commit: Duration::from_millis(auto_commit_ms),
            batch_max: common.batch,
            linger: Duration::from_millis(common.linger_ms),
            stop_after: None,
            messages: started.messages.clone(),
        };
        let log = |line: &str| eprintln!("{line}");
        careless::run(&lake, &config, stop_on_signals(), &log).await?;
        Ok(true)
    })
}

/// Exit code of a correct consumer that stopped on a change it must not
/// guess at (the executor reports the seed FAIL with the reason).
pub(crate) const FATAL_EXIT: i32 = 3;

/// `lossproof consumer correct`.
pub(crate) fn correct(
    common: &Common,
    max_held: usize,
    rebuild: bool,
    failpoint: Option<&str>,
) -> CliResult<bool> {
    let started = common.start()?;
    let names = &started.names;
    let failpoint = failpoint
        .map(str::parse::<correct::Failpoint>)
        .transpose()?;
    let config = correct::Config {
        // Through the fault proxy's links on the local stack, like every
        // client under test.
        kafka: started.endpoints.consumer_kafka.clone(),
        registry: started.endpoints.registry.clone(),
        namespace: common.namespace("correct", names),
        table_prefix: String::new(),
        index_dir: started.index_dir.clone(),
        workload: started.workload,
        topics: lossproof_consumers::topics(names, started.workload),
        transactions: Some(names.transaction_topic()),
        group: lossproof_consumers::group("correct", names),
        batch_max: common.batch,
        linger: Duration::from_millis(common.linger_ms),
        max_held,
        stop_after: None,
        until_end: false,
        failpoint,
        messages: started.messages.clone(),
    };
    let result = started.runtime.block_on(async {
        let lake = started
            .endpoints
            .open_lake()
            .await
            .map_err(|e| correct::Fatal::Other(e.to_string()))?;
        let stop = stop_on_signals();
        let log = |line: &str| eprintln!("{line}");
        if rebuild {
            correct::rebuild::run(&lake, &config, stop, &log).await
        } else {
            correct::run(&lake, &config, stop, &log).await.map(|_| ())
        }
    });
    match result {
        Ok(()) => Ok(true),
        Err(fatal @ correct::Fatal::Schema { .. }) => {
            eprintln!("fatal: {fatal}");
            started.messages.send(&Message::Fatal {
                reason: fatal.to_string(),
            });
            std::process::exit(FATAL_EXIT);
        }
        Err(other) => Err(other.into()),
    }
}

/// The workload a consumer process writes: the tables `run` wrote to
/// `file` for a scenario's own schema, else the stdlib's `orders`. Read
/// once at start and kept for the life of the process.
fn workload(
    file: Option<&std::path::Path>,
) -> CliResult<&'static lossproof_lang::vocabulary::WorkloadSig> {
    let Some(file) = file else {
        return Ok(lossproof_vocabulary::workloads::orders());
    };
    let workload = lossproof_consumers::tables_file::read(file)?;
    Ok(Box::leak(Box::new(workload)))
}

/// A stop request that turns true on SIGTERM or SIGINT (needs the runtime).
fn stop_on_signals() -> tokio::sync::watch::Receiver<bool> {
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        stop_signal().await;
        let _ = stop_tx.send(true);
    });
    stop
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
