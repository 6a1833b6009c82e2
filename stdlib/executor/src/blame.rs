//! Blame: which fault occurrences each wrong row is charged to (docs/run.md,
//! "Blame: damage by fault").
//!
//! Every fired fault occurrence gets an effect window on the seed's clock,
//! per consumer; a wrong row is charged to every occurrence whose window
//! holds its key's LAST source change (the commit time of the transaction
//! that made it, by the source's own logical decoding), and to no fault
//! when none does. The windows:
//!
//! - every fault holds the changes in flight when it fired: from the fired
//!   time minus the consumer's lag then (what the consumer had not yet
//!   made visible, by the freshness probe; without a lag sample, from the
//!   previous occurrence of the same statement, else from when it fired);
//! - a schema change (`alter table T …`) holds them to the end of the
//!   seed, for table T's keys: every later change of T has the new schema
//!   (and a batch in flight that meets the first of them fails whole);
//! - any other fault holds them until it stopped acting (a lasting fault's
//!   end, or when firing it returned).
//!
//! A fault aimed at one consumer (`kill consumer careless`) is charged only
//! with that consumer's rows. Of a repeated statement's occurrences (`kill
//! consumer every 2s`) a row is charged to the LAST whose window holds it:
//! by the next one the consumer had moved past the change (a lagging
//! consumer's windows overlap: every kill of a 20 s lag holds the same
//! changes, and only the last before it moved on can have lost them).
//! Windows of different statements may overlap too: a row is then charged
//! to each, and `alone` counts the rows one occurrence holds by itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, UInt64Array};
use lossproof_lang::Plan;
use lossproof_runtime::reconcile::{DiffRow, Table};
use serde::{Deserialize, Serialize};

use crate::run::{FaultRecord, SeedRecord};

/// One wrong row charged to one fault occurrence (or to none): a row of
/// the `blame` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlameRow {
    pub consumer: String,
    pub table: String,
    pub key: String,
    pub kind: String,
    /// Index into the seed's faults; `None`: no fault's window holds it.
    pub fault: Option<usize>,
    /// The key's last source change (ms of the seed's clock), if known.
    pub changed_ms: Option<i64>,
}

/// One consumer's wrong rows charged to one fault occurrence (or to none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultDamage {
    pub consumer: String,
    /// Index into the seed's faults; `None`: the rows no fault's window
    /// holds (their key's last change outside every window, or not known).
    pub fault: Option<usize>,
    pub rows: u64,
    /// Of `rows`, those no other fault's window holds.
    pub alone: u64,
}

/// The schema changes: their window runs to the seed's end, for their table.
const SCHEMA_CHANGES: [&str; 4] = ["widen-column", "add-column", "drop-column", "rename-column"];

/// One occurrence's effect window for one consumer.
#[derive(Debug, Clone, PartialEq)]
struct Window {
    fault: usize,
    from_ms: i64,
    to_ms: i64,
    /// Only this table's keys (a schema change's).
    table: Option<String>,
}

/// Every damage row of `diff` charged to the fault occurrences of
/// `record.faults` whose window holds its key's last change; `changed`
/// gives that change's time (ms of the seed's clock) for (table, key).
#[must_use]
pub fn blame(
    plan: &Plan,
    record: &SeedRecord,
    diff: &[DiffRow],
    changed: impl Fn(&str, &str) -> Option<i64>,
) -> Vec<BlameRow> {
    let mut windows: BTreeMap<&str, Vec<Window>> = BTreeMap::new();
    let mut out = Vec::new();
    for row in diff.iter().filter(|r| r.kind.is_damage()) {
        let consumer = row.consumer.as_str();
        let windows = windows
            .entry(consumer)
            .or_insert_with(|| windows_of(plan, record, consumer));
        let changed_ms = changed(&row.table, &row.key);
        // Of each statement's occurrences holding it, the last: by the
        // next one the consumer had moved past the change.
        let mut last_of_statement: BTreeMap<usize, (u64, usize)> = BTreeMap::new();
        if let Some(t) = changed_ms {
            for w in windows
                .iter()
                .filter(|w| w.table.as_ref().is_none_or(|t| *t == row.table))
                .filter(|w| (w.from_ms..=w.to_ms).contains(&t))
            {
                let fault = &record.faults[w.fault];
                let fired = fault.fired_ms.unwrap_or(0);
                let last = last_of_statement
                    .entry(fault.action)
                    .or_insert((fired, w.fault));
                if fired >= last.0 {
                    *last = (fired, w.fault);
                }
            }
        }
        let mut holding: Vec<usize> = last_of_statement.values().map(|(_, f)| *f).collect();
        holding.sort_unstable();
        let faults: Vec<Option<usize>> = if holding.is_empty() {
            vec![None]
        } else {
            holding.into_iter().map(Some).collect()
        };
        for fault in faults {
            out.push(BlameRow {
                consumer: row.consumer.clone(),
                table: row.table.clone(),
                key: row.key.clone(),
                kind: row.kind.as_str().to_owned(),
                fault,
                changed_ms,
            });
        }
    }
    out
}

