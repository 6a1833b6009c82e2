//! `lossproof`: counts which faults corrupt a CDC lake, by how much, and
//! which are harmless.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bench_cli;
mod check;
mod compact_cli;
mod consumer_cli;
#[cfg(feature = "distributed")]
mod distributed;
mod explain;
mod fmt;
mod lsp;
mod nightly_cli;
mod reconcile_cli;
mod replay_cli;
mod report_html;
mod run_cli;
mod scenario;
mod shrink_cli;
mod stack_cli;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

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
        /// Scenario files, or folders (every `*.lp` file directly in one).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Also report what `run` cannot execute yet (a fault whose row says
        /// so, a setting value beyond what the stack was tested with), with
        /// their places.
        #[arg(long)]
        strict: bool,
        /// An external stack profile (TOML, docs/profiles.md): load it (its
        /// secrets too) and refuse, at their places, the faults it gives
        /// lossproof no way to strike.
        #[arg(long)]
        profile: Option<PathBuf>,
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
        /// Which components: `local` (everything on loopback), or `aws`
        /// (also moto server, emulated AWS, with what terraform/ declares;
        /// the nightly runs on it). Kept for later commands; the recorded
        /// one (`local` at first) when not given.
        #[arg(long, value_enum)]
        profile: Option<StackProfileArg>,
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
    /// Run a reference consumer of a run's change topics until SIGTERM/SIGINT.
    Consumer {
        #[command(subcommand)]
        kind: ConsumerKind,
    },
    /// Run a scenario once per seed against the local stack, score every
    /// seed, report the damage as a distribution. Exit 0 all PASS, 1 any
    /// FAIL, 2 any INVALID.
    Run {
        file: PathBuf,
        /// `7`, `1..50` or `1,4,9`.
        #[arg(long, default_value = "1")]
        seeds: String,
        /// Run only the K-th of N shares of the seeds (`K/N` or nextest's
        /// `count:K/N`): N machines each run one share, `lossproof report`
        /// merges their records.
        #[arg(long, value_name = "K/N")]
        partition: Option<String>,
        /// Multiply every duration of the scenario's timeline by F (0.1: a
        /// smoke run in a tenth of the time; drain limits and settings stay).
        #[arg(long, value_name = "F", default_value_t = 1.0)]
        time_scale: f64,
        /// Seeds run at once on the one stack, each isolated (its own
        /// source database, connector, slot, topics, groups, namespaces).
        #[arg(long, value_name = "N", default_value_t = 1)]
        jobs: usize,
        #[command(flatten)]
        stack: StackArgs,
        /// Consumers under test [default: the scenario's].
        #[arg(long, value_delimiter = ',')]
        consumers: Option<Vec<String>>,
        /// Keep a failed seed's lake, source database and topics, and write its diff.
        #[arg(long)]
        keep: bool,
        #[command(flatten)]
        outputs: OutputArgs,
    },
    /// Merge run records (shards of one run, or runs of the same scenario
    /// and consumers) into one distribution; print it and write the merged
    /// record, JUnit XML and HTML. Exit 0 all PASS, 1 any FAIL, 2 any INVALID.
    Report {
        /// Run records written by `lossproof run`.
        #[arg(required = true)]
        records: Vec<PathBuf>,
        #[command(flatten)]
        outputs: OutputArgs,
    },
    /// Run one seed of a recorded run again (same scenario file, same consumers).
    Replay {
        /// A run record written by `lossproof run`.
        record: PathBuf,
        #[arg(long)]
        seed: u64,
        #[arg(long, default_value = ".lossproof")]
        state: PathBuf,
        /// Keep the lake and write the diff if the seed fails.
        #[arg(long)]
        keep: bool,
        /// Run the seed K times and say how reproducible it is: the
        /// workload's operations, each fault's firing against its plan,
        /// the damage and the verdicts (docs/run.md).
        #[arg(long, default_value_t = 1, value_name = "K")]
        times: usize,
    },
    /// From a seed that damaged a consumer, search for a smallest set of its
    /// fired faults (and the shortest load) that still damages it, by delta
    /// debugging, and write it as a scenario `run` takes as it is (docs/run.md).
    /// Exit 0 when the result reproduced in at least half of its confirming runs.
    Shrink {
        /// A run record written by `lossproof run`.
        record: PathBuf,
        #[arg(long)]
        seed: u64,
        /// The consumer whose damage to reproduce (default: the first the
        /// seed damaged).
        #[arg(long)]
        consumer: Option<String>,
        /// Runs per candidate: it reproduces when every one of them damages
        /// the consumer. Damage depends on timing: more tries, a surer
        /// result, a longer search.
        #[arg(long, default_value_t = 3, value_name = "K")]
        tries: usize,
        /// Every duration of the timeline times F (default: the record's).
        #[arg(long, value_name = "F")]
        time_scale: Option<f64>,
        /// No candidate run starts after this long (`30m`, `2h`); the best
        /// scenario found so far is written, marked not minimal. Ctrl-C
        /// does the same at once.
        #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
        budget: std::time::Duration,
        /// Where to write the scenario (default: beside the original,
        /// `NAME.seedN.CONSUMER.lp`).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, default_value = ".lossproof")]
        state: PathBuf,
    },
    /// Score a run's lakes against the source: gate (drained and alive), then
    /// one line per consumer and table. Exit 0 clean, 1 damaged, 2 INVALID.
    Reconcile {
        /// The run (its connector, topics and namespaces carry this id).
        #[arg(long, required_unless_present = "source", conflicts_with = "source")]
        run: Option<String>,
        /// Instead of a run: a PostgreSQL of your own to compare with an
        /// Iceberg table, no stack, no gate (`postgres://USER:PASSWORD@HOST:PORT/DB`;
        /// never printed). Needs --table, --lake and --lake-table.
        #[arg(long, requires_all = ["table", "lake", "lake_table"])]
        source: Option<String>,
        /// The source table: `name` or `schema.name`.
        #[arg(long)]
        table: Option<String>,
        /// The Iceberg catalog holding the lake table: `sqlite:///PATH/catalog.db`
        /// (a SQL catalog), `glue://REGION[?endpoint=URL]` (AWS Glue; an
        /// endpoint of its own means an emulator such as moto, with its
        /// fixed keys; without one, credentials come from the usual AWS
        /// environment and are never printed), or `http(s)://HOST/PATH[?prefix=P&…]`
        /// (a REST catalog; query pairs are its properties; its token in
        /// $LOSSPROOF_LAKE_TOKEN or OAuth2 `id:secret` in
        /// $LOSSPROOF_LAKE_CREDENTIAL, never printed).
        #[arg(long)]
        lake: Option<String>,
        /// The lake table: `namespace.name`.
        #[arg(long)]
        lake_table: Option<String>,
        /// The catalog's warehouse: a folder for a SQL catalog [default: the
        /// catalog file's folder]; `s3://BUCKET/PREFIX` for Glue (required);
        /// for a REST catalog its `warehouse` property (the server's name
        /// for one of its warehouses), if it needs one.
        #[arg(long)]
        warehouse: Option<String>,
        /// With --source: compare only the rows this predicate selects, on
        /// both sides (SQL PostgreSQL and DataFusion both read, e.g.
        /// `id BETWEEN 1 AND 100000`).
        #[arg(long = "where", requires = "source")]
        filter: Option<String>,
        /// With --source: leave this source column out of the comparison
        /// (repeatable; not a key column).
        #[arg(long = "ignore-column", requires = "source")]
        ignore: Vec<String>,
        /// With --source: split the comparison into key ranges and run one
        /// on each of these `lossproof worker`s (`http://HOST:PORT,…`;
        /// DataFusion Distributed plans and ships them; the diff is the
        /// same). Needs a lossproof built with `--features distributed`.
        #[arg(long, requires = "source", value_delimiter = ',')]
        workers: Vec<String>,
        #[command(flatten)]
        stack: StackArgs,
        /// Consumers whose lakes to score.
        #[arg(long = "consumer", default_value = "careless")]
        consumers: Vec<String>,
        /// Also write every diff row to this .parquet, .csv or .json file.
        #[arg(long)]
        out: Option<PathBuf>,
        /// How long the gate waits for the stream and consumers to drain
        /// (with --live: for the lakes to cover the source's snapshot).
        #[arg(long, default_value_t = 60)]
        wait_s: u64,
        /// With --run: score while the pipeline keeps running. The source
        /// is read in one snapshot, each lake once it holds every change
        /// that snapshot sees; a key changed after it is `in-flight`, not
        /// damage. Needs consumers that keep their offsets and each key's
        /// transaction in the lake (the correct consumer).
        #[arg(long, requires = "run")]
        live: bool,
    },
    /// Serve as a worker of distributed comparisons (`reconcile --source …
    /// --workers URL,…`) until Ctrl-C or SIGTERM; prints `listening on
    /// http://ADDR` once it accepts. A worker runs what a coordinator
    /// sends it (connecting to the source and the lake it names): listen
    /// only on a network you trust. Needs `--features distributed`.
    Worker {
        /// The address to listen on (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
    },
    /// Benchmarks that print figures (never pass or fail on speed).
    Bench {
        #[command(subcommand)]
        what: BenchKind,
    },
    /// Remove what run RUN left on the stack (its seeds' connectors, slots,
    /// publications, databases, topics, schemas, consumer groups and lake
    /// namespaces, found by the run id's prefix): after a run killed with no
    /// chance to clean up. Exit 1 if something could not be removed.
    Clean {
        /// The run id `lossproof run` printed ("run id …").
        #[arg(long)]
        run: String,
        #[command(flatten)]
        stack: StackArgs,
    },
    /// Become PROGRAM ARGS…, dying with the process that started this one
    /// (even SIGKILLed): how `run` starts a scenario's own consumers
    /// (`consumer NAME command "…"`, docs/bring-your-own.md).
    #[command(hide = true)]
    Exec {
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Compact a run's lake tables (every live data and delete file of each
    /// into new data files, one replace commit under the base check): what
    /// `compact table T` does in a scenario. Exit 1 if a writer won the race.
    /// With `--every-ms`, a compaction job that runs until it is signalled
    /// (the `compactor` target of a scenario).
    Compact {
        /// The run (its namespaces carry this id).
        #[arg(long)]
        run: String,
        #[command(flatten)]
        stack: StackArgs,
        /// The table to compact (repeat for several); every table of each
        /// lake when none is given.
        #[arg(long = "table")]
        tables: Vec<String>,
        /// Consumers whose lakes to compact.
        #[arg(long = "consumer", default_values_t = ["careless".to_owned(), "correct".to_owned()])]
        consumers: Vec<String>,
        /// Compact again this many milliseconds after each round ends, until
        /// SIGTERM/SIGKILL (the exit status is then the signal's).
        #[arg(long)]
        every_ms: Option<u64>,
        /// Append one JSON line per compaction to this file: `start` before
        /// it, then `won`, `lost`, `idle` or `failed` (a line without its end
        /// is a compaction the process did not live to finish).
        #[arg(long)]
        record: Option<PathBuf>,
    },
    /// Run the nightly workflow on a run's lake: compact, reconcile, then
    /// rebuild the dbt marts, as the Step Functions state machine in
    /// terraform/nightly.asl.json executed on moto server (started for it).
    /// The marts are rebuilt only after a clean reconcile. Exit 0 succeeded,
    /// 1 failed (the alert says why), 2 could not run.
    Nightly {
        /// The run (its namespaces carry this id).
        #[arg(long)]
        run: String,
        #[command(flatten)]
        stack: StackArgs,
        /// The consumer whose lake the marts are built from.
        #[arg(long, default_value = "correct")]
        consumer: String,
        /// The dbt project that builds the marts (the checkout's `dbt/`).
        #[arg(long, env = "LOSSPROOF_DBT_PROJECT", default_value = "dbt")]
        dbt_project: PathBuf,
        /// Where the marts live [default: <state>/marts/<run>].
        #[arg(long)]
        marts: Option<PathBuf>,
        /// The whole workflow's time limit.
        #[arg(long, default_value_t = 1800)]
        timeout_s: u64,
        /// Extra arguments for `dbt build` (after `--`), e.g. `-- --full-refresh`.
        #[arg(last = true)]
        dbt_args: Vec<String>,
    },
    /// Run the language server over stdio (for editors).
    Lsp {
        /// Accepted and ignored: stdio is the only transport (VS Code's client passes it).
        #[arg(long, hide = true)]
        stdio: bool,
    },
    /// Run the TCP fault proxy until SIGTERM/SIGINT (`up` starts it: one
    /// listener per link, faults set over its loopback HTTP API; docs/network.md).
    Netproxy {
        /// Loopback address of the control API, e.g. 127.0.0.1:7070.
        #[arg(long)]
        control: std::net::SocketAddr,
        /// A link: NAME,LISTEN,UPSTREAM, e.g. broker,127.0.0.1:19092,127.0.0.1:9092
        /// (repeat for each link).
        #[arg(long = "link", required = true)]
        links: Vec<lossproof_netproxy::LinkSpec>,
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

/// With `RUST_BACKTRACE=1` in the environment (common on developer
/// machines), every `iceberg::Error` captures a backtrace when it is created,
/// and iceberg-rust creates (and drops) errors on hot read paths: measured
/// here, a reconcile spent most of its time in `_Unwind_Backtrace`. Panics
/// keep their backtraces; error values do not need them. The variable that
/// controls only the latter, `RUST_LIB_BACKTRACE`, is read once per process
/// and cannot be set safely once threads may exist, so the process re-executes
/// itself once with it set to 0 (same pid, same arguments and stdio).
fn without_error_backtraces() {
    use std::os::unix::process::CommandExt as _;
    if std::env::var_os("RUST_BACKTRACE").is_none()
        || std::env::var_os("RUST_LIB_BACKTRACE").is_some()
    {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let error = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("RUST_LIB_BACKTRACE", "0")
        .exec();
    // exec only returns on failure: carry on with backtraces.
    eprintln!("note: could not re-execute without error backtraces: {error}");
}

/// Where `run` and `report` write what they found.
#[derive(clap::Args)]
struct OutputArgs {
    /// Where to write the run record [`run`'s default: <state>/runs/<run id>.json].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write JUnit XML (one test case per seed and assertion).
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Where to write the HTML report (damage by kind per seed, the
    /// distribution, the worst seed's faults over time and sample diff rows)
    /// [default: beside the run record, `.html` for `.json`].
    #[arg(long, conflicts_with = "no_html")]
    html: Option<PathBuf>,
    /// Write no HTML report.
    #[arg(long)]
    no_html: bool,
}

impl OutputArgs {
    fn paths(&self) -> run_cli::Outputs<'_> {
        run_cli::Outputs {
            record: self.out.as_deref(),
            junit: self.junit.as_deref(),
            html: self.html.as_deref(),
            no_html: self.no_html,
            quiet: false,
        }
    }
}

/// `lossproof up --profile`: the components of the stack it starts.
#[derive(Clone, Copy, clap::ValueEnum)]
enum StackProfileArg {
    Local,
    Aws,
}

impl From<StackProfileArg> for lossproof_runtime::StackProfile {
    fn from(arg: StackProfileArg) -> Self {
        match arg {
            StackProfileArg::Local => Self::Local,
            StackProfileArg::Aws => Self::Aws,
        }
    }
}

/// Where a command finds the stack: the local one `up` started in
/// `--state`, or a team's own components named by `--profile`.
#[derive(Args)]
struct StackArgs {
    #[arg(long, default_value = ".lossproof")]
    pub(crate) state: PathBuf,
    /// An external stack profile (TOML, docs/profiles.md) instead of the
    /// local stack in `--state`.
    #[arg(long)]
    pub(crate) profile: Option<PathBuf>,
}

#[derive(Subcommand)]
enum BenchKind {
    /// The reconciler against the raw read cost and reladiff (hashdiff and
    /// joindiff) on the same rows, 1% of them damaged: seconds, rows/s and
    /// peak RSS of each (docs/benchmarks.md). Needs a running stack. Exit 1
    /// if a method did not find exactly the planted differences.
    Reconcile {
        #[arg(long, default_value = ".lossproof")]
        state: PathBuf,
        /// Source rows (repeat for several sizes).
        #[arg(long = "rows", default_values_t = [1_000_000])]
        rows: Vec<u64>,
        /// Skip the reladiff reference (PyPI, installed on first use into
        /// ~/.cache/lossproof/venv-reladiff).
        #[arg(long)]
        no_reladiff: bool,
    },
    /// One method of `bench reconcile` in a process of its own (its peak
    /// RSS is then its own): run by `bench reconcile`, not by hand.
    #[command(hide = true)]
    ReconcileStep {
        #[arg(long, default_value = ".lossproof")]
        state: PathBuf,
        #[arg(long)]
        rows: u64,
        #[arg(long, value_enum)]
        step: bench_cli::Step,
    },
}

#[derive(Subcommand)]
enum ConsumerKind {
    /// Auto-commits offsets on a timer, applies in arrival order, writes each
    /// batch as a delete commit then an append commit, fixed schema, logs
    /// errors and carries on (FINDINGS.md).
    Careless {
        #[command(flatten)]
        common: consumer_cli::Common,
        /// Consumer group [default: lossproof-careless-lp_<run>].
        #[arg(long)]
        group: Option<String>,
        /// Offsets are auto-committed this often.
        #[arg(long, default_value_t = 1000)]
        auto_commit_ms: u64,
    },
    /// Exactly-once: offsets in the same Iceberg commit as the rows, resumes
    /// from the lake, applies by source commit order per key, remembers
    /// deletes, merge-on-read, commits at source transaction boundaries,
    /// evolves the schema, dead-letters junk, retries conflicts
    /// (docs/consumers.md). Exit 3: stopped on a change it must not guess at
    /// (a schema change Iceberg cannot express).
    Correct {
        #[command(flatten)]
        common: consumer_cli::Common,
        /// Records held at most while a source transaction or the initial
        /// snapshot is incomplete; a larger snapshot is staged in parts on a
        /// branch and published whole (docs/consumers.md, "Transactions").
        #[arg(long, default_value_t = lossproof_consumers::correct::transactions::MAX_HELD)]
        max_held: usize,
        /// Rebuild every table from the beginning of the topics into new
        /// tables, then swap them in atomically (stop the running consumer
        /// first); exits when the rebuild reached the topics' ends.
        #[arg(long)]
        rebuild: bool,
        /// Crash on purpose (tests): `after-files:N`, `after-commit:N`,
        /// `before-mirror:N` (SIGKILL itself at that step of batch N).
        #[arg(long, hide = true)]
        failpoint: Option<String>,
    },
}

/// What a command returns: `Ok(true)` success, `Ok(false)` a negative
/// result (exit 1), `Err` it could not do its work (exit 2). The library
/// crates' errors are typed; the CLI only prints them.
pub type CliResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[cfg(feature = "distributed")]
fn worker(listen: std::net::SocketAddr) -> CliResult<bool> {
    distributed::serve(listen)
}

#[cfg(not(feature = "distributed"))]
fn worker(_: std::net::SocketAddr) -> CliResult<bool> {
    Err("worker: this lossproof was built without the `distributed` feature (cargo build --features distributed)".into())
}

/// `lossproof exec -- PROGRAM ARGS…`: the parent-death signal survives
/// `execve`, so the program dies with the run like lossproof's own
/// consumers. Returns only if the program could not be started.
fn exec(command: &[std::ffi::OsString]) -> String {
    use std::os::unix::process::CommandExt as _;
    lossproof_runtime::supervisor::die_with_parent();
    let (program, args) = command.split_first().expect("clap requires a command");
    let error = std::process::Command::new(program).args(args).exec();
    format!("cannot start {}: {error}", program.to_string_lossy())
}

/// Transparent huge pages off for this process (inherited by what it
/// starts; with the kernel's usual `madvise` mode only a process that asks
/// gets them). mimalloc asks for them on its arenas (`MADV_HUGEPAGE`), and
/// the kernel then zeroes a whole 2 MiB page each time freed memory is
/// touched again: with Arrow batches and canonical rows allocated and freed
/// all the time, that was a quarter of the reconciler's time at 10M rows
/// (docs/benchmarks.md). Where the kernel has no such switch, nothing
/// changes.
fn without_transparent_huge_pages() {
    let _ = nix::sys::prctl::set_thp_disable(true);
}

#[allow(clippy::too_many_lines)] // one arm per command
fn main() -> ExitCode {
    without_error_backtraces();
    without_transparent_huge_pages();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check {
            files,
            strict,
            profile,
        } => check::run(&files, strict, profile.as_deref()),
        Command::Explain { file, seed, json } => explain::run(&file, seed, json),
        Command::Fmt { files, check } => fmt::run(&files, check),
        Command::Lsp { stdio: _ } => lsp::run().map_err(Into::into),
        Command::Netproxy { control, links } => {
            lossproof_netproxy::main_entry(control, links, lossproof_registry::shutdown_signal())
                .map(|()| true)
                .map_err(Into::into)
        }
        Command::Registry { listen, state } => lossproof_registry::main_entry(listen, &state)
            .map(|()| true)
            .map_err(Into::into),
        Command::Up { state, profile } => stack_cli::up(&state, profile.map(Into::into)),
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
        Command::Consumer {
            kind:
                ConsumerKind::Careless {
                    common,
                    group,
                    auto_commit_ms,
                },
        } => consumer_cli::careless(&common, group.as_deref(), auto_commit_ms),
        Command::Consumer {
            kind:
                ConsumerKind::Correct {
                    common,
                    max_held,
                    rebuild,
                    failpoint,
                },
        } => consumer_cli::correct(
            &common,
            max_held,
            rebuild,
            failpoint
                .or_else(|| std::env::var("LOSSPROOF_FAILPOINT").ok())
                .as_deref(),
        ),
        Command::Run {
            file,
            seeds,
            partition,
            time_scale,
            jobs,
            stack,
            consumers,
            keep,
            outputs,
        } => run_cli::run(&run_cli::Args {
            file: &file,
            seeds: &seeds,
            partition: partition.as_deref(),
            time_scale,
            jobs,
            state: &stack.state,
            profile: stack.profile.as_deref(),
            consumers: consumers.as_deref(),
            keep,
            outputs: outputs.paths(),
        }),
        Command::Report { records, outputs } => run_cli::report(&records, &outputs.paths()),
        Command::Replay {
            record,
            seed,
            state,
            keep,
            times,
        } => replay_cli::replay(&record, seed, &state, keep, times),
        Command::Shrink {
            record,
            seed,
            consumer,
            tries,
            time_scale,
            budget,
            out,
            state,
        } => shrink_cli::shrink(&shrink_cli::Args {
            record: &record,
            seed,
            consumer: consumer.as_deref(),
            tries,
            time_scale,
            budget,
            out: out.as_deref(),
            state: &state,
        }),
        Command::Reconcile {
            source: Some(source),
            table: Some(table),
            lake: Some(lake),
            lake_table: Some(lake_table),
            warehouse,
            filter,
            ignore,
            out,
            workers,
            ..
        } => reconcile_cli::standalone(&reconcile_cli::Standalone {
            job: reconcile_cli::Job {
                source,
                table,
                lake,
                lake_table,
                warehouse,
                filter,
                ignore,
            },
            out: out.as_deref(),
            workers: &workers,
        }),
        Command::Reconcile {
            run: Some(run),
            stack,
            consumers,
            out,
            wait_s,
            live,
            ..
        } => reconcile_cli::run(&reconcile_cli::Args {
            state: &stack.state,
            profile: stack.profile.as_deref(),
            run: &run,
            consumers: &consumers,
            out: out.as_deref(),
            wait: std::time::Duration::from_secs(wait_s),
            live,
        }),
        Command::Worker { listen } => worker(listen),
        Command::Bench {
            what:
                BenchKind::Reconcile {
                    state,
                    rows,
                    no_reladiff,
                },
        } => bench_cli::reconcile(&state, &rows, !no_reladiff),
        Command::Bench {
            what: BenchKind::ReconcileStep { state, rows, step },
        } => bench_cli::step(&state, rows, step),
        Command::Reconcile { .. } => {
            unreachable!("clap requires --run, or --source with --table, --lake and --lake-table")
        }
        Command::Nightly {
            run,
            stack,
            consumer,
            dbt_project,
            marts,
            timeout_s,
            dbt_args,
        } => nightly_cli::run(&nightly_cli::Args {
            state: &stack.state,
            profile: stack.profile.as_deref(),
            run: &run,
            consumer: &consumer,
            dbt_project: &dbt_project,
            marts: marts.as_deref(),
            dbt_extra: &dbt_args,
            timeout: std::time::Duration::from_secs(timeout_s),
        }),
        Command::Clean { run, stack } => {
            run_cli::clean(&run, &stack.state, stack.profile.as_deref())
        }
        Command::Compact {
            run,
            stack,
            tables,
            consumers,
            every_ms,
            record,
        } => compact_cli::compact(&compact_cli::Job {
            state: &stack.state,
            profile: stack.profile.as_deref(),
            run: &run,
            tables: &tables,
            consumers: &consumers,
            every: every_ms.map(std::time::Duration::from_millis),
            record: record.as_deref(),
        }),
        Command::Exec { command } => Err(exec(&command).into()),
        Command::Vocab => {
            let words = lossproof_lang::vocabulary::Words::of(&lossproof_vocabulary::Stdlib);
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
