//! The correct consumer on the real pipeline (PostgreSQL, Debezium, the
//! broker, the registry, `lossproof consumer correct` writing Iceberg), one
//! stack, one run per behaviour the issue names, every run gated and scored
//! by the reconciler:
//!
//! 1. SIGKILLed at each step boundary (failpoints after the data files,
//!    after the commit, before the group mirror) and at random instants
//!    under load, with its consumer group rewound behind its back: it
//!    resumes from the lake's offsets and the lake is exact; then rebuilt
//!    from the beginning and swapped in, still exact;
//! 2. a re-sent old insert after a delete stays deleted, a re-snapshot by a
//!    new connector and a re-sent snapshot read after a newer update keep
//!    the newer row;
//! 3. widen and add a column under load, then drop one: the lake follows, exact, and
//!    pyiceberg reads exactly the source's rows; a scale change stops it
//!    (exit 3) naming the column and both types;
//! 4. junk goes to `dead_letters`, once, across a SIGKILL; a racing writer
//!    (a compaction of the same table) forces retries and nothing is lost
//!    or doubled;
//! 5. it refuses to start on a table with rows but no stored offsets, and
//!    on stored offsets past the topic's end;
//! 6. scored while the load runs (`lossproof reconcile --live`): no damage,
//!    the keys changed after the source's snapshot `in-flight`.

use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use lossproof_consumers::correct::state::{STATE_TABLE, dead_letters_batch};
use lossproof_executor::workload;
use lossproof_runtime::change_event::{self, ChangeOp, ChangeRecord, Schemas};
use lossproof_runtime::debezium::{self, CaptureNames};
use lossproof_runtime::lake::Commit;
use lossproof_runtime::reconcile::{self, ConsumerLake, Reconciliation, gate};
use lossproof_runtime::{Lake, Ports, Stack};
use rdkafka::Message as _;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer as _};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};

use crate::careless::{Consumer, Run, counts, show, workload_plan};
use crate::stack::up_own_stack;

const DATABASE: &str = lossproof_runtime::stack::SOURCE_DATABASE;
pub(crate) const QUICK: &[&str] = &["--batch", "100", "--linger-ms", "100"];

fn orders() -> &'static lossproof_lang::vocabulary::WorkloadSig {
    lossproof_vocabulary::workloads::orders()
}

#[test]
fn correct_consumer_on_the_real_pipeline() {
    let _serial = crate::support::heavy_test();
    let (state, _guard) = up_own_stack("correct");
    let ports = Stack::open(&state).unwrap().ports().unwrap();
    let runtime = crate::lake::tokio();
    runtime.block_on(async {
        let crashed = crashes_at_every_step_then_rebuild(&state, ports).await;
        refuses_what_it_cannot_trust(&state, &crashed).await;
        crashed.finish().await;
        deletes_and_rereads_hold(&state, ports).await;
        schema_follows_the_source(&state, ports).await;
        junk_and_a_racing_writer(&state, ports).await;
        reconciles_a_live_source(&state, ports).await;
    });
}

/// Orders written by the transaction [`resumed_inside_a_transaction`] stops
/// the connector inside.
const RESUMED_ORDERS: i64 = 150_000;

