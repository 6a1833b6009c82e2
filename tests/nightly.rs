//! `lossproof nightly` on the real stack and a real moto server: the
//! correct consumer's lake under a seeded workload, then the Step Functions
//! workflow (terraform/nightly.asl.json) compact -> reconcile -> dbt marts:
//!
//! 1. on a clean lake it succeeds and builds both marts, whose Parquet
//!    locations hold exactly the lake's figures; what it created on moto is
//!    what terraform/ declares (names and definition);
//! 2. after more load a second nightly rewrites only the mart rows that
//!    changed (dbt incremental models; `built_by` is the dbt invocation),
//!    and `-- --full-refresh` rebuilds every row;
//! 3. two marts sharing a location fail their dbt tests (at BuildMarts);
//! 4. after a source change the pipeline never saw, it fails at Reconcile,
//!    the alert names the diff, and the marts keep their previous content.
//!
//! And the workflow alone on moto, with tasks the test scripts: a
//! `Transient` failure is run again, a failure's cause reaches the alert
//! (through lossproof's fix of moto's SendTaskFailure), BuildMarts never
//! runs after a failed Reconcile.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use datafusion::prelude::{ParquetReadOptions, SessionContext};
use lossproof_runtime::Stack;
use lossproof_runtime::nightly::{DEFINITION, Job, Moto, Names, Report, Task};
use lossproof_runtime::tools::Tools;

use crate::careless::{Consumer, Run};
use crate::correct::QUICK;
use crate::stack::up_own_stack;