/// (consumer, (no fault, fault index)): a fault's rows before those of no fault.
type Charged<'a> = (&'a str, (bool, usize));

/// Per consumer, the rows charged to each fault occurrence (in the
/// faults' order, then no fault).
#[must_use]
pub fn damage_by_fault(rows: &[BlameRow]) -> Vec<FaultDamage> {
    // (consumer, table, key, kind) → how many faults hold it.
    let mut holders: BTreeMap<(&str, &str, &str, &str), usize> = BTreeMap::new();
    for r in rows {
        *holders
            .entry((&r.consumer, &r.table, &r.key, &r.kind))
            .or_default() += 1;
    }
    // (consumer, (no fault, fault)) → (rows, alone): `None` after every fault.
    let mut damage: BTreeMap<Charged<'_>, (u64, u64)> = BTreeMap::new();
    for r in rows {
        let slot = damage
            .entry((&r.consumer, (r.fault.is_none(), r.fault.unwrap_or(0))))
            .or_default();
        slot.0 += 1;
        if holders[&(
            r.consumer.as_str(),
            r.table.as_str(),
            r.key.as_str(),
            r.kind.as_str(),
        )] == 1
        {
            slot.1 += 1;
        }
    }
    damage
        .into_iter()
        .map(|((consumer, (none, index)), (rows, alone))| FaultDamage {
            consumer: consumer.to_owned(),
            fault: (!none).then_some(index),
            rows,
            alone,
        })
        .collect()
}

/// How many fault occurrences a consumer's line names before it sums up
/// the rest.
const NAMED: usize = 5;

/// One line per damaged consumer ([`line`]).
#[must_use]
pub fn lines(record: &SeedRecord) -> Vec<String> {
    record
        .wrong_rows
        .keys()
        .filter_map(|consumer| line(record, consumer))
        .collect()
}

/// A damaged consumer's wrong rows by fault occurrence, the largest first
/// (at most [`NAMED`] by name), then those charged to no fault:
/// `careless, 2,390 wrong: 2,300 to alter table orders widen amount at
/// 20.01s (scenarios/widen.lp:10:3); 90 to no fault`. `None` when it was
/// not damaged, or blame did not run.
#[must_use]
pub fn line(record: &SeedRecord, consumer: &str) -> Option<String> {
    let wrong = *record.wrong_rows.get(consumer)?;
    let mine = || {
        record
            .damage_by_fault
            .iter()
            .filter(|d| d.consumer == consumer)
    };
    if wrong == 0 || mine().next().is_none() {
        return None;
    }
    let mut charged: Vec<&FaultDamage> = mine().filter(|d| d.fault.is_some()).collect();
    charged.sort_by_key(|d| std::cmp::Reverse(d.rows));
    let mut parts: Vec<String> = charged
        .iter()
        .take(NAMED)
        .filter_map(|d| {
            let fault = record.faults.get(d.fault?)?;
            let alone = if d.alone == d.rows {
                String::new()
            } else {
                format!(" ({} by it alone)", count(d.alone))
            };
            Some(format!(
                "{} to {} at {:.2}s ({}){alone}",
                count(d.rows),
                fault.text,
                fault.fired_ms.unwrap_or(0) as f64 / 1000.0,
                fault.location
            ))
        })
        .collect();
    if charged.len() > NAMED {
        let rest = &charged[NAMED..];
        parts.push(format!(
            "{} to {} more faults",
            count(rest.iter().map(|d| d.rows).sum()),
            rest.len()
        ));
    }
    if let Some(none) = mine().find(|d| d.fault.is_none()) {
        parts.push(format!("{} to no fault", count(none.rows)));
    }
    Some(format!(
        "{consumer}, {} wrong: {}",
        count(wrong),
        parts.join("; ")
    ))
}

