//! The local stack, for real: `PostgreSQL`, the nisshi broker, Kafka Connect
//! with Debezium and the embedded registry, started by `lossproof up`.
//!
//! One test walks the whole life of a stack, because starting one costs
//! seconds: up -> status -> change events (Avro through the registry) ->
//! drained check both ways -> SIGKILL of each component detected and
//! repaired by `up` -> down leaves no process -> a second up works.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use lossproof_runtime::change_event::ChangeOp::{Create, Delete, Read, Update};
use lossproof_runtime::change_event::{self, Cell, ChangeOp, ChangeRecord};
use lossproof_runtime::debezium::{self, CaptureNames, Encoding, NotDrained};
use lossproof_runtime::{Component, ConnectClient, Ports, Stack};
use rdkafka::Message as _;
use rdkafka::consumer::{BaseConsumer, Consumer as _};

pub(crate) fn lossproof(state: &Path, args: &[&str]) -> Output {
    let mut all: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    all.extend([std::ffi::OsStr::new("--state"), state.as_os_str()]);
    crate::support::lossproof(&all)
}

pub(crate) fn ok(output: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "lossproof failed:\n{text}");
    text
}

/// A real local stack of the calling test's own, up and healthy, in a
/// temporary state directory named for `label` (and this process); stopped
/// and its state removed when the returned guard drops.
pub(crate) fn up_own_stack(label: &str) -> (PathBuf, StackGuard) {
    up_own_stack_with(label, &[])
}

/// [`up_own_stack`] with more `up` arguments (`--profile aws`).
pub(crate) fn up_own_stack_with(label: &str, up: &[&str]) -> (PathBuf, StackGuard) {
    let state = std::env::temp_dir().join(format!("lossproof-{label}-{}", std::process::id()));
    let guard = StackGuard(state.clone());
    let mut args = vec!["up"];
    args.extend(up);
    ok(&lossproof(&state, &args));
    (state, guard)
}

/// Stops the stack and removes its state however the test ends.
pub(crate) struct StackGuard(pub PathBuf);

impl Drop for StackGuard {
    fn drop(&mut self) {
        let _ = lossproof(&self.0, &["down", "--purge"]);
    }
}

pub(crate) fn status_json(state: &Path) -> serde_json::Value {
    let output = lossproof(state, &["status", "--json"]);
    serde_json::from_slice(&output.stdout).expect("status --json prints JSON")
}

