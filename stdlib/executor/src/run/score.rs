//! Step 4 of a seed: the reconciler scores each consumer's lake, the
//! assertions run over its tables (`diff`, `summary`, `source_rows`,
//! `lake_rows`) and the run's (`faults`, `races`, `dead_letters`). An
//! assertion about a consumer not under test is not evaluated; a seed that
//! evaluated none is INVALID, never PASS (`super::judge`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
use lossproof_lang::Plan;
use lossproof_runtime::reconcile::capture::{Capture, LastChange, Undelivered};
use lossproof_runtime::reconcile::{self, DiffRow, Table};

use super::{AssertionRecord, FaultRecord, FreshnessRecord, SeedRecord};
use crate::error::Result;
use crate::fault::maintenance::Races;
use crate::seed::Seed;

/// Reconcile, evaluate the assertions into the record; the diff (for
/// `--keep`). The verdict is the caller's ([`super::judge`]).
pub(super) async fn score(
    seed: &Seed<'_>,
    record: &mut SeedRecord,
    followed: super::Followed,
) -> Result<Vec<DiffRow>> {
    let (plan, options, names) = (seed.plan, seed.options, &seed.names);
    let lakes = crate::under_test::lakes(&options.consumers, &plan.declared, names, &seed.workload);
    let tables: Vec<&str> = seed.scored_tables();
    // The row tables cost memory for every row: kept only if an assertion reads them.
    let rows = reconcile::RowTables::for_queries(plan.assertions.iter().map(|a| a.sql.as_str()));
    let mut scored = reconcile::reconcile(&seed.source, &seed.lake, &tables, &lakes, rows).await?;
    // The source's commit order, read once (reading releases it): for the
    // capture check and the snapshots' check.
    let order = reconcile::source::commit_order(&seed.source, &crate::snapshots::slot(names)).await;
    // Every key's undelivered changes when snapshots were followed: the
    // snapshot check leaves them out of the source's history.
    let every_key = !followed.logs.is_empty();
    let capture = charge_capture(
        seed,
        (&tables, every_key),
        order.as_ref().ok(),
        &mut scored,
        record,
    )
    .await;
    let blamed = blame(
        record,
        plan,
        &scored.diff,
        (order.as_ref().ok(), &capture.last_change),
        followed.epoch_ms,
    );
    for consumer in &options.consumers {
        record
            .wrong_rows
            .insert(consumer.clone(), scored.wrong_rows(consumer));
    }
    record.summary.clone_from(&scored.summary);
    record.samples = samples(&scored.diff, &options.consumers);
    let namespaces: Vec<(String, String)> = options
        .consumers
        .iter()
        .map(|c| (c.clone(), lossproof_consumers::namespace(c, names)))
        .collect();
    let dead_letters =
        lossproof_consumers::correct::state::dead_letters_batch(&seed.lake, &namespaces).await?;
    let checking = std::time::Instant::now();
    check_snapshots(seed, record, followed, order, &capture.undelivered).await;
    record.timings.snapshots_ms += super::millis(checking.elapsed());
    let mut tables = assertion_tables(record, dead_letters);
    tables.push((Table::Blame, crate::blame::batch(&blamed, &record.faults)));
    let ctx = scored.session(tables)?;
    for (index, assertion) in plan.assertions.iter().enumerate() {
        let location = options
            .locations
            .assertions
            .get(index)
            .cloned()
            .unwrap_or_default();
        let skipped = assertion
            .consumers
            .iter()
            .find(|c| !options.consumers.contains(c));
        let (passed, got, note) = if let Some(c) = skipped {
            (
                None,
                None,
                Some(format!("not evaluated: consumer {c} is not under test")),
            )
        } else {
            match reconcile::assert_sql(&ctx, &assertion.sql, &assertion.expect).await {
                Ok(outcome) => (Some(outcome.passed), Some(outcome.got), None),
                Err(e) => (Some(false), None, Some(format!("the query failed: {e}"))),
            }
        };
        record.assertions.push(AssertionRecord {
            name: assertion.name.clone(),
            location,
            sql: assertion.sql.clone(),
            passed,
            got,
            note,
        });
    }
    Ok(scored.diff)
}

/// Every wrong row charged to the faults whose effect window holds its
/// key's last source change (`crate::blame`), and per consumer the damage
/// by fault into the record.
fn blame(
    record: &mut SeedRecord,
    plan: &Plan,
    diff: &[DiffRow],
    (order, last_change): (Option<&Vec<reconcile::source::Commit>>, &LastChange),
    epoch_ms: i64,
) -> Vec<crate::blame::BlameRow> {
    let committed: HashMap<i64, i64> = order
        .map(|o| o.iter().map(|c| (c.xid, c.at_ms - epoch_ms)).collect())
        .unwrap_or_default();
    let changed = |table: &str, key: &str| {
        let xid = last_change.get(&(table.to_owned(), key.to_owned()))?;
        committed.get(xid).copied()
    };
    let rows = crate::blame::blame(plan, record, diff, changed);
    record.damage_by_fault = crate::blame::damage_by_fault(&rows);
    rows
}

