//! Compaction: every live row of a table rewritten, in key order (the
//! table's identifier fields), into as few data files as the rolling writer
//! makes, replacing every live data AND delete file, in one `replace`
//! snapshot under the base check. Written in key order, the files' key
//! ranges do not overlap, so a read in key order (the reconciler's) sorts
//! one file at a time instead of the table (super::ordered).
//!
//! What a compaction must get right (../shared/design/SINKS.md):
//! - the rows are read with the deletes applied ([`super::read::visible_rows`])
//!   at the snapshot the compaction read, and the new files keep THAT
//!   snapshot's sequence number as their data sequence number, so an
//!   equality delete committed after it would still apply to them (with the
//!   base check none can be: any commit after the read is a conflict);
//! - the writers' summary properties (`lossproof.*`: the correct consumer's
//!   offsets) are carried onto the compaction's snapshot, so expiring the
//!   snapshots behind it does not lose them;
//! - a compaction that loses the race (a consumer committed after it read)
//!   is NOT rebased: it reports [`Compacted::Lost`] and leaves its files as
//!   orphans for [`Lake::delete_orphan_files`]. The consumer that won keeps
//!   its commit; the one that would have lost (a commit after compaction's)
//!   gets [`CommitError::Conflict`] and handles it as it handles any
//!   conflict: the correct consumer reloads and re-applies, the careless one
//!   logs and drops its batch.

use std::time::{Duration, Instant};

use iceberg::TableIdent;
use iceberg::spec::{DataContentType, ManifestEntry};
use iceberg::table::Table;

use super::maintenance::MaintenanceError;
use super::{Commit, CommitError, Lake, latest_properties, write_data_files};

/// Summary properties with this prefix are carried onto a compaction's
/// snapshot (the consumers' offsets and markers).
pub const CARRIED_PREFIX: &str = "lossproof.";

/// The batches a compaction hands the writer, once sorted.
const SORTED_BATCH_ROWS: usize = 65_536;

/// A live file of a table's current snapshot.
#[derive(Debug, Clone)]
pub struct LiveFile {
    pub path: String,
    pub content: DataContentType,
    /// Its data sequence number (inherited from the snapshot that added it
    /// unless the writer set one: a compaction's files keep their inputs').
    pub sequence_number: Option<i64>,
    pub records: u64,
    pub bytes: u64,
}

/// What one compaction of one table did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compacted {
    /// The replace snapshot was committed.
    Won {
        data_files_in: usize,
        delete_files_in: usize,
        data_files_out: usize,
        rows: u64,
        snapshot_id: Option<i64>,
        elapsed: Duration,
    },
    /// A writer committed after the compaction read the table: nothing
    /// changed (the table, with the other writer's commit, stays as it is).
    Lost { reason: String, elapsed: Duration },
    /// One data file and no delete file (or an empty table): already compact.
    NothingToDo { data_files: usize },
}

impl Compacted {
    /// One line for logs and the `faults` table.
    #[must_use]
    pub fn describe(&self, table: &str) -> String {
        match self {
            Self::Won {
                data_files_in,
                delete_files_in,
                data_files_out,
                rows,
                elapsed,
                ..
            } => format!(
                "{table}: won: {data_files_in} data + {delete_files_in} delete files -> \
                 {data_files_out} data files, {rows} rows, in {:.2}s",
                elapsed.as_secs_f64()
            ),
            Self::Lost { reason, elapsed } => format!(
                "{table}: lost the race after {:.2}s ({reason})",
                elapsed.as_secs_f64()
            ),
            Self::NothingToDo { data_files } => {
                format!("{table}: nothing to do ({data_files} data file, no deletes)")
            }
        }
    }
}

impl Lake {
    /// Compact table `ident` as it is now: read it, rewrite its rows, commit
    /// a replace of every live file against the table as read.
    pub async fn compact(&self, ident: &TableIdent) -> Result<Compacted, MaintenanceError> {
        let base =
            self.catalog()
                .load_table(ident)
                .await
                .map_err(|source| MaintenanceError::Iceberg {
                    table: ident.clone(),
                    source,
                })?;
        self.compact_from(&base).await
    }