/// `2,390`.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The effect window of every fired occurrence that can touch `consumer`.
fn windows_of(plan: &Plan, record: &SeedRecord, consumer: &str) -> Vec<Window> {
    let lags = record.lags().find(|l| l.consumer == consumer);
    let lag_at = |t: u64| -> Option<u64> {
        let lags = lags?;
        lags.t_ms
            .iter()
            .zip(&lags.lags_ms)
            .filter(|(at, _)| **at <= t && t.saturating_sub(**at) <= lags.step_ms.max(1))
            .map(|(_, lag)| *lag)
            .max()
    };
    let mut out = Vec::new();
    for (index, fault) in record.faults.iter().enumerate() {
        let Some(fired) = fault.fired.then_some(fault.fired_ms).flatten() else {
            continue;
        };
        let action = plan.actions.get(fault.action);
        let aimed_elsewhere = action
            .and_then(|a| a.target.as_ref())
            .and_then(|t| t.consumer.as_deref())
            .is_some_and(|c| c != consumer);
        if aimed_elsewhere {
            continue;
        }
        let fired = ms(fired);
        // The changes in flight when it fired.
        let from = match fault.fired_ms.and_then(lag_at) {
            Some(lag) => fired - ms(lag),
            None => previous_occurrence(&record.faults, index).map_or(fired, ms),
        };
        if SCHEMA_CHANGES.contains(&fault.fault.as_str()) {
            let table = action.and_then(|a| a.name_arg("table")).map(str::to_owned);
            out.push(Window {
                fault: index,
                from_ms: from,
                to_ms: i64::MAX,
                table,
            });
            continue;
        }
        let to = fault.ends_ms.or(fault.done_ms).map_or(fired, ms);
        out.push(Window {
            fault: index,
            from_ms: from,
            to_ms: to.max(fired),
            table: None,
        });
    }
    out
}

