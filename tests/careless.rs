//! The first real pipeline: the seeded orders workload on `PostgreSQL`,
//! Debezium, the broker, and `lossproof consumer careless` writing Iceberg —
//! every piece a real process on a real local stack.
//!
//! One test, three runs on one stack (each with its own topics, consumer
//! group and Iceberg namespace):
//! 1. no faults: after the drain the lake matches the source row for row;
//! 2. the consumer SIGKILLed and restarted while the workload runs: the
//!    harness never hangs, and the consumer simply resumes from its group's
//!    auto-committed offsets (careless: whatever that costs is counted);
//! 3. `ALTER TABLE orders ALTER COLUMN amount TYPE numeric(14,2)` under load:
//!    the append after each orders delete commit fails, the consumer logs it
//!    and carries on; orders rows go missing, the other tables stay exact.
//!
//! Every run is gated (connector RUNNING, slot at the final LSN, the
//! consumer's group at the end of every topic) and scored by the reconciler.
//! The clean run is then damaged on purpose, and the reconciler must name
//! each damage by kind; finally a stopped connector must make the gate
//! refuse to score (INVALID, never a count).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lossproof_executor::workload::{self, WorkloadReport};
use lossproof_runtime::debezium::{self, CaptureNames, NotDrained};
use lossproof_runtime::reconcile::{
    self, ConsumerLake, Counts, DiffKind, Reconciliation, RowTables, gate,
};
use lossproof_runtime::{ConnectClient, Lake, Ports, Stack};

use crate::stack::{lossproof, up_own_stack};

const DATABASE: &str = lossproof_runtime::stack::SOURCE_DATABASE;

fn orders() -> &'static lossproof_lang::vocabulary::WorkloadSig {
    lossproof_vocabulary::workloads::orders()
}

#[test]
fn careless_consumer_on_the_real_pipeline() {
    let _serial = crate::support::heavy_test();
    let (state, _guard) = up_own_stack("careless");
    let ports = Stack::open(&state).unwrap().ports().unwrap();
    let runtime = crate::lake::tokio();
    runtime.block_on(async {
        no_faults_lake_matches_source(&state, ports).await;
        killed_and_restarted_under_load(&state, ports).await;
        widening_breaks_the_append_and_it_carries_on(&state, ports).await;
    });
}

async fn no_faults_lake_matches_source(state: &Path, ports: Ports) {
    let run = Run::start(state, ports, "clean").await;
    let mut consumer = run.spawn_consumer();
    let report = run.workload(7, Duration::from_secs(4)).await;
    assert_eq!(report.failed, 0, "{report:?}");
    run.wait_scoreable(&report).await;
    consumer.stop();
    let log = consumer.log();
    let scored = run.reconcile().await;
    assert_eq!(
        scored.wrong_rows("careless"),
        0,
        "with no faults the careless lake matches the source: {:?}\n{log}",
        scored.diff
    );
    // 4 s at 200 operations/s: about a hundred orders on a quiet machine,
    // fewer when the cores are shared (the workload keeps its rate only as
    // far as the database keeps up). The floor says the lake is not
    // trivially equal to an empty source.
    assert!(
        counts(&scored, "orders").compared > 40,
        "{:?}",
        scored.summary
    );
    assert!(log.contains("appended"), "{log}");
    let clean = lossproof(state, &["reconcile", "--run", &run.id]);
    let text = String::from_utf8_lossy(&clean.stdout);
    assert_eq!(
        clean.status.code(),
        Some(0),
        "`lossproof reconcile` exits 0 on a clean lake: {text}{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    assert!(text.contains("careless   orders"), "{text}");
    what_cannot_be_compared_is_a_typed_error(&run).await;
    damage_is_named_by_kind(&run).await;
    let out = state.join("diff.json");
    let damaged = lossproof(
        state,
        &[
            "reconcile",
            "--run",
            &run.id,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(damaged.status.code(), Some(1), "exit 1 on a damaged lake");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(written.as_array().map(Vec::len), Some(6), "{written}");
    the_standalone_command_finds_the_same_damage(&run, &written).await;
    the_reconcile_benchmark_runs_and_checks_itself(state);
    a_stopped_connector_is_invalid(&run).await;
    let invalid = lossproof(state, &["reconcile", "--run", &run.id, "--wait-s", "3"]);
    let text = String::from_utf8_lossy(&invalid.stderr);
    assert_eq!(invalid.status.code(), Some(2), "{text}");
    assert!(
        text.contains("INVALID") && text.contains("not running"),
        "{text}"
    );
    assert!(invalid.stdout.is_empty(), "an INVALID run prints no counts");
    run.finish().await;
}

/// `lossproof reconcile --source URL --table T --lake sqlite:///… --lake-table NS.T`:
/// no run, no stack state, the same tables as the run's reconcile, the same
/// damage key for key and kind for kind; exit 1 on it, 0 on a clean table.
/// With `--features aws`, the same tables copied into a Glue catalog on a
/// real moto server (files in its S3), through `--lake glue://…`: the same.
async fn the_standalone_command_finds_the_same_damage(run: &Run, by_run: &serde_json::Value) {
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/{DATABASE}",
        run.ports.source_postgres
    );
    let lossproof_runtime::profile::LakeLocation::Sql { catalog_db, .. } =
        Lake::location_in(&run.state)
    else {
        panic!("the local stack's lake is a SQL catalog");
    };
    let catalog = format!("sqlite://{}", catalog_db.display());
    let mut expected: Vec<_> = by_run
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["table"].clone(), r["key"].clone(), r["kind"].clone()))
        .collect();
    expected.sort_by_key(|(t, k, d)| format!("{t}{k}{d}"));
    let found = standalone_diff(run, &url, &[&catalog], "sqlite");
    assert_eq!(found, expected);
    narrowed_by_where_and_ignore_column(run, &url, &catalog, by_run);
    the_same_diff_from_two_workers(run, &url, &catalog);
    #[cfg(feature = "aws")]
    {
        let tools = lossproof_runtime::tools::Tools::from_env();
        let logs = run.state.join("standalone-moto");
        std::fs::create_dir_all(&logs).unwrap();
        let moto = lossproof_runtime::nightly::Moto::start(
            &tools,
            &logs.join("moto.log"),
            Duration::from_mins(1),
        )
        .expect("moto server");
        lossproof_runtime::nightly::provision(&tools, &moto.endpoint(), &logs.join("p.log"))
            .expect("the lake bucket");
        let at = lossproof_runtime::nightly::emulated_lake(moto.endpoint());
        let lossproof_runtime::profile::LakeLocation::Glue(glue) = &at else {
            panic!("the emulated lake is Glue");
        };
        copy_tables(
            &Lake::open(&run.state).await.unwrap(),
            &Lake::open_at(&at).await.unwrap(),
            &run.namespace(),
        )
        .await;
        let lake = format!("glue://{}?endpoint={}", glue.region, moto.endpoint());
        let found = standalone_diff(run, &url, &[&lake, "--warehouse", &glue.warehouse], "glue");
        assert_eq!(found, expected, "Glue on moto");
    }
    the_same_through_a_rest_catalog(run, &url, &expected).await;
    // A bad catalog is an error (exit 2), not a count.
    for (lake, error) in [
        ("sqlite:///no/such/catalog.db", "no catalog file"),
        (
            "glue://us-east-1",
            "--warehouse s3://BUCKET/PREFIX is required",
        ),
        ("hive://x", "glue://REGION"),
    ] {
        let missing = reconcile_standalone(&url, "orders", &[lake], "x.orders", &[], &[]);
        assert_eq!(missing.status.code(), Some(2), "{lake}");
        assert!(
            String::from_utf8_lossy(&missing.stderr).contains(error),
            "{lake}"
        );
    }
}

