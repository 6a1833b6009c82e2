//! Step 4 of a seed: the reconciler scores each consumer's lake, the
//! assertions run over its tables (`diff`, `summary`, `source_rows`,
//! `lake_rows`) and the run's (`faults`, `races`, `dead_letters`), and the
//! verdict is set. An
//! assertion about a consumer not under test is not evaluated; a seed that
//! evaluated none is INVALID, never PASS.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
use lossproof_lang::Plan;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::reconcile::{self, DiffRow};
use lossproof_runtime::{Lake, Stack};

use super::{AssertionRecord, FaultRecord, Options, SeedRecord, Verdict};
use crate::error::{Error, Result};
use crate::fault::maintenance::Races;

/// Reconcile, evaluate the assertions, set the verdict.
pub(super) async fn score(
    stack: &Stack,
    plan: &Plan,
    options: &Options,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    lake: &Lake,
    record: &mut SeedRecord,
) -> Result<()> {
    let workload = crate::workloads::of_plan(plan)?;
    let lakes = crate::consumer::lakes(&options.consumers, &plan.declared, names, &workload);
    let tables: Vec<&str> = workload.table_names();
    // The row tables cost memory for every row: kept only if an assertion reads them.
    let rows = reconcile::RowTables::for_queries(plan.assertions.iter().map(|a| a.sql.as_str()));
    let scored = reconcile::reconcile(source, lake, &tables, &lakes, rows).await?;
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
        .map(|c| (c.clone(), crate::consumer::namespace(c, names)))
        .collect();
    let dead_letters =
        crate::consumer::correct::state::dead_letters_batch(Some(lake), &namespaces).await?;
    let ctx = scored.session(&assertion_tables(
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
        let entry = if let Some(c) = skipped {
            AssertionRecord {
                location: location.clone(),
                name: assertion.name.clone(),
                sql: assertion.sql.clone(),
                passed: None,
                got: None,
                note: Some(format!("not evaluated: consumer {c} is not under test")),
            }
        } else {
            match reconcile::assert_sql(&ctx, &assertion.sql, &assertion.expect).await {
                Ok(v) => AssertionRecord {
                    location: location.clone(),
                    name: assertion.name.clone(),
                    sql: assertion.sql.clone(),
                    passed: Some(v.passed),
                    got: Some(v.got),
                    note: None,
                },
                Err(e) => AssertionRecord {
                    location: location.clone(),
                    name: assertion.name.clone(),
                    sql: assertion.sql.clone(),
                    passed: Some(false),
                    got: None,
                    note: Some(format!("the query failed: {e}")),
                },
            }
        };
        record.assertions.push(entry);
    }
    let failed: Vec<String> = record
        .assertions
        .iter()
        .filter(|a| a.passed == Some(false))
        .map(|a| format!("{} ({})", a.name, a.location))
        .collect();
    let evaluated = record.assertions.iter().any(|a| a.passed.is_some());
    if !evaluated {
        // Nothing was checked: no verdict can say PASS.
        record.verdict = Verdict::Invalid;
        record.reason = Some(unjudged_reason(plan, &options.consumers));
    } else if failed.is_empty() {
        record.verdict = Verdict::Pass;
    } else {
        record.verdict = Verdict::Fail;
        record.reason = Some(format!("failed: {}", failed.join("; ")));
        if options.keep {
            let path = stack
                .state()
                .root()
                .join("runs")
                .join(&record.run)
                .join("diff.json");
            let text = serde_json::to_string_pretty(&scored.diff)
                .map_err(|_| Error::Internal("the diff does not serialize"))?;
            std::fs::write(&path, text).map_err(Error::io(path.display().to_string()))?;
            record.diff_file = Some(path);
        }
    }
    Ok(())
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
/// and `dead_letters` (`check` plans assertions against the same list,
/// empty).
#[must_use]
pub fn assertion_tables(
    faults: &[FaultRecord],
    races: &BTreeMap<String, Races>,
    dead_letters: RecordBatch,
) -> Vec<(&'static str, RecordBatch)> {
    vec![
        ("faults", faults_batch(faults)),
        ("races", races_batch(races)),
        ("dead_letters", dead_letters),
    ]
}

/// The `races` table: one row per consumer lake with the maintenance
/// commits made in it during the seed and how they fared (the record's
/// `races`; [`Races`]'s fields are its columns).
///
/// # Panics
/// Never: every column has one value per lake.
#[must_use]
pub fn races_batch(races: &BTreeMap<String, Races>) -> RecordBatch {
    use arrow_schema::{DataType, Field, Schema};
    type Count = (&'static str, fn(&Races) -> u64);
    let counts: [Count; 10] = [
        ("compactions_won", |r| r.compactions_won),
        ("compactions_lost", |r| r.compactions_lost),
        ("compactions_idle", |r| r.compactions_idle),
        ("compactions_failed", |r| r.compactions_failed),
        ("compactions_interrupted", |r| r.compactions_interrupted),
        ("expiries_won", |r| r.expiries_won),
        ("expiries_lost", |r| r.expiries_lost),
        ("snapshots_expired", |r| r.snapshots_expired),
        ("orphan_files_deleted", |r| r.orphan_files_deleted),
        ("consumer_conflicts", |r| r.consumer_conflicts),
    ];
    let mut fields = vec![Field::new("consumer", DataType::Utf8, false)];
    let mut arrays: Vec<ArrayRef> = vec![Arc::new(
        races
            .keys()
            .map(|c| Some(c.as_str()))
            .collect::<StringArray>(),
    )];
    for (name, count) in counts {
        fields.push(Field::new(name, DataType::UInt64, false));
        arrays.push(Arc::new(races.values().map(count).collect::<UInt64Array>()));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("races columns agree")
}

/// The `faults` table.
///
/// # Panics
/// Never: every column has one value per fault.
#[must_use]
pub fn faults_batch(faults: &[FaultRecord]) -> RecordBatch {
    use arrow_schema::{DataType, Field, Schema};
    let columns: Vec<(Field, ArrayRef)> = vec![
        (
            Field::new("phase", DataType::UInt64, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| f.phase as u64)
                    .collect::<UInt64Array>(),
            ),
        ),
        (
            Field::new("planned_ms", DataType::UInt64, false),
            Arc::new(faults.iter().map(|f| f.planned_ms).collect::<UInt64Array>()),
        ),
        (
            Field::new("action", DataType::UInt64, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| f.action as u64)
                    .collect::<UInt64Array>(),
            ),
        ),
        (
            Field::new("fault", DataType::Utf8, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| Some(f.fault.as_str()))
                    .collect::<StringArray>(),
            ),
        ),
        (
            Field::new("text", DataType::Utf8, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| Some(f.text.as_str()))
                    .collect::<StringArray>(),
            ),
        ),
        (
            Field::new("fired", DataType::Boolean, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| Some(f.fired))
                    .collect::<BooleanArray>(),
            ),
        ),
        (
            Field::new("fired_ms", DataType::UInt64, true),
            Arc::new(faults.iter().map(|f| f.fired_ms).collect::<UInt64Array>()),
        ),
        (
            Field::new("ends_ms", DataType::UInt64, true),
            Arc::new(faults.iter().map(|f| f.ends_ms).collect::<UInt64Array>()),
        ),
        (
            Field::new("during_load", DataType::Boolean, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| Some(f.during_load))
                    .collect::<BooleanArray>(),
            ),
        ),
        (
            Field::new("outcome", DataType::Utf8, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| Some(f.outcome.as_str()))
                    .collect::<StringArray>(),
            ),
        ),
    ];
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = columns.into_iter().unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("faults columns agree")
}