/// A connector deleted and created again while it streams a large source
/// transaction resumes inside it, and Debezium (3.1) begins the
/// transaction again: a second BEGIN with the same id, the events after the
/// resumption numbered from 1, an END that counts only those, so the first
/// instance's events can satisfy its counts before the rest is read
/// (`recreate-connector.lp`, seeds 3 and 11 on 2026-12-07: part of a
/// transaction committed without the rest). The correct consumer commits
/// the transaction whole: each table's rows of it in one snapshot.
#[test]
fn resumed_inside_a_transaction() {
    let _serial = crate::support::heavy_test();
    let (state, _guard) = up_own_stack("resumed");
    let ports = Stack::open(&state).unwrap().ports().unwrap();
    crate::lake::tokio().block_on(async {
        let run = Run::start(&state, ports, "resumed").await;
        // An order and its first item, 150,000 orders, its
        // second item, the customer updated: every table before and after
        // the cut.
        let n = RESUMED_ORDERS;
        run.source
            .batch_execute(&format!(
                "BEGIN;
                 INSERT INTO customers (customer_id, name) VALUES (1, 'before');
                 INSERT INTO orders (order_id, customer_id) VALUES (1, 1);
                 INSERT INTO order_items (order_id, line_no) VALUES (1, 1);
                 INSERT INTO orders (order_id, customer_id)
                     SELECT g, 1 FROM generate_series(2, {n}) g;
                 INSERT INTO order_items (order_id, line_no) VALUES (1, 2);
                 UPDATE customers SET name = 'after' WHERE customer_id = 1;
                 COMMIT;"
            ))
            .await
            .unwrap();
        let topics = run.topics();
        let orders_topic = topics.iter().find(|t| t.ends_with(".orders")).unwrap();
        let client = reader(&run);
        let sent = || {
            client
                .fetch_watermarks(orders_topic, 0, Duration::from_secs(5))
                .map_or(0, |(_, high)| high)
        };
        // Stop the connector inside it, three fifths of its orders sent:
        // the first instance's events then meet every count of the second
        // one's END.
        let deadline = Instant::now() + Duration::from_mins(1);
        while sent() < n * 3 / 5 {
            assert!(
                Instant::now() < deadline,
                "{} orders sent in a minute",
                sent()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        run.connect.delete(&run.names.connector).await.unwrap();
        let limit = Duration::from_mins(1);
        debezium::start(&run.connect, &run.names, &run.config, &run.source, limit)
            .await
            .unwrap();
        // Read from a backlog, as a consumer restarted behind its topics
        // reads (one of the consumer's fetches reads at most 64 KiB of a
        // partition): the END is read long before the orders it counts.
        let deadline = Instant::now() + Duration::from_mins(3);
        while sent() < n {
            assert!(
                Instant::now() < deadline,
                "{} orders sent in 3 minutes",
                sent()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let consumer = Consumer::spawn_kind(&state, &run.id, "correct", QUICK);
        gate_correct(&run, &run.names, &consumer, Duration::from_mins(5)).await;

        // What Debezium sent: the transaction begun twice, its END counting
        // the orders after the resumption only.
        let (begun, orders_counted) = transaction_markers(&run).await;
        assert_eq!(
            begun.values().filter(|n| **n == 2).count(),
            1,
            "one transaction begun twice (else the connector was not stopped inside it): {begun:?}"
        );
        let counted = orders_counted.unwrap();
        assert!(
            counted < u64::try_from(n).unwrap(),
            "its END counts the orders sent after the resumption only: {counted}"
        );

        // What the correct consumer committed: each table's rows of the
        // transaction in one snapshot.
        let lake = Lake::open(&run.state).await.unwrap();
        for (table, rows) in [("customers", 1), ("orders", n), ("order_items", 2)] {
            assert_eq!(
                added_records(&lake, &run, table).await,
                [rows],
                "{table}: the transaction in one commit; the consumer's log:\n{}",
                consumer.log()
            );
        }
        run.finish().await;
    });
}

/// A connector's initial snapshot larger than the correct consumer holds
/// (`--max-held`; a preload of a million rows at the default) is committed
/// in parts on a branch readers of the lake do not see, and published on
/// `main` whole, every table in one catalog commit. A consumer killed
/// between two parts starts again from `main`: the parts staged are
/// dropped and read again.
#[test]
fn a_snapshot_too_large_to_hold_is_published_whole() {
    let _serial = crate::support::heavy_test();
    let (state, _guard) = up_own_stack("staged");
    let ports = Stack::open(&state).unwrap().ports().unwrap();
    crate::lake::tokio().block_on(async {
        let how = workload::Capture {
            preload: Some((20_000, 1)),
            ..workload::Capture::plain(Duration::from_mins(1))
        };
        let run = Run::start_with(&state, ports, "staged", how).await;
        let args = ["--batch", "500", "--linger-ms", "100", "--max-held", "5000"];
        let mut first = Consumer::spawn_kind(&state, &run.id, "correct", &args);
        let lake = Lake::open(&run.state).await.unwrap();
        let ident = |table: &str| {
            iceberg::TableIdent::new(iceberg::NamespaceIdent::new(namespace(&run)), table.into())
        };
        let load = |table: &str| {
            let ident = ident(table);
            let lake = &lake;
            async move {
                iceberg::Catalog::load_table(lake.catalog(), &ident)
                    .await
                    .ok()
            }
        };
        // Killed once a part was staged, before the last.
        let deadline = Instant::now() + Duration::from_mins(2);
        loop {
            let state_table = load(lossproof_consumers::correct::state::STATE_TABLE).await;
            if state_table
                .as_ref()
                .is_some_and(lossproof_consumers::correct::state::has_staged)
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no part staged in 2 minutes; the consumer's log:\n{}",
                first.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        first.sigkill();
        let orders_table = load("orders").await.unwrap();
        assert_eq!(
            lossproof_consumers::correct::state::live_rows(&orders_table),
            0,
            "readers see none of a part"
        );
        let consumer = Consumer::spawn_kind(&state, &run.id, "correct", &args);
        gate_correct(&run, &run.names, &consumer, Duration::from_mins(5)).await;
        let log = consumer.log();
        assert!(
            log.contains("never published dropped") && log.contains("published with it"),
            "the restart dropped the staged parts and published the snapshot; its log:\n{log}"
        );
        // Every table's first snapshot on main adds all of its rows: the
        // parts are not in main's history.
        for table in orders().table_names() {
            let loaded = load(table).await.unwrap();
            assert!(!lossproof_consumers::correct::state::has_staged(&loaded));
            let history = lossproof_runtime::lake::history::since(&loaded, -1).unwrap();
            let first = loaded.metadata().snapshot_by_id(history[0]).unwrap();
            let count: i64 = run
                .source
                .query_one(&format!("SELECT count(*) FROM {table}"), &[])
                .await
                .unwrap()
                .get(0);
            assert_eq!(
                first.summary().additional_properties["added-records"],
                count.to_string(),
                "{table}: the snapshot published whole, in main's first snapshot"
            );
        }
        assert_exact(&reconcile_correct(&run).await, "a snapshot staged in parts");
        run.finish().await;
    });
}

/// The transaction topic: how many BEGINs each transaction got, and the
/// last END's count of `public.orders` events.
async fn transaction_markers(run: &Run) -> (std::collections::HashMap<String, u32>, Option<u64>) {
    let mut schemas = Schemas::new(&lossproof_runtime::profile::Http::plain(run.ports.registry));
    let mut begun = std::collections::HashMap::<String, u32>::new();
    let mut orders_counted = None;
    for (_, value) in raw_records(run, &run.names.transaction_topic()) {
        schemas.fetch_for(None, value.as_deref()).await.unwrap();
        match change_event::decode_transaction(value.as_deref(), &|id| schemas.lookup(id)) {
            Ok(change_event::TxMarker::Begin { id, .. }) => *begun.entry(id).or_default() += 1,
            Ok(change_event::TxMarker::End { counts, .. }) => {
                if let Some((_, count)) = counts.iter().find(|(t, _)| t == "public.orders") {
                    orders_counted = Some(*count);
                }
            }
            Err(e) => panic!("a transaction record: {e}"),
        }
    }
    (begun, orders_counted)
}

/// The records each snapshot of the correct consumer's `table` added,
/// oldest first, snapshots that added none left out.
async fn added_records(lake: &Lake, run: &Run, table: &str) -> Vec<i64> {
    let ident =
        iceberg::TableIdent::new(iceberg::NamespaceIdent::new(namespace(run)), table.into());
    let loaded = iceberg::Catalog::load_table(lake.catalog(), &ident)
        .await
        .unwrap();
    loaded
        .metadata()
        .snapshots()
        .filter_map(|s| {
            s.summary()
                .additional_properties
                .get("added-records")?
                .parse()
                .ok()
        })
        .filter(|added| *added > 0)
        .collect()
}

/// Start the workload in the background (seeded, `seconds` long).
fn load(run: &Run, seed: u64, seconds: u64) -> tokio::task::JoinHandle<workload::WorkloadReport> {
    let source = lossproof_runtime::profile::Source::local(run.ports.source_postgres);
    tokio::spawn(async move {
        workload::run(
            &workload_plan(),
            seed,
            &source,
            DATABASE,
            Duration::from_secs(seconds),
        )
        .await
        .unwrap()
    })
}

fn namespace(run: &Run) -> String {
    lossproof_consumers::namespace("correct", &run.names)
}

/// The gate for the correct consumer: its group mirror AND the offsets its
/// lake stores at the end of every topic.
async fn gate_correct(run: &Run, names: &CaptureNames, consumer: &Consumer, limit: Duration) {
    let final_lsn = debezium::current_lsn(&run.source).await.unwrap();
    let positions = lossproof_executor::under_test::positions(
        &["correct".to_owned()],
        &[],
        &run.names,
        orders(),
    );
    let lake = Lake::open(&run.state).await.unwrap();
    let gated = gate::wait_scoreable(
        &run.connect,
        names,
        &run.source,
        final_lsn,
        &lossproof_runtime::profile::Kafka::plain(run.ports.broker),
        &positions,
        Some(&lake),
        limit,
    )
    .await;
    assert_eq!(
        gated,
        Ok(()),
        "drained: the lake's offsets are at every topic's end; the consumer's log:\n{}",
        consumer.log()
    );
}

async fn reconcile_correct(run: &Run) -> Reconciliation {
    let lake = Lake::open(&run.state).await.unwrap();
    let correct = ConsumerLake {
        changelog: false,
        applied: None,
        consumer: "correct".into(),
        namespace: namespace(run),
        views: std::collections::HashMap::new(),
    };
    let tables: Vec<&str> = orders().table_names();
    let scored = reconcile::reconcile(
        &run.source,
        &lake,
        &tables,
        &[correct],
        reconcile::RowTables::Skip,
    )
    .await
    .unwrap();
    assert_eq!(scored.in_memory, [], "compared in memory instead of merged");
    scored
}

fn assert_exact(scored: &Reconciliation, what: &str) {
    let wrong = scored.wrong_rows("correct");
    let compared: u64 = scored.summary.iter().map(|s| s.counts.compared).sum();
    eprintln!("correct consumer, {what}: {}", show(scored));
    assert!(compared > 0, "{what}: rows were compared");
    assert_eq!(wrong, 0, "{what}: the lake is exact: {}", show(scored));
}

/// Wait (bounded) for a consumer to exit on its own.
fn wait_exit(consumer: &mut Consumer, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = consumer.child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the consumer did not exit within {limit:?}\n{}",
            consumer.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGKILLed at each step boundary, then at random instants under load
/// with its consumer group rewound behind its back; the key index checked
/// at each start.
async fn killed_at_each_step(state: &Path, run: &Run) {
    let mut starts = Vec::new();
    for failpoint in [
        "after-files:2",
        "after-commit:2",
        "before-mirror:2",
        "index-first:2",
    ] {
        let mut consumer = Consumer::spawn_kind(
            state,
            &run.id,
            "correct",
            &[QUICK, &["--failpoint", failpoint]].concat(),
        );
        let status = wait_exit(&mut consumer, Duration::from_mins(1));
        assert_eq!(
            status.signal(),
            Some(9),
            "{failpoint}: killed at the step\n{}",
            consumer.log()
        );
        assert!(consumer.log().contains("failpoint"), "{}", consumer.log());
        starts.push(consumer.log());
    }
    // The key index is a cache of the lake, checked at every start: killed
    // after its files (nothing committed), the index is in step and the
    // next start reads nothing; killed after the commit and before the
    // index followed, the next start catches up on what that commit added;
    // an index ahead of the lake (updated, the commit never made) is
    // rebuilt from the lake by the next start (checked below).
    // The log file is shared by the consumers of a run: the newest line.
    let key_index = |log: &str| {
        log.lines()
            .rfind(|l| l.contains("key index"))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        key_index(&starts[1]).contains("in step with the lake: nothing read"),
        "{}",
        starts[1]
    );
    assert!(
        key_index(&starts[2]).contains("caught up"),
        "after a kill between the commit and the index update: {}",
        starts[2]
    );
    assert!(
        key_index(&starts[3]).contains("nothing read"),
        "{}",
        starts[3]
    );
    // Kills at random instants, and the group rewound to 0 behind its back:
    // it must resume from the lake, never from the group.
    // Each kill lands while it consumes: after its start-up line and its
    // next batch (a kill during start-up proves nothing).
    for round in 0..3 {
        let mut consumer = Consumer::spawn_kind(state, &run.id, "correct", QUICK);
        let batches = |log: &str| log.matches("correct: batch ").count();
        let before = batches(&consumer.log());
        let deadline = Instant::now() + Duration::from_secs(30);
        while batches(&consumer.log()) == before && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if round == 0 {
            let log = consumer.log();
            assert!(
                key_index(&log).contains("rebuilt from the lake")
                    && key_index(&log).contains("ahead of the lake"),
                "an index ahead of the lake is rebuilt, never trusted: {log}"
            );
        }
        tokio::time::sleep(Duration::from_millis(100 * round)).await;
        consumer.sigkill();
        rewind_group(run);
    }
}

async fn crashes_at_every_step_then_rebuild(state: &Path, ports: Ports) -> Run {
    let run = Run::start(state, ports, "crash").await;
    let workload = load(&run, 21, 10);
    killed_at_each_step(state, &run).await;
    let report = workload.await.unwrap();
    assert_eq!(report.failed, 0);
    let mut consumer = Consumer::spawn_kind(state, &run.id, "correct", QUICK);
    gate_correct(&run, &run.names, &consumer, Duration::from_mins(1)).await;
    consumer.stop();
    let log = consumer.log();
    let resumed: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("resuming from the lake's offsets"))
        .collect();
    assert!(resumed.len() >= 7, "{log}");
    assert!(
        resumed.iter().skip(3).all(|l| !l.contains("(none")),
        "after the first commits every start resumes from stored offsets, whatever the group says: {resumed:#?}"
    );
    assert_exact(
        &reconcile_correct(&run).await,
        "killed at each step and at random under load",
    );

    // Rebuild from the beginning into new tables, swapped in at once.
    let lake = Lake::open(state).await.unwrap();
    let ident = iceberg::TableIdent::new(
        iceberg::NamespaceIdent::new(namespace(&run)),
        "orders".into(),
    );
    let before = iceberg::Catalog::load_table(lake.catalog(), &ident)
        .await
        .unwrap();
    let mut rebuild = Consumer::spawn_kind(state, &run.id, "correct", &["--rebuild"]);
    let status = wait_exit(&mut rebuild, Duration::from_mins(2));
    assert!(status.success(), "rebuild: {status}\n{}", rebuild.log());
    let after = iceberg::Catalog::load_table(lake.catalog(), &ident)
        .await
        .unwrap();
    assert_ne!(before.metadata_location(), after.metadata_location());
    assert!(
        after
            .metadata_location()
            .unwrap_or_default()
            .contains("_lp_rebuild_orders"),
        "readers now see the rebuilt table: {:?}",
        after.metadata_location()
    );
    assert_exact(
        &reconcile_correct(&run).await,
        "rebuilt from the beginning of the topics",
    );
    // And it carries on from the rebuilt lake's offsets.
    let mut consumer = Consumer::spawn_kind(state, &run.id, "correct", QUICK);
    run.source
        .batch_execute("UPDATE orders SET note = 'after the rebuild' WHERE order_id IN (SELECT order_id FROM orders ORDER BY 1 LIMIT 3)")
        .await
        .unwrap();
    gate_correct(&run, &run.names, &consumer, Duration::from_mins(1)).await;
    consumer.stop();
    assert_exact(
        &reconcile_correct(&run).await,
        "after the rebuild, consuming again",
    );
    run
}

/// Commit offset 0 for every topic to the correct consumer's group.
fn rewind_group(run: &Run) {
    let client: BaseConsumer = rdkafka::ClientConfig::new()
        .set(
            "bootstrap.servers",
            format!("127.0.0.1:{}", run.ports.broker),
        )
        .set(
            "group.id",
            lossproof_consumers::group("correct", &run.names),
        )
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut list = TopicPartitionList::new();
    for topic in run.topics() {
        list.add_partition_offset(&topic, 0, Offset::Offset(0))
            .unwrap();
    }
    let _ = client.commit(&list, CommitMode::Sync);
}

async fn refuses_what_it_cannot_trust(state: &Path, run: &Run) {
    let lake = Lake::open(state).await.unwrap();
    // A table with rows but no stored offsets.
    let foreign = format!("foreign_{}", run.id);
    lossproof_consumers::correct::state::LakeState::create_tables(&lake, &foreign, "", orders())
        .await
        .unwrap();
    let ns = iceberg::NamespaceIdent::new(foreign.clone());
    let ident = iceberg::TableIdent::new(ns.clone(), "customers".into());
    let table = iceberg::Catalog::load_table(lake.catalog(), &ident)
        .await
        .unwrap();
    let schema = table.metadata().current_schema().clone();
    let row: lossproof_runtime::change_event::Row =
        [("customer_id".to_owned(), change_event::Cell::Int(1))].into();
    let batch = lossproof_consumers::to_arrow(&schema, &[&row]).unwrap();
    lake.append(&table, vec![batch], std::collections::HashMap::new())
        .await
        .unwrap();
    let mut refused = Consumer::spawn_kind(state, &run.id, "correct", &["--namespace", &foreign]);
    let status = wait_exit(&mut refused, Duration::from_mins(1));
    assert!(!status.success());
    assert!(
        refused.log().contains("refusing to start") && refused.log().contains("no Kafka offsets"),
        "{}",
        refused.log()
    );
    // Stored offsets past the topic's end (a recreated topic).
    let state_ident = iceberg::TableIdent::new(
        iceberg::NamespaceIdent::new(namespace(run)),
        STATE_TABLE.into(),
    );
    let state_table = iceberg::Catalog::load_table(lake.catalog(), &state_ident)
        .await
        .unwrap();
    let mut properties = lossproof_runtime::lake::latest_properties(&state_table, "lossproof.");
    let key = format!("lossproof.offset.{}.0", run.topics()[1]);
    properties.insert(key, "1000000000".into());
    lake.commit(
        &state_table,
        Commit::append(Vec::new()).with_properties(properties),
    )
    .await
    .unwrap();
    let mut refused = Consumer::spawn_kind(state, &run.id, "correct", &[]);
    let status = wait_exit(&mut refused, Duration::from_mins(1));
    assert!(!status.success());
    assert!(
        refused.log().contains("past the topic's end"),
        "{}",
        refused.log()
    );
}

fn reader(run: &Run) -> BaseConsumer {
    rdkafka::ClientConfig::new()
        .set(
            "bootstrap.servers",
            format!("127.0.0.1:{}", run.ports.broker),
        )
        .set("group.id", "lossproof-test-reader")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap()
}

/// Every record of `topic`'s partition 0 (key, value).
fn raw_records(run: &Run, topic: &str) -> Vec<Raw> {
    let client = reader(run);
    let (_, end) = client
        .fetch_watermarks(topic, 0, Duration::from_secs(5))
        .unwrap();
    let mut list = TopicPartitionList::new();
    list.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    client.assign(&list).unwrap();
    let mut raw = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while i64::try_from(raw.len()).unwrap_or(i64::MAX) < end && Instant::now() < deadline {
        if let Some(Ok(m)) = client.poll(Duration::from_millis(200)) {
            raw.push((m.key().map(<[u8]>::to_vec), m.payload().map(<[u8]>::to_vec)));
        }
    }
    raw
}

/// Every record of `topic` (key, value, decoded).
async fn records(run: &Run, topic: &str) -> Vec<(Option<Vec<u8>>, Option<Vec<u8>>, ChangeRecord)> {
    let raw = raw_records(run, topic);
    let mut schemas = Schemas::new(&lossproof_runtime::profile::Http::plain(run.ports.registry));
    let mut out = Vec::new();
    for (key, value) in raw {
        schemas
            .fetch_for(key.as_deref(), value.as_deref())
            .await
            .unwrap();
        if let Ok(decoded) =
            change_event::decode_avro(key.as_deref(), value.as_deref(), &|id| schemas.lookup(id))
        {
            out.push((key, value, decoded));
        }
    }
    out
}

/// A record's key and value bytes.
type Raw = (Option<Vec<u8>>, Option<Vec<u8>>);

async fn produce(run: &Run, topic: &str, records: &[Raw]) {
    let producer: FutureProducer = rdkafka::ClientConfig::new()
        .set(
            "bootstrap.servers",
            format!("127.0.0.1:{}", run.ports.broker),
        )
        .create()
        .unwrap();
    for (key, value) in records {
        let mut record: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic);
        if let Some(k) = key {
            record = record.key(k.as_slice());
        }
        if let Some(v) = value {
            record = record.payload(v.as_slice());
        }
        producer
            .send(record, Duration::from_secs(10))
            .await
            .unwrap();
    }
}

fn order_id(record: &ChangeRecord) -> Option<i64> {
    let ChangeRecord::Change(c) = record else {
        return None;
    };
    match c.key.get("order_id") {
        Some(change_event::Cell::Int(i)) => Some(*i),
        _ => None,
    }
}

#[allow(clippy::too_many_lines)] // one run, three deliveries checked in order
async fn deletes_and_rereads_hold(state: &Path, ports: Ports) {
    let run = Run::start(state, ports, "order").await;
    let mut consumer = Consumer::spawn_kind(state, &run.id, "correct", QUICK);
    load(&run, 5, 4).await.unwrap();
    gate_correct(&run, &run.names, &consumer, Duration::from_mins(1)).await;
    let orders_topic = run.topics()[1].clone();

    // 1. Re-sent old inserts after their rows were deleted stay deleted.
    run.source
        .batch_execute("DELETE FROM orders WHERE order_id IN (SELECT order_id FROM orders ORDER BY 1 LIMIT 10)")
        .await
        .unwrap();
    gate_correct(&run, &run.names, &consumer, Duration::from_mins(1)).await;
    let all = records(&run, &orders_topic).await;
    let deleted: std::collections::HashSet<i64> = all
        .iter()
        .filter(|(_, _, r)| matches!(r, ChangeRecord::Change(c) if c.op == ChangeOp::Delete))
        .filter_map(|(_, _, r)| order_id(r))
        .collect();
    let old_inserts: Vec<_> = all
        .iter()
        .filter(|(_, _, r)| matches!(r, ChangeRecord::Change(c) if c.op == ChangeOp::Create))
        .filter(|(_, _, r)| order_id(r).is_some_and(|k| deleted.contains(&k)))
        .map(|(k, v, _)| (k.clone(), v.clone()))
        .collect();
    assert!(
        old_inserts.len() >= 10,
        "inserts of deleted orders to re-send: {}",
        old_inserts.len()
    );
    produce(&run, &orders_topic, &old_inserts).await;
    gate_correct(&run, &run.names, &consumer, Duration::from_mins(1)).await;
    assert_exact(
        &reconcile_correct(&run).await,
        "old inserts re-sent after their deletes",
    );

    // 2. A new connector with a new slot re-snapshots every row (op r) into
    //    the same topics, then rows are updated after that snapshot, then
    //    the snapshot reads of those rows are re-sent.
    debezium::remove(&run.connect, &run.names, &run.source)
        .await
        .unwrap();
    let second = CaptureNames {
        connector: format!("{}-b", run.names.connector),
        slot: format!("{}_b", run.names.slot),
        publication: format!("{}_b", run.names.publication),
        topic_prefix: run.names.topic_prefix.clone(),
        database: run.names.database.clone(),
    };
    let tables: Vec<String> = orders()
        .tables
        .iter()
        .map(|t| format!("public.{}", t.name))
        .collect();
    let tables: Vec<&str> = tables.iter().map(String::as_str).collect();
    let config = debezium::config(
        &second,
        &lossproof_runtime::Endpoints::local(run.ports, &run.state),
        DATABASE,
        &tables,
        debezium::Encoding::Avro,
    );
    debezium::start(
        &run.connect,
        &second,
        &config,
        &run.source,
        Duration::from_mins(1),
    )
    .await
    .unwrap();
    gate_correct(&run, &second, &consumer, Duration::from_mins(1)).await;
    run.source
        .batch_execute("UPDATE orders SET note = 'newer than the snapshot' WHERE order_id IN (SELECT order_id FROM orders ORDER BY 1 LIMIT 10)")
        .await
        .unwrap();
    gate_correct(&run, &second, &consumer, Duration::from_mins(1)).await;
    let all = records(&run, &orders_topic).await;
    let updated: std::collections::HashSet<i64> = all
        .iter()
        .filter(|(_, _, r)| {
            matches!(r, ChangeRecord::Change(c) if c.op == ChangeOp::Update
                && matches!(c.after.as_ref().and_then(|a| a.get("note")), Some(change_event::Cell::Text(t)) if t == "newer than the snapshot"))
        })
        .filter_map(|(_, _, r)| order_id(r))
        .collect();
    let reads: Vec<_> = all
        .iter()
        .filter(|(_, _, r)| matches!(r, ChangeRecord::Change(c) if c.op == ChangeOp::Read && c.snapshot))
        .filter(|(_, _, r)| order_id(r).is_some_and(|k| updated.contains(&k)))
        .map(|(k, v, _)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(
        reads.len(),
        10,
        "snapshot reads of the updated rows to re-send"
    );
    produce(&run, &orders_topic, &reads).await;
    gate_correct(&run, &second, &consumer, Duration::from_mins(1)).await;
    consumer.stop();
    assert!(consumer.log().contains("not newer"), "{}", consumer.log());
    assert_exact(
        &reconcile_correct(&run).await,
        "a re-snapshot, then re-sent snapshot reads older than updates",
    );
    debezium::remove(&run.connect, &second, &run.source)
        .await
        .unwrap();
}

async fn schema_follows_the_source(state: &Path, ports: Ports) {
    let run = Run::start(state, ports, "schema").await;
    // What it tells the executor (`run` decides on these, not on the log).
    let messages = state.join(format!("correct-{}.messages.jsonl", run.id));
    let told = ["--messages", messages.to_str().expect("a UTF-8 path")];
    let mut consumer = Consumer::spawn_kind(state, &run.id, "correct", &[QUICK, &told].concat());
    let workload = load(&run, 9, 8);
    tokio::time::sleep(Duration::from_secs(2)).await;
    run.source
        .batch_execute("ALTER TABLE orders ALTER COLUMN amount TYPE numeric(14,2)")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Killed under load after the widening: the readers below read a lake
    // written across kills, deletes and schema changes.
    consumer.sigkill();
    let mut consumer = Consumer::spawn_kind(state, &run.id, "correct", &[QUICK, &told].concat());
    tokio::time::sleep(Duration::from_secs(1)).await;
    run.source
        .batch_execute("ALTER TABLE orders ADD COLUMN coupon text")
        .await
        .unwrap();
    run.source
        .batch_execute("UPDATE orders SET coupon = 'C' || order_id WHERE order_id % 3 = 0")
        .await
        .unwrap();
    let report = workload.await.unwrap();
    assert_eq!(report.failed, 0);
    // The workload writes every column: drop one once it is done.
    run.source
        .batch_execute("ALTER TABLE order_items DROP COLUMN sku")
        .await
        .unwrap();
    // Every row of every table changes once more, in the final schema.
    run.source
        .batch_execute("UPDATE orders SET quantity = quantity + 1; UPDATE order_items SET quantity = quantity + 1; UPDATE customers SET tier = tier")
        .await
        .unwrap();
    // A rename reaches the consumer as one changed row: every other row of
    // the table keeps its value only if the lake renames the column (same
    // field id) instead of dropping it and adding an empty one.
    gate_correct(&run, &run.names, &consumer, Duration::from_mins(1)).await;
    let lake = Lake::open(state).await.unwrap();
    let (Some(before), None) = email_ids(&lake, &run).await else {
        panic!("customers.email before the rename");
    };
    run.source
        .batch_execute("ALTER TABLE customers RENAME COLUMN email TO email_address; UPDATE customers SET tier = tier WHERE customer_id IN (SELECT min(customer_id) FROM customers)")
        .await
        .unwrap();
    gate_correct(&run, &run.names, &consumer, Duration::from_mins(1)).await;
    assert_eq!(
        email_ids(&lake, &run).await,
        (None, Some(before)),
        "renamed in place"
    );
    assert_exact(
        &reconcile_correct(&run).await,
        "widen, add, drop and rename under load",
    );
    let ns = iceberg::NamespaceIdent::new(namespace(&run));
    let orders_table = iceberg::Catalog::load_table(
        lake.catalog(),
        &iceberg::TableIdent::new(ns.clone(), "orders".into()),
    )
    .await
    .unwrap();
    let schema = orders_table.metadata().current_schema();
    assert_eq!(
        schema
            .field_by_name("amount")
            .unwrap()
            .field_type
            .to_string(),
        "decimal(14, 2)"
    );
    assert!(schema.field_by_name("coupon").is_some());
    let items = iceberg::Catalog::load_table(
        lake.catalog(),
        &iceberg::TableIdent::new(ns, "order_items".into()),
    )
    .await
    .unwrap();
    assert!(
        items
            .metadata()
            .current_schema()
            .field_by_name("sku")
            .is_none()
    );
    readers_read_exactly(&lake, &run).await;

    // A scale change cannot be expressed in Iceberg: it stops, with the reason.
    run.source
        .batch_execute("ALTER TABLE orders ALTER COLUMN amount TYPE numeric(14,3); UPDATE orders SET quantity = quantity + 1 WHERE order_id IN (SELECT order_id FROM orders ORDER BY 1 LIMIT 1)")
        .await
        .unwrap();
    stopped_on_the_scale_change(&mut consumer, &messages);
    run.finish().await;
}

/// The correct consumer stopped on purpose on `amount`'s scale change (exit
/// 3), said why in its log, and told the executor the same in `messages`.
fn stopped_on_the_scale_change(consumer: &mut Consumer, messages: &Path) {
    let status = wait_exit(consumer, Duration::from_mins(1));
    assert_eq!(status.code(), Some(3), "{}", consumer.log());
    let log = consumer.log();
    let fatal = log
        .lines()
        .find(|l| l.starts_with("fatal: "))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        fatal.contains("`amount`")
            && fatal.contains("decimal(14, 2)")
            && fatal.contains("decimal(14,3)"),
        "{fatal}"
    );
    let said = lossproof_consumers::Messages::read(messages);
    assert!(
        matches!(said.last(), Some(lossproof_consumers::Message::Fatal { reason }) if fatal.ends_with(reason.as_str())),
        "the executor is told why it stopped: {said:?}\n{fatal}"
    );
}

/// The field ids of `customers.email` and `customers.email_address` in the
/// correct consumer's lake.
async fn email_ids(lake: &Lake, run: &Run) -> (Option<i32>, Option<i32>) {
    let customers = iceberg::Catalog::load_table(
        lake.catalog(),
        &iceberg::TableIdent::new(
            iceberg::NamespaceIdent::new(namespace(run)),
            "customers".into(),
        ),
    )
    .await
    .unwrap();
    let schema = customers.metadata().current_schema();
    (
        schema.field_by_name("email").map(|f| f.id),
        schema.field_by_name("email_address").map(|f| f.id),
    )
}

/// Every reader here reads the correct consumer's tables exactly, while
/// position delete files are present (asserted first: merge-on-read is what
/// is being read): pyiceberg 0.12 and DuckDB 1.5.5's iceberg extension,
/// compared with the source row for row (the reconciler, iceberg-rust, is
/// the run's own check).
async fn readers_read_exactly(lake: &Lake, run: &Run) {
    let mut metadata = serde_json::Map::new();
    for table in ["customers", "orders", "order_items"] {
        let ident =
            iceberg::TableIdent::new(iceberg::NamespaceIdent::new(namespace(run)), table.into());
        let loaded = iceberg::Catalog::load_table(lake.catalog(), &ident)
            .await
            .unwrap();
        let deletes = lossproof_runtime::lake::live_files(&loaded)
            .await
            .unwrap()
            .into_iter()
            .filter(|f| f.content == iceberg::spec::DataContentType::PositionDeletes)
            .count();
        if table != "customers" {
            assert!(deletes > 0, "{table}: position delete files present");
        }
        metadata.insert(
            table.into(),
            loaded.metadata_location().unwrap_or_default().into(),
        );
    }
    let script = format!(
        "{}\nout = {{}}\nfor t, key in {TABLE_KEYS}:\n    rows = catalog.load_table('{}.' + t).scan().to_arrow().to_pylist()\n    out[t] = {PY_ROWS}\nprint(json.dumps(out))",
        crate::lake::PY_PRELUDE,
        namespace(run)
    );
    let by_pyiceberg = crate::lake::pyiceberg(lake, &script);
    let by_duckdb = duckdb(&serde_json::Value::Object(metadata));
    for (table, sql) in [
        ("customers", "SELECT customer_id::text FROM customers"),
        (
            "orders",
            "SELECT order_id::text, amount::text, coalesce(coupon, 'None') FROM orders",
        ),
        (
            "order_items",
            "SELECT order_id::text, line_no::text FROM order_items",
        ),
    ] {
        let mut source: Vec<Vec<String>> = run
            .source
            .query(sql, &[])
            .await
            .unwrap()
            .iter()
            .map(|r| (0..r.len()).map(|i| r.get::<_, String>(i)).collect())
            .collect();
        source.sort();
        for (reader, read) in [("pyiceberg", &by_pyiceberg), ("duckdb", &by_duckdb)] {
            let lake_rows: Vec<Vec<String>> = serde_json::from_value(read[table].clone()).unwrap();
            assert_eq!(
                lake_rows.len(),
                source.len(),
                "{table}: {reader}'s row count"
            );
            assert_eq!(
                lake_rows, source,
                "{table}: {reader} reads the source's rows"
            );
        }
    }
}

/// The tables and key columns the readers compare, as Python.
const TABLE_KEYS: &str = "[('customers', ['customer_id']), ('orders', ['order_id']), ('order_items', ['order_id', 'line_no'])]";
/// A table's rows (`rows`, dicts) as the sorted lists compared, as Python.
const PY_ROWS: &str = "sorted([[str(r[k]) for k in key] + ([str(r['amount']), str(r['coupon'])] if t == 'orders' else []) for r in rows])";

/// DuckDB 1.5.5 with its iceberg extension (loaded from the wheel, no
/// download) reading each table's current metadata file (`metadata`:
/// table -> location), no catalog; bounded.
fn duckdb(metadata: &serde_json::Value) -> serde_json::Value {
    let python = lossproof_runtime::tools::Tools::from_env().duckdb_python();
    assert!(
        python.is_file(),
        "{} is missing: `.ci/test` installs it",
        python.display()
    );
    let script = format!(
        r#"import duckdb, importlib, json, pathlib, sys
def extension(name):
    module = importlib.import_module("duckdb_extension_" + name)
    return str(pathlib.Path(module.__file__).parent / "extensions" / ("v" + duckdb.__version__) / (name + ".duckdb_extension"))
con = duckdb.connect(config={{"autoinstall_known_extensions": False, "autoload_known_extensions": False}})
for name in ("avro", "iceberg"):
    con.load_extension(extension(name))
metadata = json.loads(sys.argv[1])
out = {{}}
for t, key in {TABLE_KEYS}:
    wanted = key + (["amount", "coupon"] if t == "orders" else [])
    columns_sql = ", ".join('"' + c + '"' for c in wanted)
    result = con.execute("SELECT " + columns_sql + " FROM iceberg_scan(?)", [metadata[t].removeprefix("file://")])
    columns = [d[0] for d in result.description]
    rows = [dict(zip(columns, r)) for r in result.fetchall()]
    out[t] = {PY_ROWS}
print(json.dumps(out))
"#
    );
    crate::lake::python_json(
        "duckdb",
        &python,
        "300",
        &["-c", &script, &metadata.to_string()],
        &[],
    )
}

#[allow(clippy::too_many_lines)] // one run: junk, a kill, then racing compactions
async fn junk_and_a_racing_writer(state: &Path, ports: Ports) {
    let run = Run::start(state, ports, "junk").await;
    let mut consumer = Consumer::spawn_kind(state, &run.id, "correct", QUICK);
    let workload = load(&run, 13, 10);
    let orders_topic = run.topics()[1].clone();
    let mut junk = Vec::new();
    for i in 0..10u8 {
        let value = if i % 2 == 0 {
            b"\xffnot an Avro record".to_vec()
        } else {
            let mut framed = vec![0, 0x7f, 0xff, 0xff, 0xf0];
            framed.extend_from_slice(b"\x02junk");
            framed
        };
        junk.push((Some(vec![i]), Some(value)));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    produce(&run, &orders_topic, &junk).await;
    // A SIGKILL right after: the dead letters must not be written twice.
    tokio::time::sleep(Duration::from_millis(700)).await;
    consumer.sigkill();
    let mut consumer = Consumer::spawn_kind(state, &run.id, "correct", QUICK);

    // A racing writer: compactions of `orders` (its live files rewritten
    // with the same rows) while the consumer commits.
    let lake = Lake::open(state).await.unwrap();
    let ident = iceberg::TableIdent::new(
        iceberg::NamespaceIdent::new(namespace(&run)),
        "orders".into(),
    );
    // Lake::compact, the real job: the live rows with their position
    // deletes applied, every data and delete file replaced, under the base
    // check. Under load it mostly loses (a merge-on-read table's many small
    // files take longer to read than a batch takes to commit); after the
    // load it wins, and the consumer's next commit finds the table moved.
    let (mut won, mut lost) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(40);
    while !workload.is_finished() || (won == 0 && Instant::now() < deadline) {
        match lake.compact(&ident).await.unwrap() {
            lossproof_runtime::lake::Compacted::Won { .. } => won += 1,
            lossproof_runtime::lake::Compacted::Lost { .. } => lost += 1,
            lossproof_runtime::lake::Compacted::NothingToDo { .. } => {}
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    run.source
        .batch_execute("UPDATE orders SET note = 'after a compaction' WHERE order_id IN (SELECT order_id FROM orders ORDER BY 1 LIMIT 3)")
        .await
        .unwrap();
    assert_eq!(workload.await.unwrap().failed, 0);
    gate_correct(&run, &run.names, &consumer, Duration::from_mins(1)).await;
    consumer.stop();
    let log = consumer.log();
    eprintln!("racing compactions: {won} won, {lost} lost to the consumer");
    assert!(won > 0, "some compactions committed");
    assert!(
        log.contains("reloading and recomputing"),
        "the consumer lost some races and retried:\n{log}"
    );
    let scored = reconcile_correct(&run).await;
    assert_exact(&scored, "junk, a SIGKILL and racing compactions");
    assert_eq!(counts(&scored, "orders").wrong, 0);
    let dead = dead_letters_batch(&lake, &[("correct".into(), namespace(&run))])
        .await
        .unwrap();
    assert_eq!(
        dead.num_rows(),
        10,
        "every junk record is dead-lettered exactly once"
    );
    run.finish().await;
}

/// `lossproof reconcile --run R --live` on a running pipeline: the correct
/// consumer scores (exit 0, the snapshot's LSN said, some keys in flight);
/// the careless one is refused (exit 2, nothing on stdout).
async fn live_command(state: &Path, id: &str) {
    let (state_dir, id) = (state.to_owned(), id.to_owned());
    let (live, careless) = tokio::task::spawn_blocking(move || {
        let args = ["reconcile", "--run", &id, "--live", "--consumer"];
        (
            crate::stack::lossproof(&state_dir, &[&args[..], &["correct"]].concat()),
            crate::stack::lossproof(&state_dir, &[&args[..], &["careless"]].concat()),
        )
    })
    .await
    .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&live.stdout),
        String::from_utf8_lossy(&live.stderr)
    );
    assert_eq!(live.status.code(), Some(0), "{text}");
    assert!(
        text.contains("the source's snapshot is at LSN") && text.contains("IN-FLIGHT"),
        "{text}"
    );
    assert!(text.contains("correct    orders"), "{text}");
    let refused = String::from_utf8_lossy(&careless.stderr);
    assert_eq!(careless.status.code(), Some(2), "{refused}");
    assert!(
        refused.contains("INVALID") && refused.contains("keeps no Kafka offsets in its lake"),
        "{refused}"
    );
    assert!(careless.stdout.is_empty(), "nothing scored: {refused}");
}

/// Item 5 of issue 15: a live source. Under load, no faults, the correct
/// consumer keeping up: every reconciliation of the running pipeline (the
/// source in one snapshot, the lake once it covers the snapshot's LSN)
/// finds NO damage, and the keys the consumer already changed past the
/// snapshot are `in-flight`; at least one of a few tries catches some. The
/// command (`lossproof reconcile --run R --live`) exits 0 on the same, and
/// refuses the careless consumer, which keeps no offsets in its lake.
async fn reconciles_a_live_source(state: &Path, ports: Ports) {
    use lossproof_runtime::reconcile::live::Snapshot;
    let run = Run::start(state, ports, "live").await;
    let mut consumer = Consumer::spawn_kind(state, &run.id, "correct", QUICK);
    let workload = load(&run, 35, 25);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let correct = ["correct".to_owned()];
    let positions = lossproof_executor::under_test::positions(&correct, &[], &run.names, orders());
    let lakes = lossproof_executor::under_test::lakes(&correct, &[], &run.names, orders());
    assert!(
        lakes[0].applied.is_some(),
        "the correct consumer keeps each key's transaction"
    );
    let kafka = lossproof_runtime::profile::Kafka::plain(run.ports.broker);
    let lake = Lake::open(&run.state).await.unwrap();
    let (mut in_flight, mut tries) = (0, 0);
    while in_flight == 0 && tries < 6 && !workload.is_finished() {
        tries += 1;
        let reader = lossproof_runtime::postgres::connect(run.ports.source_postgres, DATABASE)
            .await
            .unwrap();
        let snapshot = Snapshot::begin(&reader).await.unwrap();
        let covered = gate::wait_covered(
            &run.connect,
            &run.names,
            &run.source,
            snapshot.lsn,
            &kafka,
            &positions,
            &lake,
            Duration::from_mins(1),
        )
        .await;
        assert_eq!(
            covered,
            Ok(()),
            "the lake covers the snapshot\n{}",
            consumer.log()
        );
        let mut specs = Vec::new();
        for table in orders().table_names() {
            specs.push(reconcile::source::describe(&reader, table).await.unwrap());
        }
        let scored = reconcile::reconcile_live(
            &reader,
            &lake,
            &specs,
            &lakes,
            reconcile::RowTables::Skip,
            &snapshot,
        )
        .await
        .unwrap();
        Snapshot::end(&reader).await.unwrap();
        assert_eq!(scored.in_memory, [], "compared in memory instead of merged");
        let compared: u64 = scored.summary.iter().map(|s| s.counts.compared).sum();
        let damage: Vec<_> = scored.diff.iter().filter(|d| d.kind.is_damage()).collect();
        eprintln!(
            "live try {tries}: snapshot at {}, {compared} keys compared, {} in flight, {} damaged",
            debezium::show_lsn(snapshot.lsn),
            scored.diff.len() - damage.len(),
            damage.len()
        );
        assert!(compared > 0, "rows were compared");
        assert!(damage.is_empty(), "no damage on a live source: {damage:#?}");
        assert!(scored.clean());
        assert_eq!(scored.wrong_rows("correct"), 0, "{}", show(&scored));
        in_flight += scored.diff.len();
    }
    assert!(
        in_flight > 0,
        "some keys were changed past a snapshot before the lake was read ({tries} tries)"
    );
    // The command, still under load: exit 0; the careless consumer refused.
    live_command(state, &run.id).await;
    // Drained, the same lake is exact (nothing in flight any more).
    let report = workload.await.unwrap();
    assert_eq!(report.failed, 0);
    gate_correct(&run, &run.names, &consumer, Duration::from_mins(2)).await;
    let drained = reconcile_correct(&run).await;
    assert_exact(&drained, "live run, drained");
    assert!(drained.diff.is_empty(), "{}", show(&drained));
    consumer.stop();
    run.finish().await;
}