fn states(state: &Path) -> BTreeMap<String, String> {
    status_json(state)["components"]
        .as_array()
        .expect("components")
        .iter()
        .map(|c| {
            (
                c["component"].as_str().unwrap().to_owned(),
                c["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pid_alive(pid: i32) -> bool {
    lossproof_runtime::process::running(pid)
}

/// Every pid recorded in the state dir, with the pids of their process groups.
fn stack_pids(state: &Path) -> Vec<i32> {
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(state.join("stack.json")).unwrap_or_else(|_| "{}".into()),
    )
    .unwrap();
    let leaders: Vec<i32> = record["processes"]
        .as_object()
        .map(|m| {
            m.values()
                .filter_map(|p| p["pid"].as_i64())
                .map(|p| p as i32)
                .collect()
        })
        .unwrap_or_default();
    let mut pids = leaders.clone();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(candidate) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if lossproof_runtime::process::pgid(candidate).is_some_and(|g| leaders.contains(&g)) {
            pids.push(candidate);
        }
    }
    pids
}

#[test]
fn local_stack_end_to_end() {
    let _serial = crate::support::heavy_test();
    let state = std::env::temp_dir().join(format!("lossproof-stack-{}", std::process::id()));
    let _guard = StackGuard(state.clone());

    // up: every component healthy, shown by status.
    let up = ok(&lossproof(&state, &["up"]));
    assert!(up.contains("stack healthy"), "{up}");
    let all = states(&state);
    assert_eq!(all.len(), 6, "{all:?}");
    assert!(all.values().all(|s| s == "healthy"), "{all:?}");
    let verbose = ok(&lossproof(&state, &["status", "--verbose"]));
    assert!(
        verbose.contains("STARTUP") && verbose.contains("RSS"),
        "{verbose}"
    );
    assert!(stack_pids(&state).iter().all(|p| pid_alive(*p)));

    let ports: Ports = Stack::open(&state).unwrap().ports().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(change_events_and_drain(ports));
    runtime.block_on(workload_under_capture(ports));

    // A component SIGKILLed is seen as down within seconds; `up` repairs it.
    let stack = Stack::open(&state).unwrap();
    for component in [
        Component::Connect,
        Component::Netproxy,
        Component::Registry,
        Component::Broker,
        Component::BrokerPostgres,
        Component::SourcePostgres,
    ] {
        let process = stack.process(component).unwrap().expect("recorded");
        assert!(process.signal(nix::sys::signal::Signal::SIGKILL));
        let seen = Instant::now();
        loop {
            if states(&state)[component.name()] == "down" {
                break;
            }
            assert!(
                seen.elapsed() < Duration::from_secs(5),
                "{component} still not seen as down"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let again = ok(&lossproof(&state, &["up"]));
        assert!(
            again.contains(&format!("{} starting", component.name()))
                || again.contains(component.name()),
            "{again}"
        );
        let all = states(&state);
        assert!(
            all.values().all(|s| s == "healthy"),
            "after restarting {component}: {all:?}"
        );
    }

    // down: no process of the stack is left.
    let pids = stack_pids(&state);
    assert!(!pids.is_empty());
    ok(&lossproof(&state, &["down"]));
    std::thread::sleep(Duration::from_millis(300));
    let left: Vec<i32> = pids.into_iter().filter(|p| pid_alive(*p)).collect();
    assert!(left.is_empty(), "still running after down: {left:?}");
    assert!(states(&state).values().all(|s| s == "down"));

    // Ctrl-C in the middle of `up` stops what it started: nothing is left.
    interrupted_up_leaves_nothing(&state);
    // SIGKILL in the middle of `up` cannot clean up; the next `up` must,
    // and leave no orphan of the killed one running.
    killed_up_is_repaired_by_the_next_up(&state);

    // Another up on a healthy stack changes nothing, on the same ports and data.
    let again = ok(&lossproof(&state, &["up"]));
    assert!(again.contains("already running"), "{again}");
    assert!(states(&state).values().all(|s| s == "healthy"));
    assert_eq!(Stack::open(&state).unwrap().ports().unwrap(), ports);
}

/// Rows changed in the source arrive as Debezium events (Avro through the
/// embedded registry) with `source.lsn`, a tombstone after each delete; the
/// drained check holds once the slot caught up, and is refused, with the
/// reason, when the connector stopped before the last writes.
async fn change_events_and_drain(ports: Ports) {
    let source = lossproof_runtime::postgres::connect(
        ports.source_postgres,
        lossproof_runtime::stack::SOURCE_DATABASE,
    )
    .await
    .unwrap();
    source
        .batch_execute(
            "DROP TABLE IF EXISTS chain; \
             CREATE TABLE chain (id int PRIMARY KEY, name text, amount numeric(10,2)); \
             INSERT INTO chain VALUES (1, 'one', 1.50), (2, 'two', 2.00), (3, 'three', 3.25);",
        )
        .await
        .unwrap();
    let connect = ConnectClient::local(ports.connect);
    let names = CaptureNames::for_run(&format!("test{}", std::process::id()));
    let config = debezium::config(
        &names,
        &endpoints(ports),
        lossproof_runtime::stack::SOURCE_DATABASE,
        &["public.chain"],
        Encoding::Avro,
    );
    debezium::start(&connect, &names, &config, &source, Duration::from_mins(1))
        .await
        .unwrap();
    source
        .batch_execute("UPDATE chain SET amount = 9.99 WHERE id = 1; DELETE FROM chain WHERE id = 2; INSERT INTO chain VALUES (4, 'four', 4.00);")
        .await
        .unwrap();
    let target = debezium::current_lsn(&source).await.unwrap();
    let drained =
        debezium::wait_drained(&connect, &names, &source, target, Duration::from_secs(30))
            .await
            .unwrap();
    assert_eq!(drained, Ok(()), "drained after the connector caught up");

    let events = consume(
        ports,
        &names.topic("public", "chain"),
        7,
        Duration::from_secs(30),
    )
    .await;
    assert_chain_events(&events);

    // NOT drained, with the reason: the connector stopped before the last writes.
    connect.stop(&names.connector).await.unwrap();
    source
        .batch_execute("INSERT INTO chain VALUES (5, 'five', 5.00);")
        .await
        .unwrap();
    let target = debezium::current_lsn(&source).await.unwrap();
    let refused = debezium::wait_drained(&connect, &names, &source, target, Duration::from_secs(3))
        .await
        .unwrap();
    assert!(
        matches!(refused, Err(NotDrained::ConnectorNotRunning(ref s)) if s.contains("STOPPED")),
        "{refused:?}"
    );

    debezium::remove(&connect, &names, &source).await.unwrap();
    let slots = source
        .query(
            "SELECT 1 FROM pg_replication_slots WHERE slot_name = $1",
            &[&names.slot],
        )
        .await
        .unwrap();
    assert!(slots.is_empty(), "removing the connector drops its slot");
}

/// The `chain` table's events: three snapshot reads, the update (with its
/// exact decimal), the delete, its tombstone, the insert; every change with
/// `source.lsn`.
fn assert_chain_events(events: &[ChangeRecord]) {
    let ops: Vec<Option<ChangeOp>> = events
        .iter()
        .map(|e| match e {
            ChangeRecord::Change(change) => Some(change.op),
            ChangeRecord::Tombstone { .. } => None,
        })
        .collect();
    assert_eq!(
        ops,
        [
            Some(Read),
            Some(Read),
            Some(Read),
            Some(Update),
            Some(Delete),
            None,
            Some(Create)
        ],
        "snapshot reads, the update, the delete, its tombstone, the insert"
    );
    for event in events {
        if let ChangeRecord::Change(change) = event {
            assert!(change.lsn > 0, "every event carries source.lsn: {change:?}");
            assert_eq!(change.table, "chain");
        }
    }
    let ChangeRecord::Change(update) = &events[3] else {
        unreachable!()
    };
    let after = update.after.as_ref().expect("an update has an after image");
    assert_eq!(after["amount"], Cell::Decimal("9.99".into()), "{update:?}");
    assert_eq!(update.key["id"], Cell::Int(1));
    assert_eq!(
        events[5],
        ChangeRecord::Tombstone {
            key: [("id".to_owned(), Cell::Int(2))].into()
        }
    );
}

/// Read `count` records from the start of `topic` (bounded) and decode them
/// with the runtime's decoder, fetching writer schemas from the registry.
async fn consume(ports: Ports, topic: &str, count: usize, limit: Duration) -> Vec<ChangeRecord> {
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", format!("127.0.0.1:{}", ports.broker))
        .set("group.id", format!("lossproof-test-{}", std::process::id()))
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .expect("kafka consumer");
    consumer.subscribe(&[topic]).unwrap();
    let mut schemas =
        change_event::Schemas::new(&lossproof_runtime::profile::Http::plain(ports.registry));
    let mut records = Vec::new();
    let deadline = Instant::now() + limit;
    while records.len() < count && Instant::now() < deadline {
        let Some(message) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        let message = message.expect("kafka message");
        schemas
            .fetch_for(message.key(), message.payload())
            .await
            .unwrap();
        let lookup = |id: u32| schemas.lookup(id);
        records.push(
            change_event::decode_avro(message.key(), message.payload(), &lookup).expect("decodes"),
        );
    }
    records
}

/// The seeded orders workload, from 4 connections, under Debezium capture:
/// every kind of operation happens, nothing fails, and the stream drains to
/// the workload's final LSN. The tables are exactly the vocabulary's.
async fn workload_under_capture(ports: Ports) {
    use lossproof_executor::workload;
    let database = lossproof_runtime::stack::SOURCE_DATABASE;
    let source = lossproof_runtime::postgres::connect(ports.source_postgres, database)
        .await
        .unwrap();
    let orders = lossproof_vocabulary::workloads::orders();
    source
        .batch_execute(&workload::ddl(orders, false))
        .await
        .unwrap();
    for table in &orders.tables {
        let columns: Vec<(String, lossproof_lang::ColumnType)> = source
            .query(
                "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute \
                 WHERE attrelid = $1::text::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                &[&table.name],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| {
                let printed: String = r.get(1);
                let parsed = lossproof_lang::ColumnType::parse(&printed)
                    .unwrap_or_else(|e| panic!("PostgreSQL's `{printed}`: {e}"));
                (r.get(0), parsed)
            })
            .collect();
        let expected: Vec<(String, lossproof_lang::ColumnType)> = table
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.sql_type.clone()))
            .collect();
        assert_eq!(
            columns, expected,
            "table {} differs from the vocabulary",
            table.name
        );
    }

    let connect = ConnectClient::local(ports.connect);
    let names = CaptureNames::for_run(&format!("workload{}", std::process::id()));
    let tables = ["public.customers", "public.orders", "public.order_items"];
    let config = debezium::config(&names, &endpoints(ports), database, &tables, Encoding::Avro);
    debezium::start(&connect, &names, &config, &source, Duration::from_mins(1))
        .await
        .unwrap();

    let plan = crate::support::plan(
        "workload orders rate 400/s connections 4 customers 20\nunder load 3s < >",
    )
    .workload;
    let report = workload::run(
        &plan,
        7,
        &lossproof_runtime::profile::Source::local(ports.source_postgres),
        database,
        Duration::from_secs(3),
    )
    .await
    .unwrap();
    assert_eq!(report.failed, 0, "{report:?}");
    assert!(report.ops > 300, "{report:?}");
    for kind in ["insert", "update", "delete", "cascade"] {
        assert!(
            report.by_kind.get(kind).copied().unwrap_or(0) > 0,
            "no {kind}: {report:?}"
        );
    }
    let items: i64 = source
        .query_one("SELECT count(*) FROM order_items", &[])
        .await
        .unwrap()
        .get(0);
    assert!(items > 0);
    let drained = debezium::wait_drained(
        &connect,
        &names,
        &source,
        report.final_lsn,
        Duration::from_mins(1),
    )
    .await
    .unwrap();
    assert_eq!(
        drained,
        Ok(()),
        "the stream drains to the workload's final LSN"
    );
    debezium::remove(&connect, &names, &source).await.unwrap();
}

fn killed_up_is_repaired_by_the_next_up(state: &Path) {
    let mut child = up_until_connect_starts(state);
    let before = stack_pids(state);
    assert!(before.len() >= 4, "started before the kill: {before:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    ok(&lossproof(state, &["up"]));
    assert!(states(state).values().all(|s| s == "healthy"));
    // Whatever the killed `up` left running is either reused by the new
    // stack (recorded in stack.json) or gone: no orphans.
    let now = stack_pids(state);
    let orphans: Vec<i32> = before
        .into_iter()
        .filter(|p| pid_alive(*p) && !now.contains(p))
        .collect();
    assert!(
        orphans.is_empty(),
        "left running by the killed up, unknown to the stack: {orphans:?}"
    );
}

/// Start `lossproof up` and return once it has started Kafka Connect (the
/// other components are running by then).
fn up_until_connect_starts(state: &Path) -> std::process::Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lossproof"))
        .args(["up", "--state"])
        .arg(state)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start lossproof up");
    crate::support::Lines::of(&mut child).until(
        &mut child,
        Duration::from_mins(1),
        "up never started connect",
        |line| line.contains("connect") && line.contains("starting"),
    );
    child
}

/// Start `up`, send SIGINT while Kafka Connect is starting, and check that
/// every process it had started is gone when it exits.
fn interrupted_up_leaves_nothing(state: &Path) {
    let mut child = up_until_connect_starts(state);
    let pids = stack_pids(state);
    assert!(pids.len() >= 4, "started before the interrupt: {pids:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let exited = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            exited.elapsed() < Duration::from_secs(40),
            "up did not exit after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!status.success(), "an interrupted up fails");
    std::thread::sleep(Duration::from_millis(300));
    let left: Vec<i32> = pids.into_iter().filter(|p| pid_alive(*p)).collect();
    assert!(
        left.is_empty(),
        "still running after an interrupted up: {left:?}"
    );
}

/// The local stack's endpoints for the connector's configuration (which
/// reads no lake).
fn endpoints(ports: Ports) -> lossproof_runtime::Endpoints {
    lossproof_runtime::Endpoints::local(ports, Path::new("/nonexistent-lake"))
}

/// A real Iceberg REST catalog on a loopback port for as long as this value
/// lives: lakana-server (`.ci/test` installs it), its catalog in a sqlite
/// file and its warehouse a folder under `dir`, one environment (its REST
/// `prefix`) and one bearer token.
pub(crate) struct RestCatalogServer {
    _process: lossproof_runtime::supervisor::Supervised,
    log: PathBuf,
    pub uri: String,
    pub prefix: String,
    pub token: String,
}

impl RestCatalogServer {
    /// Migrate its database, start it, wait (up to a minute) until it
    /// answers, and create the environment `dev` on a file warehouse.
    pub(crate) async fn start(dir: &Path) -> Self {
        let venv = lossproof_runtime::tools::Tools::from_env().lakana_venv();
        let program = venv.join("bin/lakana-server");
        assert!(
            venv.join(".complete").is_file(),
            "lakana-server is not installed at {}: `bash .ci/test` installs it",
            venv.display()
        );
        std::fs::create_dir_all(dir.join("warehouse")).unwrap();
        let dir = std::fs::canonicalize(dir).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let (key_id, secret) = ("0123456789abcdef", "lossproof-test-secret");
        let env = [
            (
                "LAKANA_DATABASE__URL",
                format!("sqlite:///{}", dir.join("lakana.db").display()),
            ),
            ("LAKANA_BOOTSTRAP_PAT_KEY_ID", key_id.to_owned()),
            ("LAKANA_BOOTSTRAP_PAT_SECRET", secret.to_owned()),
            ("LAKANA_HOST", "127.0.0.1".to_owned()),
            ("LAKANA_PORT", port.to_string()),
        ];
        let migrated = Command::new("timeout")
            .arg("120")
            .arg(&program)
            .arg("migrate")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run lakana-server migrate");
        assert!(
            migrated.status.success(),
            "lakana-server migrate: {}",
            String::from_utf8_lossy(&migrated.stderr)
        );
        let log = dir.join("lakana.log");
        let mut process = lossproof_runtime::supervisor::Supervised::new(
            "lakana-server",
            program,
            Vec::new(),
            log.clone(),
        );
        for (k, v) in &env {
            process = process.env(k, v);
        }
        process.start().expect("start lakana-server");
        let server = Self {
            _process: process,
            log,
            uri: format!("http://127.0.0.1:{port}"),
            prefix: "dev".to_owned(),
            token: format!("lakana_pat_{key_id}_{secret}"),
        };
        let client = reqwest::Client::new();
        let started = Instant::now();
        loop {
            let answered = client
                .post(format!("{}/api/v1/environments", server.uri))
                .bearer_auth(&server.token)
                .json(&serde_json::json!({
                    "name": server.prefix,
                    "storage": {"scheme": "file", "root": format!("file://{}", dir.join("warehouse").display())},
                }))
                .timeout(Duration::from_secs(10))
                .send()
                .await;
            match answered {
                Ok(response) if response.status().is_success() => break server,
                Ok(response) => panic!(
                    "lakana-server refused the environment: {} {}\n{}",
                    response.status(),
                    response.text().await.unwrap_or_default(),
                    server.log()
                ),
                Err(e) if started.elapsed() > Duration::from_mins(1) => {
                    panic!(
                        "lakana-server did not answer in a minute: {e}\n{}",
                        server.log()
                    )
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// The server's output so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}