/// `--where` narrows both sides to the rows it selects; `--ignore-column`
/// leaves a column out (never a key column).
fn narrowed_by_where_and_ignore_column(
    run: &Run,
    url: &str,
    catalog: &str,
    by_run: &serde_json::Value,
) {
    let wrong = by_run
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["table"] == "orders" && r["kind"] == "wrong")
        .and_then(|r| r["key"].as_str())
        .and_then(|k| k.strip_prefix("order_id="))
        .expect("a wrong order was planted")
        .to_owned();
    let lake_table = format!("{}.orders", run.namespace());
    let reconcile = |extra: &[&str]| {
        let output = reconcile_standalone(url, "orders", &[catalog], &lake_table, extra, &[]);
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        (output.status.code(), text)
    };
    let only = format!("order_id = {wrong}");
    // The one row selected is the wrong one: exit 1, one row compared, one wrong.
    let (code, text) = reconcile(&["--where", &only]);
    assert_eq!(code, Some(1), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("lake "))
        .unwrap_or_default()
        .to_owned();
    let counts: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        counts.get(2..4),
        Some(&["1", "1"][..]),
        "compared 1, wrong 1: {text}"
    );
    // Its damage was its status: without that column, it is equal.
    let (code, text) = reconcile(&["--where", &only, "--ignore-column", "status"]);
    assert_eq!(code, Some(0), "{text}");
    for (column, error) in [
        ("order_id", "primary-key column"),
        ("no_such", "no column no_such"),
    ] {
        let (code, text) = reconcile(&["--ignore-column", column]);
        assert_eq!(code, Some(2), "{text}");
        assert!(text.contains(error), "{text}");
    }
}