/// Milliseconds as the windows count them.
fn ms(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

/// When the previous occurrence of the same statement fired.
fn previous_occurrence(faults: &[FaultRecord], index: usize) -> Option<u64> {
    let fault = &faults[index];
    faults[..index]
        .iter()
        .rev()
        .find(|f| f.action == fault.action && f.phase == fault.phase && f.fired)
        .and_then(|f| f.fired_ms)
}

/// The `blame` table.
#[must_use]
pub fn batch(rows: &[BlameRow], faults: &[FaultRecord]) -> RecordBatch {
    let fault_of = |r: &BlameRow| r.fault.and_then(|i| faults.get(i));
    let texts = |each: Vec<Option<&str>>| -> ArrayRef { Arc::new(StringArray::from(each)) };
    let numbers = |f: fn(&FaultRecord) -> Option<u64>| -> ArrayRef {
        Arc::new(
            rows.iter()
                .map(|r| fault_of(r).and_then(f))
                .collect::<UInt64Array>(),
        )
    };
    Table::Blame.batch(vec![
        texts(rows.iter().map(|r| Some(r.consumer.as_str())).collect()),
        texts(rows.iter().map(|r| Some(r.table.as_str())).collect()),
        texts(rows.iter().map(|r| Some(r.key.as_str())).collect()),
        texts(rows.iter().map(|r| Some(r.kind.as_str())).collect()),
        texts(
            rows.iter()
                .map(|r| fault_of(r).map(|f| f.fault.as_str()))
                .collect(),
        ),
        texts(
            rows.iter()
                .map(|r| fault_of(r).map(|f| f.text.as_str()))
                .collect(),
        ),
        texts(
            rows.iter()
                .map(|r| fault_of(r).map(|f| f.location.as_str()))
                .collect(),
        ),
        numbers(|f| Some(f.action as u64)),
        numbers(|f| Some(f.planned_ms)),
        numbers(|f| f.fired_ms),
        Arc::new(rows.iter().map(|r| r.changed_ms).collect::<Int64Array>()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use lossproof_runtime::reconcile::DiffKind;

    fn fault(action: usize, fault: &str, fired_ms: u64, done_ms: u64) -> FaultRecord {
        FaultRecord {
            action,
            fault: fault.to_owned(),
            text: fault.to_owned(),
            fired: true,
            fired_ms: Some(fired_ms),
            due_ms: Some(fired_ms),
            planned_ms: fired_ms,
            done_ms: Some(done_ms),
            ..FaultRecord::default()
        }
    }

    fn wrong(consumer: &str, table: &str, key: &str) -> DiffRow {
        DiffRow {
            table: table.to_owned(),
            key: key.to_owned(),
            consumer: consumer.to_owned(),
            kind: DiffKind::Missing,
            source: None,
            lake: None,
        }
    }

    fn plan() -> Plan {
        let text = "scenario b\nconsumers careless, correct\nunder load 30s <\n  \
                    kill consumer every 2s\n  alter table orders widen amount at 20s\n  \
                    kill consumer careless at 25s\n>\nexpect consumer correct clean\n";
        crate::test_plan(text)
    }

    fn record(faults: Vec<FaultRecord>) -> SeedRecord {
        let mut record = SeedRecord::new(1, "r".to_owned());
        record.faults = faults;
        record
    }

    #[test]
    fn without_a_lag_a_kill_holds_the_changes_since_the_previous_one_and_a_widening_what_follows() {
        let plan = plan();
        // Kills (action 0) at 2 s and 4 s, the widening (action 1) at 20 s.
        let record = record(vec![
            fault(0, "kill", 2000, 2100),
            fault(0, "kill", 4000, 4100),
            fault(1, "widen-column", 20_000, 20_300),
        ]);
        let diff = [
            wrong("careless", "orders", "order_id=1"),
            wrong("careless", "orders", "order_id=2"),
            wrong("careless", "orders", "order_id=3"),
            wrong("careless", "order_items", "order_id=3,line_no=1"),
            wrong("careless", "orders", "order_id=4"),
        ];
        let last_change = |table: &str, key: &str| match (table, key) {
            ("orders", "order_id=1") => Some(1500),
            ("orders", "order_id=2") => Some(3000),
            ("orders", "order_id=3") => Some(21_000),
            ("order_items", _) => Some(22_000),
            _ => None,
        };
        let rows = blame(&plan, &record, &diff, last_change);
        let charged: Vec<(&str, Option<usize>)> =
            rows.iter().map(|r| (r.key.as_str(), r.fault)).collect();
        assert_eq!(
            charged,
            [
                // Before the first kill: no lag, no previous kill.
                ("order_id=1", None),
                ("order_id=2", Some(1)),
                ("order_id=3", Some(2)),
                // The widening of `orders` is not charged with `order_items`.
                ("order_id=3,line_no=1", None),
                // The last change not known: no fault.
                ("order_id=4", None),
            ]
        );
        let damage = damage_by_fault(&rows);
        assert_eq!(
            damage
                .iter()
                .map(|d| (d.fault, d.rows, d.alone))
                .collect::<Vec<_>>(),
            [(Some(1), 1, 1), (Some(2), 1, 1), (None, 3, 3)]
        );
    }

    #[test]
    fn a_fault_aimed_at_one_consumer_is_not_charged_with_anothers_rows() {
        let plan = plan();
        let record = record(vec![
            fault(2, "kill", 23_000, 23_100),
            fault(2, "kill", 25_000, 25_100),
        ]);
        let diff = [
            wrong("careless", "orders", "order_id=1"),
            wrong("correct", "orders", "order_id=1"),
        ];
        let rows = blame(&plan, &record, &diff, |_, _| Some(24_000));
        assert_eq!(rows[0].fault, Some(1));
        assert_eq!(rows[1].fault, None);
    }

    #[test]
    fn the_lag_bounds_what_a_fault_holds_its_last_occurrence_takes_it_and_overlaps_count() {
        let plan = plan();
        let mut record = record(vec![
            fault(0, "kill", 10_000, 10_100),
            fault(0, "kill", 11_000, 11_100),
            fault(1, "widen-column", 10_500, 10_600),
        ]);
        record.freshness = vec![crate::run::FreshnessRecord {
            consumer: "careless".to_owned(),
            method: "probe".to_owned(),
            step_ms: 500,
            t_ms: vec![9_500, 10_000, 10_500, 11_000],
            lags_ms: vec![3_000, 3_000, 3_000, 3_000],
            table: "orders".to_owned(),
            p50_ms: 3_000,
            p99_ms: 3_000,
            max_ms: 3_000,
            snapshots: 4,
            note: None,
        }];
        let diff = [
            wrong("careless", "orders", "order_id=1"),
            wrong("careless", "orders", "order_id=2"),
        ];
        // 6.5 s: older than every in-flight window (kills 7-10.1 s and
        // 8-11.1 s, the widening from 7.5 s); 9 s: in all three, charged to
        // the later kill and to the widening.
        let last_change =
            |_: &str, key: &str| Some(if key == "order_id=1" { 6_500 } else { 9_000 });
        let rows = blame(&plan, &record, &diff, last_change);
        let damage = damage_by_fault(&rows);
        assert_eq!(
            damage
                .iter()
                .map(|d| (d.fault, d.rows, d.alone))
                .collect::<Vec<_>>(),
            [(Some(1), 1, 0), (Some(2), 1, 0), (None, 1, 1)]
        );
    }
}
