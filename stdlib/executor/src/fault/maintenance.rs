//! `compact table T` and `expire snapshots`: the lake's maintenance, run
//! by the executor in every consumer's lake while the consumers commit, so
//! each maintenance commit races theirs under the base check
//! (`lossproof_runtime::lake`'s compaction and expiry). Who won and lost is
//! tallied per consumer lake in the seed's record ([`Races`]).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use iceberg::{NamespaceIdent, TableIdent};
use lossproof_runtime::lake::{CommitError, Compacted, MaintenanceError, Retain};
use serde::{Deserialize, Serialize};

use super::{Fired, Strike, name_arg};
use crate::error::Error;
use crate::seed::Seed;

/// `expire snapshots` keeps the snapshots committed in the last this-long
/// (and always each table's current one): a compressed stand-in for
/// Iceberg's default of five days.
pub const EXPIRE_OLDER_THAN: Duration = Duration::from_secs(10);

/// Files modified less than this long ago are never deleted as orphans: a
/// consumer may have written them for a commit it has not made yet
/// (SINKS.md trap 15). Iceberg's own default is three days.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(30);

/// How often `expire snapshots` retries a table whose expiry lost the race
/// to a consumer's commit (each try re-reads the table).
const EXPIRE_TRIES: usize = 3;

/// The maintenance commits in one consumer's lake during a seed, and how
/// they fared against the consumer's own commits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Races {
    /// Compactions committed (the consumer's next commit against the old
    /// table then conflicts).
    pub compactions_won: u64,
    /// Compactions refused because the consumer committed after they read.
    pub compactions_lost: u64,
    /// Compactions with nothing to do (one data file, no deletes).
    pub compactions_idle: u64,
    /// Snapshot expiries committed, and those that lost every try.
    pub expiries_won: u64,
    pub expiries_lost: u64,
    pub snapshots_expired: u64,
    pub orphan_files_deleted: u64,
    /// The compactor process's compactions that raised an error (it logs
    /// them and goes on), and those it did not live to finish (killed
    /// between its `start` and its outcome: see [`CompactionEvent`]).
    #[serde(default)]
    pub compactions_failed: u64,
    #[serde(default)]
    pub compactions_interrupted: u64,
    /// Commits of the consumer itself refused by the base check, counted
    /// from its log once it stopped: the careless consumer drops the batch
    /// part, the correct one reloads and re-applies.
    pub consumer_conflicts: u64,
}

impl std::ops::AddAssign<&Races> for Races {
    fn add_assign(&mut self, other: &Races) {
        self.compactions_won += other.compactions_won;
        self.compactions_lost += other.compactions_lost;
        self.compactions_idle += other.compactions_idle;
        self.compactions_failed += other.compactions_failed;
        self.compactions_interrupted += other.compactions_interrupted;
        self.expiries_won += other.expiries_won;
        self.expiries_lost += other.expiries_lost;
        self.snapshots_expired += other.snapshots_expired;
        self.orphan_files_deleted += other.orphan_files_deleted;
        self.consumer_conflicts += other.consumer_conflicts;
    }
}

/// One line of the compactor process's record (`lossproof compact
/// --every-ms … --record FILE`): a `start` before each compaction, then its
/// outcome. A `start` without an outcome is a compaction the process did
/// not live to finish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionEvent {
    pub consumer: String,
    pub table: String,
    pub event: Event,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Event {
    Start,
    Won,
    Lost,
    Idle,
    Failed,
}