/// `lossproof reconcile --source … --workers A,B`: the comparison split
/// into key ranges over two real `lossproof worker` processes (DataFusion
/// Distributed) gives exactly the built-in diff, row for row and in the
/// same order, the same counts and the same exit code, for every table
/// (order_items has a composite key). Each worker compared ranges.
fn the_same_diff_from_two_workers(run: &Run, url: &str, catalog: &str) {
    let workers = [Worker::start(), Worker::start()];
    let urls = format!("{},{}", workers[0].url, workers[1].url);
    for table in ["customers", "orders", "order_items"] {
        let lake_table = format!("{}.{table}", run.namespace());
        let reconcile = |label: &str, extra: &[&str]| {
            let out = run.state.join(format!("workers-{label}-{table}.json"));
            let mut args = vec!["--out", out.to_str().unwrap()];
            args.extend_from_slice(extra);
            let output = reconcile_standalone(url, table, &[catalog], &lake_table, &args, &[]);
            let diff = std::fs::read_to_string(&out).unwrap_or_else(|e| {
                panic!(
                    "{label} {table}: {e}: {}",
                    crate::support::output_text(&output)
                )
            });
            (output, diff)
        };
        let (built_in, expected) = reconcile("built-in", &[]);
        let (spread, found) = reconcile("spread", &["--workers", &urls]);
        let text = crate::support::output_text(&spread);
        assert!(
            text.contains("distributed: 2 key ranges"),
            "{table}: {text}"
        );
        assert!(
            !text.contains(url),
            "the source's URL is never printed: {text}"
        );
        assert_eq!(found, expected, "{table}: the diff, row for row");
        assert_eq!(spread.stdout, built_in.stdout, "{table}: the counts");
        assert_eq!(
            spread.status.code(),
            built_in.status.code(),
            "{table}: {text}"
        );
    }
    // A worker that is not there: an error naming the workers (exit 2),
    // no counts.
    let lake_table = format!("{}.orders", run.namespace());
    let dead = format!("http://127.0.0.1:9,{}", workers[0].url);
    let output = reconcile_standalone(
        url,
        "orders",
        &[catalog],
        &lake_table,
        &["--workers", &dead],
        &[],
    );
    let text = crate::support::output_text(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(output.stdout.is_empty(), "{text}");
    assert!(text.contains("127.0.0.1:9"), "{text}");
    for worker in workers {
        let log = worker.stop();
        assert!(
            log.matches("compares key range").count() >= 3,
            "each worker compared a range of each table: {log}"
        );
    }
}

/// A `lossproof worker` on a free loopback port, stopped (SIGTERM) on drop.
struct Worker {
    child: std::process::Child,
    url: String,
}

impl Worker {
    fn start() -> Self {
        use std::io::BufRead as _;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lossproof"))
            .args(["worker", "--listen", "127.0.0.1:0"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("lossproof worker");
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let url = first
            .trim()
            .strip_prefix("lossproof worker: listening on ")
            .unwrap_or_else(|| panic!("the worker says where it listens: {first:?}"))
            .to_owned();
        Self { child, url }
    }

    /// SIGTERM, then its exit (0) and what it wrote on stderr.
    fn stop(mut self) -> String {
        use std::io::Read as _;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap()),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let status = self.child.wait().unwrap();
        let mut log = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut log)
            .unwrap();
        assert!(
            status.success(),
            "the worker stops cleanly: {status}: {log}"
        );
        log
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `lossproof bench reconcile` at a small size (figures are not judged,
/// only that every method ran, each in its own process with its peak RSS,
/// and found or read exactly what it should; it cleans up after itself).
fn the_reconcile_benchmark_runs_and_checks_itself(state: &Path) {
    let output = lossproof(
        state,
        &["bench", "reconcile", "--rows", "30000", "--no-reladiff"],
    );
    let text = crate::stack::ok(&output);
    for method in [
        "lossproof reconcile",
        "COPY source TO STDOUT",
        "DataFusion scan of the lake",
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(method))
            .unwrap_or_else(|| panic!("{method}: {text}"));
        // rows, seconds, rows/s, peak RSS MB, note
        let rss: u64 = line[method.len()..]
            .split_whitespace()
            .nth(3)
            .and_then(|w| w.parse().ok())
            .unwrap_or(0);
        assert!(rss > 0, "{method} has its peak RSS: {line}");
    }
    assert!(
        text.contains("found 300 (100 missing, 100 wrong, 100 extra), streamed"),
        "{text}"
    );
    assert!(!text.contains("MISMATCH"), "{text}");
}

/// `lossproof reconcile --source URL --table T --lake LAKE… --lake-table
/// NS.T --out F` for each of the run's tables: every diff row's (table,
/// key, kind), sorted; each exit 1 when that table has a diff, 0 when not.
fn standalone_diff(
    run: &Run,
    url: &str,
    lake: &[&str],
    label: &str,
) -> Vec<(serde_json::Value, serde_json::Value, serde_json::Value)> {
    standalone_diff_in(run, url, lake, &run.namespace(), &[], label)
}

/// [`standalone_diff`] with the lake's tables in `namespace` and `env`
/// added to the command's environment.
fn standalone_diff_in(
    run: &Run,
    url: &str,
    lake: &[&str],
    namespace: &str,
    env: &[(&str, &std::ffi::OsStr)],
    label: &str,
) -> Vec<(serde_json::Value, serde_json::Value, serde_json::Value)> {
    let mut found = Vec::new();
    for table in ["customers", "orders", "order_items"] {
        let out = run.state.join(format!("standalone-{label}-{table}.json"));
        let lake_table = format!("{namespace}.{table}");
        let output = reconcile_standalone(
            url,
            table,
            lake,
            &lake_table,
            &["--out", out.to_str().unwrap()],
            env,
        );
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        assert!(
            !text.contains(url),
            "the source's URL is never printed: {text}"
        );
        assert!(
            !text.contains("compared in memory"),
            "{label} {table}: {text}"
        );
        let diff: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&out)
                .unwrap_or_else(|e| panic!("{label} {table}: {e}: {text}")),
        )
        .unwrap();
        let rows = diff.as_array().unwrap();
        let expected = i32::from(!rows.is_empty());
        assert_eq!(
            output.status.code(),
            Some(expected),
            "{label} {table}: {text}"
        );
        assert!(text.contains(&format!("lake       {table}")), "{text}");
        found.extend(
            rows.iter()
                .map(|r| (r["table"].clone(), r["key"].clone(), r["kind"].clone())),
        );
    }
    found.sort_by_key(|(t, k, d)| format!("{t}{k}{d}"));
    found
}

/// `lossproof reconcile --source URL --table TABLE --lake LAKE…
/// --lake-table LAKE_TABLE EXTRA…` with `env` added to its environment.
fn reconcile_standalone(
    url: &str,
    table: &str,
    lake: &[&str],
    lake_table: &str,
    extra: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> std::process::Output {
    let mut args = vec!["reconcile", "--source", url, "--table", table, "--lake"];
    args.extend_from_slice(lake);
    args.extend(["--lake-table", lake_table]);
    args.extend_from_slice(extra);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    crate::support::lossproof_in_env(&args, env)
}

/// Every table of `namespace` in `from` created in `to` with the same
/// schema and the rows a reader of `from` sees (one append).
#[cfg(feature = "aws")]
/// `--lake http://…`: the same tables in a real Iceberg REST catalog
/// server (lakana-server from PyPI: a sqlite catalog, a file warehouse,
/// bearer tokens), written there through iceberg-rust's own REST commits;
/// the token in `$LOSSPROOF_LAKE_TOKEN`: the same damage. A wrong token is
/// an error (exit 2) naming the catalog, never printing the token; a token
/// on the command line is refused.
async fn the_same_through_a_rest_catalog(
    run: &Run,
    url: &str,
    expected: &[(serde_json::Value, serde_json::Value, serde_json::Value)],
) {
    use lossproof_runtime::lake::rest::{RestSecrets, TOKEN_ENV};
    let server = crate::stack::RestCatalogServer::start(&run.state.join("rest-catalog")).await;
    let properties = [("prefix".to_owned(), server.prefix.clone())];
    let secrets = RestSecrets {
        token: Some(server.token.clone()),
        credential: None,
    };
    let rest = Lake::open_rest(&server.uri, &properties, &secrets)
        .await
        .expect("the REST catalog opens");
    assert!(
        rest.describe()
            .starts_with("REST catalog http://127.0.0.1:")
    );
    // lakana keeps tables in its medallion namespaces.
    let namespace = iceberg::NamespaceIdent::new("bronze".to_owned());
    let from = Lake::open(&run.state).await.unwrap();
    let from_ns = iceberg::NamespaceIdent::new(run.namespace());
    for name in from.table_names(&run.namespace()).await.unwrap() {
        let source = from
            .catalog()
            .load_table(&iceberg::TableIdent::new(from_ns.clone(), name.clone()))
            .await
            .unwrap();
        let creation = iceberg::TableCreation::builder()
            .name(name.clone())
            .schema(source.metadata().current_schema().as_ref().clone())
            .build();
        let target = rest
            .catalog()
            .create_table(&namespace, creation)
            .await
            .unwrap_or_else(|e| panic!("create bronze.{name}: {e}\n{}", server.log()));
        let batches = lossproof_runtime::lake::read::visible_rows(&source)
            .await
            .unwrap();
        rest.append(&target, batches, std::collections::HashMap::new())
            .await
            .unwrap_or_else(|e| panic!("append to bronze.{name}: {e}\n{}", server.log()));
    }
    let lake = format!("{}?prefix={}", server.uri, server.prefix);
    let token = std::ffi::OsString::from(&server.token);
    let found = standalone_diff_in(
        run,
        url,
        &[&lake],
        "bronze",
        &[(TOKEN_ENV, token.as_os_str())],
        "rest",
    );
    assert_eq!(found, expected, "through the REST catalog");
    // A wrong token: an error naming the catalog, never the token.
    let wrong = std::ffi::OsString::from("lakana_pat_0000000000000000_not-the-secret");
    let refused = reconcile_standalone(
        url,
        "orders",
        &[&lake],
        "bronze.orders",
        &[],
        &[(TOKEN_ENV, wrong.as_os_str())],
    );
    let text = crate::support::output_text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{text}");
    assert!(
        text.contains("cannot open the REST catalog http://127.0.0.1:"),
        "{text}"
    );
    assert!(
        !text.contains("not-the-secret"),
        "the token is never printed: {text}"
    );
    // A token on the command line is refused before anything is sent.
    let inline = format!("{lake}&token={}", server.token);
    let refused = reconcile_standalone(url, "orders", &[&inline], "bronze.orders", &[], &[]);
    let text = crate::support::output_text(&refused);
    assert_eq!(refused.status.code(), Some(2), "{text}");
    assert!(text.contains(&format!("give it in ${TOKEN_ENV}")), "{text}");
}

async fn copy_tables(from: &Lake, to: &Lake, namespace: &str) {
    use lossproof_runtime::lake::{Commit, write_data_files};
    let ns = to.ensure_namespace(namespace).await.unwrap();
    for name in from.table_names(namespace).await.unwrap() {
        let ident = iceberg::TableIdent::new(ns.clone(), name.clone());
        let source = from.catalog().load_table(&ident).await.unwrap();
        let creation = iceberg::TableCreation::builder()
            .name(name.clone())
            .schema(source.metadata().current_schema().as_ref().clone())
            .build();
        let target = to.catalog().create_table(&ns, creation).await.unwrap();
        let batches = lossproof_runtime::lake::read::visible_rows(&source)
            .await
            .unwrap();
        let files = write_data_files(&target, batches).await.unwrap();
        to.commit(&target, Commit::append(files)).await.unwrap();
    }
}

async fn killed_and_restarted_under_load(state: &Path, ports: Ports) {
    let run = Run::start(state, ports, "kills").await;
    let load = Duration::from_secs(8);
    let started = Instant::now();
    let workload = {
        let plan = workload_plan();
        tokio::spawn(async move {
            workload::run(
                &plan,
                11,
                &lossproof_runtime::profile::Source::local(ports.source_postgres),
                DATABASE,
                load,
            )
            .await
        })
    };
    let mut consumer = run.spawn_consumer();
    let mut kills = Vec::new();
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        consumer.sigkill();
        kills.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(200)).await;
        consumer = run.spawn_consumer();
    }
    let report = workload.await.unwrap().unwrap();
    assert!(
        kills.iter().all(|k| *k < load),
        "every kill landed while the workload ran ({load:?}): {kills:?}"
    );
    run.wait_scoreable(&report).await;
    consumer.stop();
    let scored = run.reconcile().await;
    let log = consumer.log();
    assert!(
        log.contains("resuming from the group's committed offsets"),
        "a restart resumes from the auto-committed group offsets: {log}"
    );
    // Whatever the kills cost is luck (FINDINGS.md): it is reported, not
    // asserted. What must hold is that the run ends and is comparable.
    eprintln!(
        "careless consumer, 4 SIGKILLs under load: {}",
        show(&scored)
    );
    // 4 s at 200 operations/s: about a hundred orders on a quiet machine,
    // fewer when the cores are shared (the workload keeps its rate only as
    // far as the database keeps up). The floor says the lake is not
    // trivially equal to an empty source.
    assert!(
        counts(&scored, "orders").compared > 40,
        "{:?}",
        scored.summary
    );
    run.finish().await;
}