/// Take the keys capture lost out of the consumers' damage
/// ([`reconcile::capture`]) into the record's `capture_loss`: a key whose
/// last source change never reached its topic is capture's loss, not a
/// consumer's. A check that cannot run leaves the damage charged to the
/// consumers, with the reason in `capture_note`. The check's findings
/// (empty when it did not run): what the snapshot check leaves out of the
/// source's history (every key's, with `every_key`), and each damaged
/// key's last change, for blame.
async fn charge_capture(
    seed: &Seed<'_>,
    (tables, every_key): (&[&str], bool),
    order: Option<&Vec<reconcile::source::Commit>>,
    scored: &mut reconcile::Reconciliation,
    record: &mut SeedRecord,
) -> Capture {
    let mut wanted: HashMap<String, HashSet<String>> = HashMap::new();
    for row in scored.diff.iter().filter(|d| d.kind.is_damage()) {
        wanted
            .entry(row.table.clone())
            .or_default()
            .insert(row.key.clone());
    }
    if wanted.is_empty() && !every_key {
        return Capture::default();
    }
    let Some(order) = order else {
        record.capture_note =
            Some("capture not checked: the source's commit order could not be read".to_owned());
        return Capture::default();
    };
    let commits: HashMap<i64, u64> = order.iter().map(|c| (c.xid, c.lsn)).collect();
    let checked = async {
        let mut described = Vec::new();
        for table in tables {
            let spec = reconcile::source::describe(&seed.source, table).await?;
            described.push((spec, seed.names.topic("public", table)));
        }
        let topics = reconcile::capture::Topics {
            kafka: &seed.endpoints.kafka,
            registry: &seed.endpoints.registry,
            tables: &described,
        };
        reconcile::capture::check(
            &seed.source,
            &topics,
            &commits,
            &wanted,
            every_key,
            if every_key {
                CAPTURE_CHECK_EVERY_KEY_LIMIT
            } else {
                CAPTURE_CHECK_LIMIT
            },
        )
        .await
    }
    .await;
    let capture = match checked {
        Ok(capture) => capture,
        Err(e) => {
            record.capture_note = Some(format!("capture not checked: {e}"));
            return Capture::default();
        }
    };
    let changes: HashMap<(&str, &str), &reconcile::capture::Lost> = capture
        .lost
        .iter()
        .map(|l| ((l.table.as_str(), l.key.as_str()), l))
        .collect();
    record.capture_loss = scored
        .set_aside(&capture.lost)
        .into_iter()
        .filter_map(|row| {
            let change = changes.get(&(row.table.as_str(), row.key.as_str()))?;
            Some(super::CaptureLossRow {
                xid: change.xid,
                deleted: change.deleted,
                row,
            })
        })
        .collect();
    capture
}

/// The columns the seed renamed on the source (`rename column` occurrences
/// that fired), in the order fired.
fn renames(seed: &Seed<'_>, record: &SeedRecord) -> Vec<reconcile::source::Rename> {
    let mut fired: Vec<&FaultRecord> = record
        .faults
        .iter()
        .filter(|f| f.fired && f.fault == "rename-column")
        .collect();
    fired.sort_by_key(|f| f.fired_ms);
    fired
        .into_iter()
        .filter_map(|f| {
            let action = seed.plan.actions.get(f.action)?;
            let name = |arg: &str| action.name_arg(arg).map(str::to_owned);
            Some(reconcile::source::Rename {
                table: name("table")?,
                from: name("column")?,
                to: name("new_name")?,
            })
        })
        .collect()
}

/// How long the capture check may take to read the topics of the tables
/// with damaged keys to their ends.
const CAPTURE_CHECK_LIMIT: std::time::Duration = std::time::Duration::from_mins(2);

/// How long the capture check may take to read every topic to its end for
/// every key's changes (`at-size.lp`'s million-row snapshot included).
const CAPTURE_CHECK_EVERY_KEY_LIMIT: std::time::Duration = std::time::Duration::from_mins(10);