/// The compactor process's compactions, per consumer lake, from its
/// record. A line cut short by a kill is not an event (it counts as an
/// interrupted compaction through its missing outcome).
#[must_use]
pub fn tally_record(text: &str) -> BTreeMap<String, Races> {
    let mut races: BTreeMap<String, Races> = BTreeMap::new();
    let mut started: BTreeMap<String, u64> = BTreeMap::new();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<CompactionEvent>(line) else {
            continue;
        };
        let r = races.entry(event.consumer.clone()).or_default();
        match event.event {
            Event::Start => *started.entry(event.consumer).or_default() += 1,
            Event::Won => r.compactions_won += 1,
            Event::Lost => r.compactions_lost += 1,
            Event::Idle => r.compactions_idle += 1,
            Event::Failed => r.compactions_failed += 1,
        }
    }
    for (consumer, n) in started {
        let r = races.entry(consumer).or_default();
        let ended =
            r.compactions_won + r.compactions_lost + r.compactions_idle + r.compactions_failed;
        r.compactions_interrupted = n.saturating_sub(ended);
    }
    races
}

/// The namespaces of the consumers under test, by consumer name.
async fn lakes(seed: &Seed<'_>) -> Vec<(String, NamespaceIdent)> {
    seed.consumers
        .lock()
        .await
        .keys()
        .map(|c| {
            (
                c.clone(),
                NamespaceIdent::new(lossproof_consumers::namespace(c, &seed.names)),
            )
        })
        .collect()
}

/// Run `work` on a thread of its own (with a runtime of its own), not on
/// the run's two async workers: a compaction reads and rewrites a whole
/// table, seconds of CPU that would otherwise hold a worker the seed's
/// workload, probe and follower need (measured: with two compactions on
/// the workers, a 100/s workload fell to 0-80 operations/s for 17 s).
/// The thread runs at the lowest CPU priority (`nice` 19): teams run
/// maintenance on other machines than their consumers, and on one machine
/// a debug build's compaction (up to 27 s of one of two cores, measured in
/// CI) starved the pipeline under test, both lakes 10-12 s behind while it
/// ran: the lag was lossproof's, not the consumer's.
async fn apart<F>(work: F) -> Result<F::Output, Error>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    crate::niced::spawn("lossproof-maintenance", 19, work)
        .map_err(Error::io("a thread for maintenance"))?
        .await
        .map_err(|_| Error::Refused("the maintenance thread failed".to_owned()))?
        .map_err(Error::io("a runtime for maintenance"))
}

fn tally(seed: &Seed<'_>, consumer: &str, update: impl FnOnce(&mut Races)) {
    let mut races = seed
        .races
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    update(races.entry(consumer.to_owned()).or_default());
}

/// Compact table `table` in every consumer's lake, one after the other.
/// Fired when it acted in at least one lake (won OR lost: a lost race is
/// what the scenario provokes); not fired when every lake was compact.
pub async fn compact(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let table = name_arg(strike.action, "table")?;
    let mut done = Vec::new();
    let mut idle = Vec::new();
    for (consumer, namespace) in lakes(seed).await {
        let ident = TableIdent::new(namespace, table.to_owned());
        let endpoints = seed.endpoints.clone();
        let outcome = apart(async move {
            let lake = endpoints.open_lake().await.map_err(Error::from)?;
            lake.compact(&ident).await.map_err(Error::from)
        })
        .await??;
        let line = format!("{consumer}: {}", outcome.describe(table));
        tally(seed, &consumer, |r| match outcome {
            Compacted::Won { .. } => r.compactions_won += 1,
            Compacted::Lost { .. } => r.compactions_lost += 1,
            Compacted::NothingToDo { .. } => r.compactions_idle += 1,
        });
        if matches!(outcome, Compacted::NothingToDo { .. }) {
            idle.push(line);
        } else {
            done.push(line);
        }
    }
    if done.is_empty() {
        return Err(Error::NotFired(if idle.is_empty() {
            "no consumer lake to compact".to_owned()
        } else {
            idle.join("; ")
        }));
    }
    done.extend(idle);
    Ok(done.join("; "))
}