async fn widening_breaks_the_append_and_it_carries_on(state: &Path, ports: Ports) {
    let run = Run::start(state, ports, "widen").await;
    let mut consumer = run.spawn_consumer();
    // One workload of 5 s; the ALTER lands 2 s in, under load.
    let workload = {
        let plan = workload_plan();
        tokio::spawn(async move {
            workload::run(
                &plan,
                21,
                &lossproof_runtime::profile::Source::local(ports.source_postgres),
                DATABASE,
                Duration::from_secs(5),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    run.source
        .batch_execute("ALTER TABLE orders ALTER COLUMN amount TYPE numeric(14,2)")
        .await
        .unwrap();
    let after = workload.await.unwrap().unwrap();
    assert_eq!(after.failed, 0, "{after:?}");
    run.wait_scoreable(&after).await;
    consumer.stop();
    let log = consumer.log();
    let scored = run.reconcile().await;
    let failure = log
        .lines()
        .position(|l| {
            l.contains("orders: append of")
                && l.contains("schema changed: column `amount` is decimal(14,2) in the events, decimal(10,2) in the table")
        })
        .unwrap_or_else(|| panic!("the append fails after ALTER TABLE: {log}"));
    assert!(
        log.lines()
            .skip(failure + 1)
            .any(|l| l.contains("customers: ") && l.contains("appended")),
        "and the consumer carries on with the next batches: {log}"
    );
    eprintln!(
        "careless consumer, ALTER TABLE orders widen amount under load: {}",
        show(&scored)
    );
    assert!(
        counts(&scored, "orders")
            .by_kind
            .get(&DiffKind::Missing)
            .copied()
            .unwrap_or(0)
            > 0,
        "orders whose delete commit landed and whose append failed are gone: {:?}",
        scored.summary
    );
    assert_eq!(
        counts(&scored, "customers").wrong,
        0,
        "{:?}",
        scored.summary
    );
    run.finish().await;
}

/// One run on the shared stack: fresh source tables, a connector, topics,
/// a consumer group and a namespace of its own.
pub(crate) struct Run {
    pub(crate) state: PathBuf,
    pub(crate) ports: Ports,
    pub(crate) id: String,
    pub(crate) names: CaptureNames,
    pub(crate) source: tokio_postgres::Client,
    pub(crate) connect: ConnectClient,
    /// The connector's configuration (to create it again).
    pub(crate) config: serde_json::Value,
}

impl Run {
    pub(crate) async fn start(state: &Path, ports: Ports, label: &str) -> Self {
        Self::start_with(
            state,
            ports,
            label,
            workload::Capture::plain(Duration::from_mins(1)),
        )
        .await
    }

    /// [`Run::start`], captured as `how` says (a preload, partitions).
    pub(crate) async fn start_with(
        state: &Path,
        ports: Ports,
        label: &str,
        how: workload::Capture,
    ) -> Self {
        let source = lossproof_runtime::postgres::connect(ports.source_postgres, DATABASE)
            .await
            .unwrap();
        let id = format!("{label}{}", std::process::id());
        let names = CaptureNames::for_run(&id);
        let connect = ConnectClient::local(ports.connect);
        let captured = workload::capture(
            &source,
            &connect,
            &lossproof_runtime::Endpoints::local(ports, state),
            &names,
            orders(),
            &how,
            &|_| {},
        )
        .await
        .unwrap();
        Self {
            state: state.to_owned(),
            ports,
            id,
            names,
            source,
            connect,
            config: captured.config,
        }
    }

    fn namespace(&self) -> String {
        lossproof_consumers::namespace("careless", &self.names)
    }

    fn group(&self) -> String {
        lossproof_consumers::group("careless", &self.names)
    }

    pub(crate) fn topics(&self) -> Vec<String> {
        lossproof_consumers::topics(&self.names, orders())
    }

    fn spawn_consumer(&self) -> Consumer {
        Consumer::spawn(&self.state, &self.id)
    }

    pub(crate) async fn workload(&self, seed: u64, duration: Duration) -> WorkloadReport {
        workload::run(
            &workload_plan(),
            seed,
            &lossproof_runtime::profile::Source::local(self.ports.source_postgres),
            DATABASE,
            duration,
        )
        .await
        .unwrap()
    }

    /// The gate: connector RUNNING, slot at the workload's final LSN, the
    /// careless group's committed offsets at the end of every topic. Offsets
    /// are stored as records are handed to the consumer, so every record is
    /// then in a batch it will finish before a SIGTERM stops it.
    async fn wait_scoreable(&self, report: &WorkloadReport) {
        let scoreable = self.gate(report.final_lsn, Duration::from_mins(1)).await;
        assert_eq!(scoreable, Ok(()), "the run is drained and scoreable");
    }

    async fn gate(&self, final_lsn: u64, limit: Duration) -> Result<(), gate::Invalid> {
        let careless = gate::ConsumerPosition {
            consumer: "careless".into(),
            group: self.group(),
            topics: self.topics(),
            lake_offsets: None,
            slot: None,
        };
        gate::wait_scoreable(
            &self.connect,
            &self.names,
            &self.source,
            final_lsn,
            &lossproof_runtime::profile::Kafka::plain(self.ports.broker),
            &[careless],
            None,
            limit,
        )
        .await
    }

    async fn reconcile(&self) -> Reconciliation {
        let lake = Lake::open(&self.state).await.unwrap();
        let careless = ConsumerLake {
            changelog: false,
            applied: None,
            consumer: "careless".into(),
            namespace: self.namespace(),
            views: std::collections::HashMap::new(),
        };
        let tables: Vec<&str> = orders().table_names();
        let scored =
            reconcile::reconcile(&self.source, &lake, &tables, &[careless], RowTables::Skip)
                .await
                .unwrap();
        // The careless lake is read in key order: every table by the
        // streaming merge, none in memory.
        assert_eq!(scored.in_memory, [], "compared in memory instead of merged");
        scored
    }

    pub(crate) async fn finish(self) {
        debezium::remove(&self.connect, &self.names, &self.source)
            .await
            .unwrap();
    }
}

pub(crate) fn workload_plan() -> lossproof_lang::plan::WorkloadPlan {
    crate::support::plan("workload orders rate 300/s connections 3 customers 30\nunder load 1s < >")
        .workload
}

/// `lossproof consumer KIND` as a child process, its stderr in a file.
pub(crate) struct Consumer {
    pub(crate) child: Child,
    log: PathBuf,
}

impl Consumer {
    fn spawn(state: &Path, run: &str) -> Self {
        Self::spawn_kind(state, run, "careless", &[])
    }

    /// `lossproof consumer KIND --run RUN --state STATE EXTRA…`, its stderr
    /// appended to `STATE/KIND-RUN.log`.
    pub(crate) fn spawn_kind(state: &Path, run: &str, kind: &str, extra: &[&str]) -> Self {
        let log = state.join(format!("{kind}-{run}.log"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_lossproof"))
            .args(["consumer", kind, "--run", run, "--state"])
            .arg(state)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("start the {kind} consumer: {e}"));
        Self { child, log }
    }

    pub(crate) fn sigkill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait (bounded) for it to finish its batch and exit.
    pub(crate) fn stop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id().cast_signed());
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(status.success(), "consumer exit: {status}\n{}", self.log());
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.sigkill();
        panic!(
            "the consumer did not stop within 30 s of SIGTERM\n{}",
            self.log()
        );
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.sigkill();
        }
    }
}

pub(crate) fn counts<'a>(scored: &'a Reconciliation, table: &str) -> &'a Counts {
    &scored
        .summary
        .iter()
        .find(|s| s.table == table)
        .unwrap_or_else(|| panic!("no summary for {table}: {:?}", scored.summary))
        .counts
}

