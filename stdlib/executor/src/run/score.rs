//! Step 4 of a seed: the reconciler scores each consumer's lake, the
//! assertions run over its tables (`diff`, `summary`, `source_rows`,
//! `lake_rows`) and the run's (`faults`, `races`, `dead_letters`). An
//! assertion about a consumer not under test is not evaluated; a seed that
//! evaluated none is INVALID, never PASS (`super::judge`).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
use lossproof_lang::Plan;
use lossproof_runtime::reconcile::{self, DiffRow, Table};

use super::{AssertionRecord, FaultRecord, SeedRecord};
use crate::error::Result;
use crate::fault::maintenance::Races;
use crate::seed::Seed;

/// Reconcile, evaluate the assertions into the record; the diff (for
/// `--keep`). The verdict is the caller's ([`super::judge`]).
pub(super) async fn score(seed: &Seed<'_>, record: &mut SeedRecord) -> Result<Vec<DiffRow>> {
    let (plan, options, names) = (seed.plan, seed.options, &seed.names);
    let lakes = crate::under_test::lakes(&options.consumers, &plan.declared, names, &seed.workload);
    let tables: Vec<&str> = seed.workload.table_names();
    // The row tables cost memory for every row: kept only if an assertion reads them.
    let rows = reconcile::RowTables::for_queries(plan.assertions.iter().map(|a| a.sql.as_str()));
    let scored = reconcile::reconcile(&seed.source, &seed.lake, &tables, &lakes, rows).await?;
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
    let ctx = scored.session(assertion_tables(
        &record.faults,
        &record.races,
        dead_letters,
    ))?;
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

/// The tables assertions see besides the reconciler's: `faults`, `races`
/// and `dead_letters` (`lossproof_runtime::reconcile::tables`).
#[must_use]
pub fn assertion_tables(
    faults: &[FaultRecord],
    races: &BTreeMap<String, Races>,
    dead_letters: RecordBatch,
) -> Vec<(Table, RecordBatch)> {
    vec![
        (Table::Faults, faults_batch(faults)),
        (Table::Races, races_batch(races)),
        (Table::DeadLetters, dead_letters),
    ]
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
    ])
}