    /// Compact `base`, the table as read earlier: lost if any writer
    /// committed since (what [`Lake::compact`] does after its own read).
    pub async fn compact_from(&self, base: &Table) -> Result<Compacted, MaintenanceError> {
        let started = Instant::now();
        let iceberg = |source| MaintenanceError::Iceberg {
            table: base.identifier().clone(),
            source,
        };
        let Some(snapshot) = base.metadata().current_snapshot() else {
            return Ok(Compacted::NothingToDo { data_files: 0 });
        };
        let sequence_number = snapshot.sequence_number();
        let live = collect_live_files(base, Some(self))
            .await
            .map_err(iceberg)?;
        let data_files_in = live
            .iter()
            .filter(|f| f.content == DataContentType::Data)
            .count();
        let delete_files_in = live.len() - data_files_in;
        if data_files_in <= 1 && delete_files_in == 0 {
            return Ok(Compacted::NothingToDo {
                data_files: data_files_in,
            });
        }
        let batches = super::read::visible_rows(base).await.map_err(iceberg)?;
        let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
        let batches: Vec<_> = batches.into_iter().filter(|b| b.num_rows() > 0).collect();
        // In key order: the files then cover key ranges that do not
        // overlap, which a read in key order uses (super::ordered).
        let batches =
            super::ordered::sorted_by_key(base, batches, SORTED_BATCH_ROWS).map_err(|e| {
                iceberg(iceberg::Error::new(
                    iceberg::ErrorKind::Unexpected,
                    e.to_string(),
                ))
            })?;
        let added = if batches.is_empty() {
            Vec::new()
        } else {
            write_data_files(base, batches).await.map_err(iceberg)?
        };
        let data_files_out = added.len();
        let commit = Commit::replace(
            live.into_iter().map(|f| f.path).collect(),
            added,
            sequence_number,
        )
        .with_properties(latest_properties(base, CARRIED_PREFIX));
        match self.commit(base, commit).await {
            Ok(table) => Ok(Compacted::Won {
                data_files_in,
                delete_files_in,
                data_files_out,
                rows,
                snapshot_id: table.metadata().current_snapshot_id(),
                elapsed: started.elapsed(),
            }),
            Err(CommitError::Conflict { .. }) => Ok(Compacted::Lost {
                reason: "a writer committed after it read the table".to_owned(),
                elapsed: started.elapsed(),
            }),
            Err(CommitError::InputGone { path, .. }) => Ok(Compacted::Lost {
                reason: format!("its input {path} is no longer live"),
                elapsed: started.elapsed(),
            }),
            Err(e) => Err(e.into()),
        }
    }
}

/// Table `table` of namespace `namespace` (one level).
#[must_use]
pub fn ident(namespace: &str, table: &str) -> TableIdent {
    TableIdent::new(
        iceberg::NamespaceIdent::new(namespace.to_owned()),
        table.to_owned(),
    )
}

/// Every live data and delete file of `table`'s current snapshot.
pub async fn live_files(table: &Table) -> iceberg::Result<Vec<LiveFile>> {
    collect_live_files(table, None).await
}

/// [`live_files`], reading manifests through `lake`'s cache when given.
async fn collect_live_files(table: &Table, lake: Option<&Lake>) -> iceberg::Result<Vec<LiveFile>> {
    live_entries(table, lake, |entry| LiveFile {
        path: entry.file_path().to_owned(),
        content: entry.data_file().content_type(),
        sequence_number: entry.sequence_number(),
        records: entry.data_file().record_count(),
        bytes: entry.data_file().file_size_in_bytes(),
    })
    .await
}

/// `each` of every live manifest entry (data and delete files) of
/// `table`'s current snapshot, reading manifests through `lake`'s cache
/// when given.
pub(super) async fn live_entries<T>(
    table: &Table,
    lake: Option<&Lake>,
    each: impl Fn(&ManifestEntry) -> T,
) -> iceberg::Result<Vec<T>> {
    live_entries_at(table, table.metadata().current_snapshot(), lake, each).await
}

/// [`live_entries`] of `snapshot` (none: nothing).
pub(super) async fn live_entries_at<T>(
    table: &Table,
    snapshot: Option<&iceberg::spec::SnapshotRef>,
    lake: Option<&Lake>,
    each: impl Fn(&ManifestEntry) -> T,
) -> iceberg::Result<Vec<T>> {
    let Some(snapshot) = snapshot else {
        return Ok(Vec::new());
    };
    let list = table.manifest_list_reader(snapshot).load().await?;
    let mut out = Vec::new();
    for manifest_file in list.entries() {
        let manifest = match lake {
            Some(lake) => lake.manifest(table, manifest_file).await?,
            None => std::sync::Arc::new(manifest_file.load_manifest(table.file_io()).await?),
        };
        out.extend(
            manifest
                .entries()
                .iter()
                .filter(|e| e.is_alive())
                .map(|e| each(e)),
        );
    }
    Ok(out)
}