pub(crate) fn show(scored: &Reconciliation) -> String {
    scored
        .summary
        .iter()
        .map(|s| {
            format!(
                "{}: {} compared, {} wrong {:?}",
                s.table, s.counts.compared, s.counts.wrong, s.counts.by_kind
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A source table the reconciler cannot compare is an error that names the
/// table and column (never a silent string compare, never a count), and the
/// caller can tell which by its variant, not its text.
async fn what_cannot_be_compared_is_a_typed_error(run: &Run) {
    use lossproof_runtime::reconcile::canonical::CanonicalError;
    run.source
        .batch_execute(
            "CREATE TABLE lp_unsupported (id bigint PRIMARY KEY, doc int4range); \
             CREATE TABLE lp_keyless (id bigint, note text);",
        )
        .await
        .unwrap();
    let lake = Lake::open(&run.state).await.unwrap();
    let careless = ConsumerLake {
        changelog: false,
        applied: None,
        consumer: "careless".into(),
        namespace: run.namespace(),
        views: std::collections::HashMap::new(),
    };
    let unsupported = reconcile::reconcile(
        &run.source,
        &lake,
        &["lp_unsupported"],
        std::slice::from_ref(&careless),
        RowTables::Skip,
    )
    .await
    .unwrap_err();
    match &unsupported {
        reconcile::Error::Column {
            table,
            column,
            source: CanonicalError::Unsupported(sql_type),
        } => assert_eq!(
            (table.as_str(), column.as_str(), sql_type.as_str()),
            ("lp_unsupported", "doc", "int4range")
        ),
        other => panic!("expected the column named: {other:?}"),
    }
    assert_eq!(
        unsupported.to_string(),
        "lp_unsupported.doc: the reconciler has no canonical form for `int4range` yet"
    );
    let keyless = reconcile::reconcile(
        &run.source,
        &lake,
        &["lp_keyless"],
        &[careless],
        RowTables::Skip,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&keyless, reconcile::Error::NoPrimaryKey { table } if table == "lp_keyless"),
        "{keyless:?}"
    );
    run.source
        .batch_execute("DROP TABLE lp_unsupported, lp_keyless")
        .await
        .unwrap();
    arrays_read_as_the_source_has_them(run).await;
}

/// A user's arrays: of an enum, two-dimensional, jsonb elements that are
/// themselves JSON arrays, NULL elements; read from the table and back from
/// the history table alike. An array of a type with no canonical form is
/// the same error as the type.
async fn arrays_read_as_the_source_has_them(run: &Run) {
    use lossproof_runtime::reconcile::canonical::{CanonicalError, Kind};
    use lossproof_runtime::reconcile::source;
    run.source
        .batch_execute(
            "CREATE TYPE lp_mood AS ENUM ('sad', 'ok'); \
             CREATE TABLE lp_arrays (id bigint PRIMARY KEY, moods lp_mood[], grid integer[], docs jsonb[]); \
             CREATE TRIGGER lossproof_history AFTER INSERT OR UPDATE ON lp_arrays \
             FOR EACH ROW EXECUTE FUNCTION lossproof_record_version(); \
             INSERT INTO lp_arrays VALUES (1, '{ok,NULL,sad}', '{{1,2},{3,4}}', \
             ARRAY['[1, 2]'::jsonb, NULL, '{\"b\": 1, \"a\": 2}']), (2, '{}', NULL, '{}'); \
             CREATE TABLE lp_range_arrays (id bigint PRIMARY KEY, spans int4range[]);",
        )
        .await
        .unwrap();
    let table = source::describe(&run.source, "lp_arrays").await.unwrap();
    assert_eq!(
        table.columns[1..],
        [
            ("moods".to_owned(), Kind::Array(&Kind::Text)),
            ("grid".to_owned(), Kind::Array(&Kind::Int)),
            ("docs".to_owned(), Kind::Array(&Kind::Json)),
        ]
    );
    let one =
        r#"docs=["[1,2]",∅,"{\"a\":2,\"b\":1}"], grid=[[1,2],[3,4]], id=1, moods=["ok",∅,"sad"]"#;
    let two = "docs=[], grid=∅, id=2, moods=[]";
    let rows = source::rows(&run.source, &table).await.unwrap();
    assert_eq!(
        rows.values().map(String::as_str).collect::<Vec<_>>(),
        [one, two]
    );
    let history = source::history(&run.source, &table).await.unwrap().unwrap();
    assert!(history["id=1"].contains(one), "{history:?}");
    assert!(history["id=2"].contains(two), "{history:?}");
    // A column dropped after the table was described (the snapshot check
    // describes the tables when the phases begin): every version read back
    // with the column's type then, its value before the drop, NULL after.
    run.source
        .batch_execute(
            "ALTER TABLE lp_arrays DROP COLUMN grid; \
             UPDATE lp_arrays SET moods = '{ok}' WHERE id = 2",
        )
        .await
        .unwrap();
    let versions = source::versions(&run.source, &table, &[], None, |row| row)
        .await
        .unwrap();
    assert_eq!(
        versions
            .iter()
            .map(|(_, _, row)| row.as_deref())
            .collect::<Vec<_>>(),
        [
            Some(one),
            Some(two),
            Some(r#"docs=[], grid=∅, id=2, moods=["ok"]"#)
        ]
    );
    let error = source::describe(&run.source, "lp_range_arrays")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, reconcile::Error::Column { column, source: CanonicalError::Unsupported(t), .. }
            if column == "spans" && t == "int4range[]"),
        "{error:?}"
    );
    run.source
        .batch_execute("DROP TABLE lp_arrays, lp_range_arrays; DROP TYPE lp_mood")
        .await
        .unwrap();
}

/// Damage the clean careless lake on purpose, one key per kind, and check
/// the reconciler names each damage, and nothing else.
#[allow(clippy::too_many_lines)] // one key per kind, planted then checked
async fn damage_is_named_by_kind(run: &Run) {
    use lossproof_runtime::change_event::{Cell, Row};
    use lossproof_runtime::lake::{Commit, write_data_files, write_equality_deletes};

    let one = |sql: String| async move {
        let row = run.source.query_one(&sql, &[]).await.unwrap();
        row.get::<_, i64>(0)
    };
    // A key with an older version in the history, a deleted key, three
    // other live keys.
    let stale = one("SELECT o.order_id FROM orders o JOIN lossproof_history h \
         ON h.tbl = 'orders' AND (h.row->>'order_id')::bigint = o.order_id \
         GROUP BY o.order_id HAVING count(DISTINCT h.row) >= 2 ORDER BY o.order_id LIMIT 1"
        .into())
    .await;
    let resurrected = one(
        "SELECT DISTINCT (row->>'order_id')::bigint AS id FROM lossproof_history h WHERE tbl = 'orders' \
         AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.order_id = (h.row->>'order_id')::bigint) ORDER BY id LIMIT 1"
            .into(),
    )
    .await;
    let live: Vec<i64> = run
        .source
        .query(
            "SELECT order_id FROM orders WHERE order_id <> $1 ORDER BY order_id LIMIT 3",
            &[&stale],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let (missing, wrong, duplicate) = (live[0], live[1], live[2]);
    let extra = 999_999_999_i64;

    let current = order_rows(
        run,
        &format!("orders WHERE order_id IN ({wrong}, {duplicate}, {stale})"),
    )
    .await;
    let by_id = |id: i64| {
        current
            .iter()
            .find(|r| r["order_id"] == Cell::Int(id))
            .unwrap()
            .clone()
    };
    let older = order_rows(
        run,
        &format!(
            "(SELECT (jsonb_populate_record(NULL::orders, row)).* FROM lossproof_history \
             WHERE tbl = 'orders' AND (row->>'order_id')::bigint = {stale}) AS h"
        ),
    )
    .await
    .into_iter()
    .find(|r| *r != by_id(stale))
    .expect("an older version");
    let mut tampered = by_id(wrong);
    tampered.insert("status".into(), Cell::Text("tampered".into()));
    let mut back = Row::new();
    back.insert("order_id".into(), Cell::Int(resurrected));
    let mut invented = Row::new();
    invented.insert("order_id".into(), Cell::Int(extra));

    let lake = Lake::open(&run.state).await.unwrap();
    let ident = iceberg::TableIdent::new(
        iceberg::NamespaceIdent::new(run.namespace()),
        "orders".into(),
    );
    let table = iceberg::Catalog::load_table(lake.catalog(), &ident)
        .await
        .unwrap();
    let schema = table.metadata().current_schema().clone();
    let key = |id: i64| -> Row { [("order_id".to_owned(), Cell::Int(id))].into() };
    let gone: Vec<Row> = [missing, wrong, stale].into_iter().map(key).collect();
    let deletes = lossproof_consumers::to_arrow(&schema, &gone.iter().collect::<Vec<_>>()).unwrap();
    let files = write_equality_deletes(&table, vec![1], vec![deletes])
        .await
        .unwrap();
    let table = lake.commit(&table, Commit::row_delta(files)).await.unwrap();
    let added = [tampered, older, back, invented, by_id(duplicate)];
    let rows = lossproof_consumers::to_arrow(&schema, &added.iter().collect::<Vec<_>>()).unwrap();
    let files = write_data_files(&table, vec![rows]).await.unwrap();
    lake.commit(&table, Commit::append(files)).await.unwrap();

    let scored = run.reconcile().await;
    let mut named: Vec<(String, DiffKind)> = scored
        .diff
        .iter()
        .map(|d| (d.key.clone(), d.kind))
        .collect();
    named.sort();
    let mut expected = vec![
        (format!("order_id={missing}"), DiffKind::Missing),
        (format!("order_id={wrong}"), DiffKind::Wrong),
        (format!("order_id={stale}"), DiffKind::Stale),
        (format!("order_id={resurrected}"), DiffKind::Resurrected),
        (format!("order_id={duplicate}"), DiffKind::Duplicate),
        (format!("order_id={extra}"), DiffKind::Extra),
    ];
    expected.sort();
    assert_eq!(named, expected, "{:#?}", scored.diff);
    let summary = counts(&scored, "orders");
    assert_eq!(summary.wrong, 6);
    assert!(summary.wrong <= summary.compared);
}

/// The source's orders (`from` is what follows FROM) as rows of cells.
async fn order_rows(run: &Run, from: &str) -> Vec<lossproof_runtime::change_event::Row> {
    use lossproof_runtime::change_event::Cell;
    let sql = format!(
        "SELECT order_id, customer_id, status, amount::text, quantity::bigint, note, \
         (extract(epoch from created_at) * 1000000)::bigint, (extract(epoch from updated_at) * 1000000)::bigint FROM {from}"
    );
    let names = [
        "order_id",
        "customer_id",
        "status",
        "amount",
        "quantity",
        "note",
        "created_at",
        "updated_at",
    ];
    run.source
        .query(&sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let cell = match *n {
                        "status" | "note" => {
                            r.get::<_, Option<String>>(i).map_or(Cell::Null, Cell::Text)
                        }
                        "amount" => r
                            .get::<_, Option<String>>(i)
                            .map_or(Cell::Null, Cell::Decimal),
                        _ => r.get::<_, Option<i64>>(i).map_or(Cell::Null, Cell::Int),
                    };
                    ((*n).to_owned(), cell)
                })
                .collect()
        })
        .collect()
}

/// The connector stopped before the last writes: the gate refuses to score.
async fn a_stopped_connector_is_invalid(run: &Run) {
    run.connect.stop(&run.names.connector).await.unwrap();
    run.source
        .batch_execute("UPDATE customers SET name = name || '!' WHERE customer_id IN (SELECT customer_id FROM customers ORDER BY 1 LIMIT 5)")
        .await
        .unwrap();
    let final_lsn = debezium::current_lsn(&run.source).await.unwrap();
    let verdict = run.gate(final_lsn, Duration::from_secs(3)).await;
    assert!(
        matches!(
            verdict,
            Err(gate::Invalid::NotDrained(NotDrained::ConnectorNotRunning(
                _
            )))
        ),
        "a stopped connector makes the run INVALID, not a count: {verdict:?}"
    );
}