/// In every table of every consumer's lake: expire the snapshots older than
/// [`EXPIRE_OLDER_THAN`] (each table's current one always stays), then
/// delete the files nothing references any more, older than
/// [`ORPHAN_GRACE`]. Fired when it expired or deleted anything.
pub async fn expire(seed: &Seed<'_>, _strike: &Strike<'_>) -> Fired {
    let mut lines = Vec::new();
    let mut acted = false;
    for (consumer, namespace) in lakes(seed).await {
        let tables = seed
            .lake
            .catalog()
            .list_tables(&namespace)
            .await
            .map_err(Error::iceberg(format!("list the tables of {namespace:?}")))?;
        let (mut expired, mut deleted, mut lost, mut moving) = (0u64, 0u64, 0u64, 0u64);
        for ident in tables {
            if let Some(n) = expire_table(seed, &ident).await? {
                expired += n;
                tally(seed, &consumer, |r| {
                    r.expiries_won += 1;
                    r.snapshots_expired += n;
                });
            } else {
                lost += 1;
                tally(seed, &consumer, |r| r.expiries_lost += 1);
            }
            let orphans = match seed.lake.delete_orphan_files(&ident, ORPHAN_GRACE).await {
                Ok(orphans) => orphans,
                // The consumer committed during every listing: nothing
                // deleted in this table, the others still tried.
                Err(MaintenanceError::KeptChanging { .. }) => {
                    moving += 1;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let n = orphans.deleted.len() as u64;
            deleted += n;
            tally(seed, &consumer, |r| r.orphan_files_deleted += n);
        }
        acted |= expired > 0 || deleted > 0;
        lines.push(format!(
            "{consumer}: {expired} snapshots expired, {deleted} unreferenced files deleted{}{}",
            if lost > 0 {
                format!(", {lost} tables lost every try to the consumer's commits")
            } else {
                String::new()
            },
            if moving > 0 {
                format!(", {moving} tables changed during every listing of their files (no file deleted there)")
            } else {
                String::new()
            }
        ));
    }
    if acted {
        Ok(lines.join("; "))
    } else {
        Err(Error::NotFired(format!(
            "nothing to expire or delete: {}",
            lines.join("; ")
        )))
    }
}

/// Expire `ident`'s old snapshots: `Some(how many)`, or `None` when every
/// try lost the race to another commit.
async fn expire_table(seed: &Seed<'_>, ident: &TableIdent) -> Result<Option<u64>, Error> {
    for _ in 0..EXPIRE_TRIES {
        let base = seed
            .lake
            .catalog()
            .load_table(ident)
            .await
            .map_err(Error::iceberg(format!("load {ident}")))?;
        let cutoff = SystemTime::now()
            .checked_sub(EXPIRE_OLDER_THAN)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        match seed
            .lake
            .expire_snapshots(&base, Retain::NewerThan(cutoff))
            .await
        {
            Ok(expired) => return Ok(Some(expired.snapshot_ids.len() as u64)),
            // A consumer committed after the read: read again.
            Err(CommitError::Conflict { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outcomes are counted per lake; a `start` the process did not live
    /// to end is an interrupted compaction; a line cut short by a kill is
    /// skipped, never an error.
    #[test]
    fn the_compactor_record_tallies_per_lake() {
        let line = |consumer: &str, event: &str| {
            format!(r#"{{"consumer":"{consumer}","table":"orders","event":"{event}"}}"#)
        };
        let text = [
            line("careless", "start"),
            line("careless", "won"),
            line("careless", "start"),
            line("careless", "lost"),
            line("correct", "start"),
            line("correct", "idle"),
            line("correct", "start"),
            line("correct", "failed"),
            line("careless", "start"),
            r#"{"consumer":"careless","tab"#.to_owned(),
        ]
        .join("\n");
        let races = tally_record(&text);
        let careless = &races["careless"];
        assert_eq!(
            (
                careless.compactions_won,
                careless.compactions_lost,
                careless.compactions_interrupted
            ),
            (1, 1, 1)
        );
        let correct = &races["correct"];
        assert_eq!(
            (
                correct.compactions_idle,
                correct.compactions_failed,
                correct.compactions_interrupted
            ),
            (1, 1, 0)
        );
    }
}