/// Check every lake state the follower read against the source's states
/// (`crate::snapshots`) into the record. A check that could not run (the
/// source's history unreadable) leaves every consumer's snapshots
/// unchecked, with the reason: the `snapshots` table is then empty, and an
/// assertion over it says so by failing, never by passing.
async fn check_snapshots(
    seed: &Seed<'_>,
    record: &mut SeedRecord,
    followed: super::Followed,
    order: Result<Vec<reconcile::source::Commit>, reconcile::Error>,
    uncaptured: &Undelivered,
) {
    let consumers: Vec<String> = followed.logs.iter().map(|l| l.consumer.clone()).collect();
    let renames = renames(seed, record);
    let checked = async {
        let order: Vec<i64> = order?.into_iter().map(|c| c.xid).collect();
        crate::snapshots::check(
            &seed.source,
            (&followed.tables, &renames),
            (&order, uncaptured),
            followed.logs,
            followed.epoch_ms,
            &|| seed.options.interrupt.borrow().is_some(),
        )
        .await
    }
    .await;
    match checked {
        Ok(checked) => {
            record.snapshots = checked.snapshots;
            record.snapshot_keys = checked.keys;
            record.consistency = checked.consumers;
        }
        Err(e) => {
            record.consistency = consumers
                .into_iter()
                .map(|consumer| crate::snapshots::ConsistencyRecord {
                    consumer,
                    note: Some(format!("not checked: {e}")),
                    ..Default::default()
                })
                .collect();
        }
    }
}

/// Up to [`super::SAMPLES_PER_CONSUMER`] diff rows per consumer, taken
/// round-robin over the kinds present (a seed with 2,000 `missing` and 3
/// `stale` rows shows both kinds), in key order within a kind.
fn samples(diff: &[DiffRow], consumers: &[String]) -> Vec<DiffRow> {
    let mut out = Vec::new();
    for consumer in consumers {
        let mut by_kind: std::collections::BTreeMap<_, Vec<&DiffRow>> =
            std::collections::BTreeMap::new();
        for row in diff.iter().filter(|r| &r.consumer == consumer) {
            by_kind.entry(row.kind).or_default().push(row);
        }
        let mut taken = 0;
        for round in 0.. {
            let before = taken;
            for rows in by_kind.values() {
                if taken < super::SAMPLES_PER_CONSUMER
                    && let Some(row) = rows.get(round)
                {
                    out.push((*row).clone());
                    taken += 1;
                }
            }
            if taken == before || taken == super::SAMPLES_PER_CONSUMER {
                break;
            }
        }
    }
    out
}

/// Why a run of `plan` on `options.consumers` would evaluate no assertion,
/// or `None` when it evaluates at least one (`run` refuses to start such a
/// run: its seeds could only say what was not checked).
#[must_use]
pub fn nothing_to_judge(plan: &Plan, consumers: &[String]) -> Option<String> {
    let judged = plan
        .assertions
        .iter()
        .any(|a| a.consumers.iter().all(|c| consumers.contains(c)));
    (!judged).then(|| unjudged_reason(plan, consumers))
}

pub(super) fn unjudged_reason(plan: &Plan, consumers: &[String]) -> String {
    if plan.assertions.is_empty() {
        return "the scenario has no assertion (`expect …` or `assert …`): nothing would be checked".into();
    }
    let about: std::collections::BTreeSet<&str> = plan
        .assertions
        .iter()
        .flat_map(|a| a.consumers.iter().map(String::as_str))
        .filter(|c| !consumers.iter().any(|u| u == c))
        .collect();
    format!(
        "no assertion is about the consumers under test ({}): every one names {}; \
         add an assertion for them or run with --consumers including {}",
        consumers.join(", "),
        about.iter().copied().collect::<Vec<_>>().join(" or "),
        about.iter().copied().collect::<Vec<_>>().join(", ")
    )
}

/// The tables assertions see besides the reconciler's, from a seed's
/// record: `faults`, `races`, `freshness` and `freshness_summary`, and
/// `dead_letters` (`lossproof_runtime::reconcile::tables`).
#[must_use]
pub fn assertion_tables(
    record: &SeedRecord,
    dead_letters: RecordBatch,
) -> Vec<(Table, RecordBatch)> {
    let (freshness, summary) = freshness_batches(&record.freshness);
    let mut tables = vec![
        (Table::Faults, faults_batch(&record.faults)),
        (Table::Races, races_batch(&record.races)),
        (Table::DeadLetters, dead_letters),
        (Table::Freshness, freshness),
        (Table::FreshnessSummary, summary),
    ];
    tables.push((Table::CaptureLoss, capture_loss_batch(&record.capture_loss)));
    tables.extend(crate::snapshots::batches(
        &record.snapshots,
        &record.consistency,
        &record.snapshot_keys,
    ));
    tables
}