#[test]
fn nightly_on_moto() {
    let _serial = crate::support::heavy_test();
    let (state, _guard) = up_own_stack("nightly");
    let ports = Stack::open(&state).unwrap().ports().unwrap();
    let runtime = crate::lake::tokio();
    runtime.block_on(async {
        let run = Run::start(&state, ports, "nightly").await;
        let mut consumer = Consumer::spawn_kind(&state, &run.id, "correct", QUICK);
        let marts = state.join("marts-test");
        let load = run.workload(21, Duration::from_secs(4)).await;
        assert_eq!(load.failed, 0, "{load:?}");

        // 1. A clean lake: SUCCEEDED, both marts built and equal to the lake.
        let (output, first) = nightly(&state, &run.id, &marts, &[]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        assert_eq!(first.status, "SUCCEEDED");
        assert_states_ran_once_or_retried(&first);
        let (orders, revenue) = source_orders(&run).await;
        assert!(orders > 20, "the workload made orders: {orders}");
        assert_marts_match(&marts, orders, &revenue).await;
        terraform_declares_what_nightly_created(&first);
        let first_build = invocation(&marts);

        // 2. More load; the second nightly rewrites only what changed.
        // Its generator starts again from the same keys: the inserts that
        // collide with the first load's orders fail in the source (and change
        // nothing); its updates and deletes change the first load's orders.
        let load = run.workload(22, Duration::from_secs(2)).await;
        assert!(load.ops > 2 * load.failed, "{load:?}");
        let (output, second) = nightly(&state, &run.id, &marts, &[]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        assert_eq!(second.status, "SUCCEEDED");
        let (orders, revenue) = source_orders(&run).await;
        assert_marts_match(&marts, orders, &revenue).await;
        let second_build = invocation(&marts);
        let by_build = rows_by_build(&marts.join("dim_order_status")).await;
        let rewritten = by_build.get(&second_build).copied().unwrap_or(0);
        let kept = by_build.get(&first_build).copied().unwrap_or(0);
        assert!(
            rewritten > 0 && kept > 0 && rewritten + kept == orders,
            "the second build rewrote only the changed orders: {by_build:?} ({orders} orders)"
        );

        a_full_refresh_rebuilds_every_row(&state, &run, &marts, orders, &revenue).await;
        a_killed_nightly_leaves_nothing_running(&state, &run, &marts);
        two_marts_in_one_location_fail(&state, &run, &marts);
        an_unseen_change_fails_at_reconcile(&state, &run, &marts).await;

        consumer.stop();
        run.finish().await;
    });
    assert_eq!(nightly_processes(""), Vec::<String>::new());
}

/// `lossproof up --profile aws`: moto server is a component of the stack
/// (start-up time and memory in `status --verbose`), holding every
/// resource terraform/ declares, and the lake is in its S3 with a Glue
/// catalog; a crash seed runs unchanged on that lake, both consumers are
/// scored on it, and its `run nightly` runs the workflow (dbt reading Glue)
/// on that moto, which outlives it; `down` stops it.
#[cfg(feature = "aws")]
#[test]
fn the_aws_profile_runs_the_nightly_on_its_own_moto() {
    let _serial = crate::support::heavy_test();
    let (state, guard) = crate::stack::up_own_stack_with("aws", &["--profile", "aws"]);
    // The lake is moto's: S3 and Glue, nothing in the state directory.
    assert!(
        !state.join("lake").exists(),
        "no local lake on the aws stack"
    );
    let status = crate::stack::ok(&crate::stack::lossproof(&state, &["status", "--verbose"]));
    let moto_rows: Vec<&str> = status.lines().filter(|l| l.starts_with("moto ")).collect();
    assert_eq!(
        moto_rows.len(),
        2,
        "a status row and a start-up/RSS row:\n{status}"
    );
    assert!(
        moto_rows[0].contains("healthy") && moto_rows[0].contains("moto server 5."),
        "{status}"
    );
    let figures: Vec<&str> = moto_rows[1].split_whitespace().collect();
    assert!(
        figures[1].ends_with('s') && figures[2].parse::<f64>().unwrap() > 10.0,
        "moto's start-up time and resident MB: {status}"
    );
    let moto_pid = |state: &Path| -> i64 {
        let report = crate::stack::status_json(state);
        assert_eq!(report["profile"], "aws");
        report["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["component"] == "moto")
            .and_then(|c| c["pid"].as_i64())
            .expect("moto runs")
    };
    let pid = moto_pid(&state);

    // What `up` created on moto is what terraform/ declares.
    let declared = declared();
    let created: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state.join("moto/resources.json")).unwrap())
            .unwrap();
    for list in ["buckets", "glue_databases", "queues"] {
        assert_eq!(created[list], declared[list], "{list}");
    }
    assert_eq!(
        created["state_machines"][0]["name"],
        declared["state_machines"][0]["name"]
    );

    // A crash seed whose quiet phase runs the nightly: on the stack's moto.
    let out = state.join("aws-crash.json");
    let run = crate::support::lossproof(&[
        "run".as_ref(),
        "tests/inputs/aws/crash.lp".as_ref(),
        "--seeds".as_ref(),
        "1".as_ref(),
        "--state".as_ref(),
        state.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    let shown = text(&run);
    assert_eq!(
        run.status.code(),
        Some(0),
        "PASS on the aws stack:\n{shown}"
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let seed = &record["results"][0];
    assert_eq!(seed["verdict"], "PASS", "{seed:#}");
    assert!(
        shown.contains(
            "lake             ready (Glue catalog, warehouse s3://lossproof-lake/warehouse)"
        ),
        "the run's lake is the aws stack's:\n{shown}"
    );
    assert!(!state.join("lake").exists(), "still no local lake");
    assert_eq!(
        moto_pid(&state),
        pid,
        "the seed's nightly left the stack's moto running"
    );

    drop(guard);
    assert_eq!(
        nightly_processes(""),
        Vec::<String>::new(),
        "down stopped moto"
    );
}

/// `dbt build --full-refresh` (after `--`): every row of both marts is
/// rebuilt from the lake, by that one build.
async fn a_full_refresh_rebuilds_every_row(
    state: &Path,
    run: &Run,
    marts: &Path,
    orders: usize,
    revenue: &str,
) {
    let (output, refreshed) = nightly(state, &run.id, marts, &["--full-refresh"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(refreshed.status, "SUCCEEDED");
    assert_marts_match(marts, orders, revenue).await;
    let build = invocation(marts);
    for mart in ["dim_order_status", "customer_daily_revenue"] {
        let by_build = rows_by_build(&marts.join(mart)).await;
        assert_eq!(
            by_build.keys().collect::<Vec<_>>(),
            [&build],
            "{mart}: every row rebuilt by the full refresh"
        );
    }
}

/// `lossproof nightly` SIGKILLed mid-workflow, while dbt builds the marts
/// (no chance to stop anything): moto, the driver and dbt die with it.
fn a_killed_nightly_leaves_nothing_running(state: &Path, run: &Run, marts: &Path) {
    use std::time::Instant;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lossproof"))
        .args(["nightly", "--run", &run.id, "--state"])
        .arg(state)
        .arg("--marts")
        .arg(marts)
        .current_dir(crate::support::root())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Until the driver runs dbt (the one task that is not lossproof's own,
    // so nothing of lossproof's makes it die).
    let started = Instant::now();
    while !nightly_processes(&run.id)
        .iter()
        .any(|p| p.contains("bin/dbt build"))
    {
        assert!(
            started.elapsed() < Duration::from_mins(2),
            "dbt never started: {:?}",
            nightly_processes(&run.id)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    while !nightly_processes(&run.id).is_empty() {
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "left running after a SIGKILL: {:?}",
            nightly_processes(&run.id)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Command lines of the nightly's processes for `run`: moto server and the
/// driver (`python -c <script>`: their command lines hold the scripts'
/// text), and the tasks (lossproof `compact`/`reconcile` of the run, dbt).
fn nightly_processes(run: &str) -> Vec<String> {
    [
        "from moto.server import main".to_owned(),
        "import boto3".to_owned(),
        "bin/dbt build".to_owned(),
        format!("compact --run {run}"),
        format!("reconcile --run {run}"),
    ]
    .iter()
    .flat_map(|needle| crate::support::processes_mentioning(Path::new(needle)))
    .collect()
}

/// Step 3: two marts in one location read each other's rows, the dbt
/// tests comparing them with the lake fail, at BuildMarts.
fn two_marts_in_one_location_fail(state: &Path, run: &Run, marts: &Path) {
    let shared = format!(
        "{{locations: {{dim_order_status: {}}}}}",
        marts.join("customer_daily_revenue").display()
    );
    let (output, clash) = nightly(state, &run.id, marts, &["--vars", &shared]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert_eq!(
        clash.failed_state.as_deref(),
        Some("BuildMarts"),
        "{clash:?}"
    );
    let cause = clash.cause.clone().unwrap_or_default();
    assert!(
        cause.contains("FAIL") && cause.contains("customer_daily_revenue_matches_lake"),
        "the dbt test comparing the mart with the lake fails: {cause}"
    );
    // Put the dimension back in its own location for what follows.
    std::fs::remove_file(
        marts
            .join("customer_daily_revenue")
            .join("dim_order_status_0.parquet"),
    )
    .unwrap();
}

/// Step 4: a source change the pipeline never saw fails at Reconcile, the
/// alert names the diff, the marts are left as they were.
async fn an_unseen_change_fails_at_reconcile(state: &Path, run: &Run, marts: &Path) {
    let before = mart_files(marts);
    plant_unseen_change(run).await;
    let (output, failed) = nightly(state, &run.id, marts, &[]);
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert_eq!(failed.status, "FAILED");
    assert_eq!(
        failed.failed_state.as_deref(),
        Some("Reconcile"),
        "{failed:?}"
    );
    assert_eq!(failed.error.as_deref(), Some("Diff"));
    assert!(
        failed.attempts.iter().all(|a| a.state != "BuildMarts"),
        "{failed:?}"
    );
    let cause = failed.cause.clone().unwrap_or_default();
    assert!(
        cause.contains("correct") && cause.contains("orders"),
        "the cause is the reconciler's summary: {cause}"
    );
    assert_eq!(failed.alerts.len(), 1, "{failed:?}");
    assert_eq!(failed.alerts[0]["error"]["Error"], "Diff");
    assert!(
        failed.alerts[0]["error"]["Cause"]
            .as_str()
            .is_some_and(|c| c.contains("orders")),
        "the alert says why: {:?}",
        failed.alerts
    );
    assert!(shown.contains("FAILED at Reconcile"), "{shown}");
    assert_eq!(mart_files(marts), before, "the marts were not touched");
}

/// `lossproof nightly` for `run`, its marts in `marts`, extra dbt arguments
/// after `--`; its output and the report it wrote.
fn nightly(state: &Path, run: &str, marts: &Path, dbt: &[&str]) -> (Output, Report) {
    let mut args: Vec<&std::ffi::OsStr> = [
        "nightly",
        "--run",
        run,
        "--state",
        state.to_str().unwrap(),
        "--marts",
        marts.to_str().unwrap(),
        "--timeout-s",
        "600",
    ]
    .into_iter()
    .map(std::ffi::OsStr::new)
    .collect();
    if !dbt.is_empty() {
        args.push("--".as_ref());
        args.extend(dbt.iter().map(std::ffi::OsStr::new));
    }
    let output = crate::support::lossproof(&args);
    let shown = text(&output);
    let written = shown
        .lines()
        .find_map(|l| l.strip_prefix("report: "))
        .unwrap_or_else(|| panic!("nightly names its report: {shown}"));
    let report = serde_json::from_str(&std::fs::read_to_string(written).unwrap()).unwrap();
    (output, report)
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The source's orders: how many, and their total amount (as text).
async fn source_orders(run: &Run) -> (usize, String) {
    let row = run
        .source
        .query_one(
            "SELECT count(*), coalesce(sum(amount), 0)::text FROM orders",
            &[],
        )
        .await
        .unwrap();
    (
        usize::try_from(row.get::<_, i64>(0)).unwrap(),
        row.get::<_, String>(1),
    )
}

/// Each mart's location, read as its readers read it, against the source's
/// orders (the lake reconciled, so the source's figures are the lake's).
async fn assert_marts_match(marts: &Path, orders: usize, revenue: &str) {
    let ctx = SessionContext::new();
    for mart in ["dim_order_status", "customer_daily_revenue"] {
        ctx.register_parquet(
            mart,
            marts.join(mart).to_str().unwrap(),
            ParquetReadOptions::default(),
        )
        .await
        .unwrap();
    }
    let one = |sql: &'static str| {
        let ctx = ctx.clone();
        async move {
            let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
            datafusion::arrow::util::display::array_value_to_string(batches[0].column(0), 0)
                .unwrap()
        }
    };
    assert_eq!(
        one("SELECT count(*) FROM dim_order_status").await,
        orders.to_string()
    );
    assert_eq!(
        one("SELECT CAST(sum(orders) AS BIGINT) FROM customer_daily_revenue").await,
        orders.to_string()
    );
    assert_eq!(
        one("SELECT CAST(sum(revenue) AS VARCHAR) FROM customer_daily_revenue").await,
        revenue
    );
}

/// Rows of the mart at `location` per dbt invocation that last wrote them.
async fn rows_by_build(location: &Path) -> std::collections::BTreeMap<String, usize> {
    let ctx = SessionContext::new();
    ctx.register_parquet(
        "mart",
        location.to_str().unwrap(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    let batches = ctx
        .sql("SELECT built_by, CAST(count(*) AS BIGINT) FROM mart GROUP BY built_by")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut rows = std::collections::BTreeMap::new();
    for batch in &batches {
        for i in 0..batch.num_rows() {
            let build = datafusion::arrow::util::display::array_value_to_string(batch.column(0), i)
                .unwrap();
            let count = datafusion::arrow::util::display::array_value_to_string(batch.column(1), i)
                .unwrap();
            rows.insert(build, count.parse().unwrap());
        }
    }
    rows
}

/// The dbt invocation of the last build (dbt's own run record).
fn invocation(marts: &Path) -> String {
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(marts.join("target/run_results.json")).unwrap(),
    )
    .unwrap();
    results["metadata"]["invocation_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Every Parquet file of the marts with its bytes.
fn mart_files(marts: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for mart in ["dim_order_status", "customer_daily_revenue"] {
        for entry in std::fs::read_dir(marts.join(mart)).unwrap() {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            files.push((path, bytes));
        }
    }
    files.sort();
    files
}

/// Change an order in the source while its table is out of the run's
/// publication: a change logical decoding never sends, so the lake cannot
/// have it.
async fn plant_unseen_change(run: &Run) {
    let publication = &run.names.publication;
    run.source
        .batch_execute(&format!(
            "ALTER PUBLICATION {publication} DROP TABLE orders;
             UPDATE orders SET status = 'planted' WHERE order_id = (SELECT min(order_id) FROM orders);
             ALTER PUBLICATION {publication} ADD TABLE orders;"
        ))
        .await
        .unwrap();
}

/// What terraform/ declares, read by terraform/declared.py (python-hcl2).
fn declared() -> serde_json::Value {
    let python = Tools::from_env().nightly_venv().join("bin/python");
    let output = std::process::Command::new(python)
        .arg(crate::support::root().join("terraform/declared.py"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// What terraform/ declares (read by terraform/declared.py with python-hcl2)
/// is what the nightly created on moto: the queues, the state machine, and
/// its definition, which is terraform/nightly.asl.json with the queue URLs.
fn terraform_declares_what_nightly_created(report: &Report) {
    let root = crate::support::root();
    let declared = declared();
    let names = Names::with_prefix(lossproof_runtime::nightly::DEFAULT_PREFIX);
    let mut queues = vec![names.alerts_queue.clone(), names.tasks_queue.clone()];
    queues.sort();
    assert_eq!(declared["queues"], serde_json::json!(queues));
    assert_eq!(report.resources.queues, queues, "created on moto");
    let machine = &declared["state_machines"][0];
    assert_eq!(machine["name"], names.state_machine.as_str());
    assert_eq!(
        machine["placeholders"],
        serde_json::json!(["alerts_queue_url", "tasks_queue_url"])
    );
    assert_eq!(
        std::fs::read_to_string(
            root.join("terraform")
                .join(machine["definition_file"].as_str().unwrap())
        )
        .unwrap(),
        DEFINITION,
        "Terraform deploys the definition the runtime embeds"
    );
    let created = &report.resources.state_machines;
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0].name, names.state_machine);
    // moto's copy: the same document, the URLs of the queues it made.
    let definition: serde_json::Value = serde_json::from_str(&created[0].definition).unwrap();
    let compact = &definition["States"]["Compact"]["Parameters"]["QueueUrl"];
    let alert = &definition["States"]["Alert"]["Parameters"]["QueueUrl"];
    assert!(
        compact.as_str().unwrap().ends_with(&names.tasks_queue),
        "{compact}"
    );
    assert!(
        alert.as_str().unwrap().ends_with(&names.alerts_queue),
        "{alert}"
    );
    let filled = DEFINITION
        .replace("${tasks_queue_url}", compact.as_str().unwrap())
        .replace("${alerts_queue_url}", alert.as_str().unwrap());
    assert_eq!(
        definition,
        serde_json::from_str::<serde_json::Value>(&filled).unwrap()
    );
}

/// The workflow itself, on moto, with tasks whose outcome the test decides
/// (no stack): a task that loses a race once (`Transient`) is run again and
/// the workflow goes on; a failed Reconcile goes to Alert, whose SQS message
/// and the execution's failure carry the task's own words, and BuildMarts
/// never runs.
#[test]
fn the_workflow_retries_transient_failures_and_alerts_with_the_cause() {
    // Serial with the other nightly test, which checks that no moto server
    // or driver is left running.
    let _serial = crate::support::heavy_test();
    let tools = Tools::from_env();
    let dir = tempfile::tempdir().unwrap();
    let moto = Moto::start(&tools, &dir.path().join("moto.log"), Duration::from_mins(1)).unwrap();
    let once = dir.path().join("lost-once");
    let task = |state: &'static str, script: String, errors: &[(i32, &str)]| {
        Task::new(state, vec!["sh".into(), "-c".into(), script], errors)
    };
    let job = |reconcile_exit: i32| {
        let mut job = Job::on_emulator(
            moto.endpoint(),
            lossproof_runtime::nightly::execution_name("workflow-test"),
            "workflow-test",
            Duration::from_mins(2),
        );
        job.tasks = [
            (
                "compact",
                task(
                    "Compact",
                    format!(
                        "test -f {0} && exit 0; touch {0}; echo lost the race; exit 1",
                        once.display()
                    ),
                    &[(1, "Transient")],
                ),
            ),
            (
                "reconcile",
                task(
                    "Reconcile",
                    format!("echo 'correct    orders    wrong 3'; exit {reconcile_exit}"),
                    &[(1, "Diff"), (2, "Invalid")],
                ),
            ),
            ("build_marts", task("BuildMarts", "echo built".into(), &[])),
        ]
        .into_iter()
        .map(|(name, task)| (name.to_owned(), task))
        .collect();
        job
    };
    let env = [
        ("AWS_ACCESS_KEY_ID".to_owned(), "test".to_owned()),
        ("AWS_SECRET_ACCESS_KEY".to_owned(), "test".to_owned()),
    ];
    let log = dir.path().join("driver.log");

    let report = lossproof_runtime::nightly::drive(&tools, &job(0), &env, &log).unwrap();
    assert_eq!(report.status, "SUCCEEDED", "{report:?}");
    let runs: Vec<(&str, Option<&str>)> = report
        .attempts
        .iter()
        .map(|a| (a.state.as_str(), a.error.as_deref()))
        .collect();
    assert_eq!(
        runs,
        [
            ("Compact", Some("Transient")),
            ("Compact", None),
            ("Reconcile", None),
            ("BuildMarts", None)
        ]
    );
    assert!(report.alerts.is_empty(), "{report:?}");

    let report = lossproof_runtime::nightly::drive(&tools, &job(1), &env, &log).unwrap();
    assert_eq!(report.status, "FAILED", "{report:?}");
    assert_eq!(report.failed_state.as_deref(), Some("Reconcile"));
    assert_eq!(report.error.as_deref(), Some("Diff"));
    // moto drops a failure's cause unless lossproof's wrapper passes it on.
    assert_eq!(
        report.cause.as_deref(),
        Some("correct    orders    wrong 3\n")
    );
    assert_eq!(report.alerts.len(), 1, "{report:?}");
    assert_eq!(
        report.alerts[0]["error"]["Cause"],
        "correct    orders    wrong 3\n"
    );
    assert!(report.attempts.iter().all(|a| a.state != "BuildMarts"));
}

/// The three states ran in order, each succeeding; the consumer is still
/// committing while the nightly runs, so the compaction may lose the race
/// to it (exit 1, `Transient`) and be retried: that is the workflow doing
/// its job, and the only failure allowed here.
fn assert_states_ran_once_or_retried(report: &Report) {
    let mut states: Vec<&str> = Vec::new();
    for attempt in &report.attempts {
        if let Some(error) = &attempt.error {
            assert!(
                attempt.state == "Compact" && error == "Transient",
                "only a compaction that lost the race to a writer is retried: {report:?}"
            );
        }
        if states.last() != Some(&attempt.state.as_str()) {
            states.push(&attempt.state);
        }
    }
    assert_eq!(states, ["Compact", "Reconcile", "BuildMarts"], "{report:?}");
}