/// The `freshness` table (one row per consumer and sample) and
/// `freshness_summary` (one per consumer).
fn freshness_batches(records: &[FreshnessRecord]) -> (RecordBatch, RecordBatch) {
    let texts = |each: &mut dyn Iterator<Item = &str>| -> ArrayRef {
        Arc::new(each.map(Some).collect::<StringArray>())
    };
    let numbers = |each: &mut dyn Iterator<Item = u64>| -> ArrayRef {
        Arc::new(each.map(Some).collect::<UInt64Array>())
    };
    let samples = || {
        records.iter().flat_map(|r| {
            r.t_ms
                .iter()
                .zip(&r.lags_ms)
                .map(move |(t, lag)| (r, *t, *lag))
        })
    };
    let freshness = Table::Freshness.batch(vec![
        texts(&mut samples().map(|(r, _, _)| r.consumer.as_str())),
        texts(&mut samples().map(|(r, _, _)| r.table.as_str())),
        texts(&mut samples().map(|(r, _, _)| r.method.as_str())),
        numbers(&mut samples().map(|(_, t, _)| t)),
        numbers(&mut samples().map(|(_, _, lag)| lag)),
    ]);
    let summary = Table::FreshnessSummary.batch(vec![
        texts(&mut records.iter().map(|r| r.consumer.as_str())),
        texts(&mut records.iter().map(|r| r.table.as_str())),
        texts(&mut records.iter().map(|r| r.method.as_str())),
        numbers(&mut records.iter().map(|r| r.lags_ms.len() as u64)),
        numbers(&mut records.iter().map(|r| r.step_ms)),
        numbers(&mut records.iter().map(|r| r.p50_ms)),
        numbers(&mut records.iter().map(|r| r.p99_ms)),
        numbers(&mut records.iter().map(|r| r.max_ms)),
        numbers(&mut records.iter().map(|r| r.snapshots)),
    ]);
    (freshness, summary)
}

/// The `races` table: one row per consumer lake with the maintenance
/// commits made in it during the seed and how they fared (the record's
/// `races`; [`Races`]'s fields are its columns, in
/// `reconcile::tables::RACE_COUNTS`' order).
fn races_batch(races: &BTreeMap<String, Races>) -> RecordBatch {
    let counts: [fn(&Races) -> u64; 10] = [
        |r| r.compactions_won,
        |r| r.compactions_lost,
        |r| r.compactions_idle,
        |r| r.compactions_failed,
        |r| r.compactions_interrupted,
        |r| r.expiries_won,
        |r| r.expiries_lost,
        |r| r.snapshots_expired,
        |r| r.orphan_files_deleted,
        |r| r.consumer_conflicts,
    ];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(
        races
            .keys()
            .map(|c| Some(c.as_str()))
            .collect::<StringArray>(),
    )];
    for count in counts {
        columns.push(Arc::new(races.values().map(count).collect::<UInt64Array>()));
    }
    Table::Races.batch(columns)
}

/// The `capture_loss` table.
fn capture_loss_batch(rows: &[super::CaptureLossRow]) -> RecordBatch {
    let text = |f: fn(&super::CaptureLossRow) -> &str| -> ArrayRef {
        Arc::new(rows.iter().map(|r| Some(f(r))).collect::<StringArray>())
    };
    Table::CaptureLoss.batch(vec![
        text(|r| &r.row.table),
        text(|r| &r.row.key),
        text(|r| &r.row.consumer),
        text(|r| r.row.kind.as_str()),
        Arc::new(
            rows.iter()
                .map(|r| Some(r.xid))
                .collect::<arrow_array::Int64Array>(),
        ),
        text(|r| if r.deleted { "delete" } else { "write" }),
    ])
}

/// The `faults` table.
fn faults_batch(faults: &[FaultRecord]) -> RecordBatch {
    let text = |f: fn(&FaultRecord) -> &str| -> ArrayRef {
        Arc::new(faults.iter().map(|r| Some(f(r))).collect::<StringArray>())
    };
    let flag = |f: fn(&FaultRecord) -> bool| -> ArrayRef {
        Arc::new(faults.iter().map(|r| Some(f(r))).collect::<BooleanArray>())
    };
    let number = |f: fn(&FaultRecord) -> Option<u64>| -> ArrayRef {
        Arc::new(faults.iter().map(f).collect::<UInt64Array>())
    };
    Table::Faults.batch(vec![
        number(|f| Some(f.phase as u64)),
        number(|f| Some(f.planned_ms)),
        number(|f| Some(f.action as u64)),
        text(|f| &f.fault),
        text(|f| &f.text),
        flag(|f| f.fired),
        number(|f| f.fired_ms),
        number(|f| f.ends_ms),
        flag(|f| f.during_load),
        text(|f| &f.outcome),
        number(|f| f.due_ms),
        number(|f| f.drift_ms),
        number(|f| f.done_ms),
        number(|f| f.counts.map(|c| c.considered)),
        number(|f| f.counts.map(|c| c.copied)),
        number(|f| f.counts.map(|c| c.junk)),
        number(|f| f.counts.map(|c| c.send_errors)),
    ])
}
