//! Table maintenance: snapshot expiry, orphan-file deletion, and finding a
//! writer's summary properties (its offsets) behind snapshots that do not
//! carry them.
//!
//! - [`Lake::expire_snapshots`] removes old snapshots from the METADATA
//!   (committed with the base check, [`Lake::commit_metadata`]); their files
//!   stay on disk. iceberg-rust's own expiry does the same and no more.
//! - [`Lake::delete_orphan_files`] then deletes, under the table's `data/`
//!   and `metadata/` folders, every file nothing references any more, except
//!   files younger than the caller's grace period (a concurrent writer may be
//!   about to commit them: data files, manifests and a metadata file are
//!   written BEFORE the catalog points at them).
//! - [`latest_property`] walks from the current snapshot through its parents
//!   and returns the first value of a summary property: a consumer's offsets
//!   after compaction snapshots that did not carry them. The walk stops at an
//!   expired parent, so compaction should carry the writer's properties
//!   forward ([`latest_properties`] + [`super::Commit::with_properties`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use iceberg::TableIdent;
use iceberg::spec::TableMetadataBuilder;
use iceberg::table::Table;

use super::{CommitError, Lake};

/// Which snapshots [`Lake::expire_snapshots`] keeps (besides the current
/// one and any other branch or tag head, which are always kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retain {
    /// The newest `n` snapshots (by sequence number).
    Last(usize),
    /// Snapshots committed at or after this time.
    NewerThan(SystemTime),
}

/// What [`Lake::expire_snapshots`] did.
#[derive(Debug)]
pub struct Expired {
    /// The table after the expiry (`base` itself if nothing expired).
    pub table: Table,
    /// The ids of the removed snapshots, oldest first.
    pub snapshot_ids: Vec<i64>,
}

/// What [`Lake::delete_orphan_files`] found and did.
#[derive(Debug, Default)]
pub struct OrphanFiles {
    /// Unreferenced files deleted.
    pub deleted: Vec<PathBuf>,
    /// Unreferenced files left alone: younger than the grace period.
    pub young: Vec<PathBuf>,
    /// Files on disk the table references (kept).
    pub referenced: usize,
}

/// Why maintenance failed.
#[derive(Debug, thiserror::Error)]
pub enum MaintenanceError {
    #[error(transparent)]
    Commit(#[from] CommitError),
    #[error("maintenance of {table} failed: {source}")]
    Iceberg {
        table: TableIdent,
        #[source]
        source: iceberg::Error,
    },
    #[error("maintenance of {table}: {what}: {source}")]
    Io {
        table: TableIdent,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("maintenance of {table}: {reason}")]
    Refused { table: TableIdent, reason: String },
    /// Writers committed during every listing of the table's files: nothing
    /// was deleted; a later run may find the table still.
    #[error(
        "maintenance of {table}: the table kept changing while its files were listed; try again"
    )]
    KeptChanging { table: TableIdent },
}

impl Lake {
    /// Remove from `base`'s metadata every snapshot `retain` does not keep;
    /// the current snapshot and branch/tag heads always stay. Committed with
    /// the base check ([`CommitError::Conflict`] if the table changed since
    /// `base` was read). Files are not deleted: see
    /// [`Lake::delete_orphan_files`].
    pub async fn expire_snapshots(
        &self,
        base: &Table,
        retain: Retain,
    ) -> Result<Expired, CommitError> {
        let meta = base.metadata();
        let iceberg = |source| CommitError::Iceberg {
            table: base.identifier().clone(),
            source,
        };
        let expired = expirable(base, retain).map_err(iceberg)?;
        if expired.is_empty() {
            return Ok(Expired {
                table: base.clone(),
                snapshot_ids: expired,
            });
        }
        let metadata = TableMetadataBuilder::new_from_metadata(
            meta.clone(),
            base.metadata_location().map(str::to_owned),
        )
        .remove_snapshots(&expired)
        .build()
        .map_err(iceberg)?
        .metadata;
        let table = self.commit_metadata(base, &metadata).await?;
        Ok(Expired {
            table,
            snapshot_ids: expired,
        })
    }

    /// Delete every file under the table's `data/` and `metadata/` folders
    /// that the table, as the catalog has it NOW, does not reference: not
    /// the current metadata file, nor one in its metadata log, nor a
    /// statistics file, nor a manifest list, manifest or live data/delete
    /// file of a remaining snapshot. Files modified less than `grace` ago are
    /// kept whatever they are (a concurrent writer may be about to commit
    /// them; a writer slower than `grace` between writing a file and
    /// committing it would lose it). Only local (`file:`) tables.
    pub async fn delete_orphan_files(
        &self,
        ident: &TableIdent,
        grace: Duration,
    ) -> Result<OrphanFiles, MaintenanceError> {
        let iceberg = |source| MaintenanceError::Iceberg {
            table: ident.clone(),
            source,
        };
        // The head moves while we list: recompute until it held still.
        for _ in 0..5 {
            let table = self.catalog().load_table(ident).await.map_err(iceberg)?;
            let referenced = referenced_files(self, &table).await.map_err(iceberg)?;
            let root = local_path(table.metadata().location()).ok_or_else(|| {
                MaintenanceError::Refused {
                    table: ident.clone(),
                    reason: format!(
                        "{} is not a local file: location",
                        table.metadata().location()
                    ),
                }
            })?;
            let mut on_disk = Vec::new();
            for folder in ["data", "metadata"] {
                list_files(&root.join(folder), &mut on_disk).map_err(|(path, source)| {
                    MaintenanceError::Io {
                        table: ident.clone(),
                        what: format!("list {}", path.display()),
                        source,
                    }
                })?;
            }
            let head = self.catalog().load_table(ident).await.map_err(iceberg)?;
            if head.metadata_location() != table.metadata_location() {
                continue;
            }
            let now = SystemTime::now();
            let mut report = OrphanFiles::default();
            for (path, modified) in on_disk {
                // A Hadoop-style pointer file is not listed anywhere.
                if referenced.contains(&path) || path.ends_with("version-hint.text") {
                    report.referenced += 1;
                } else if now.duration_since(modified).unwrap_or_default() < grace {
                    report.young.push(path);
                } else {
                    match std::fs::remove_file(&path) {
                        Ok(()) => report.deleted.push(path),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(source) => {
                            return Err(MaintenanceError::Io {
                                table: ident.clone(),
                                what: format!("delete {}", path.display()),
                                source,
                            });
                        }
                    }
                }
            }
            return Ok(report);
        }
        Err(MaintenanceError::KeptChanging {
            table: ident.clone(),
        })
    }
}

/// The first value of summary property `key` walking from the current
/// snapshot through its parents (None if no remaining snapshot has it).
#[must_use]
pub fn latest_property(table: &Table, key: &str) -> Option<String> {
    ancestors(table).find_map(|s| s.summary().additional_properties.get(key).cloned())
}

/// The snapshots of `base` that `retain` does not keep, oldest first: never
/// the current one nor a branch or tag head.
pub(super) fn expirable(base: &Table, retain: Retain) -> iceberg::Result<Vec<i64>> {
    let mut keep = ref_heads(base)?;
    let mut snapshots: Vec<_> = base.metadata().snapshots().collect();
    snapshots.sort_by_key(|s| std::cmp::Reverse((s.sequence_number(), s.timestamp_ms())));
    match retain {
        Retain::Last(n) => keep.extend(snapshots.iter().take(n).map(|s| s.snapshot_id())),
        Retain::NewerThan(when) => {
            let cutoff = millis(when);
            keep.extend(
                snapshots
                    .iter()
                    .filter(|s| s.timestamp_ms() >= cutoff)
                    .map(|s| s.snapshot_id()),
            );
        }
    }
    Ok(snapshots
        .iter()
        .rev()
        .map(|s| s.snapshot_id())
        .filter(|id| !keep.contains(id))
        .collect())
}

/// For every summary property whose key starts with `prefix`, its latest
/// value as [`latest_property`] finds it: what a compaction or other
/// maintenance commit passes to [`super::Commit::with_properties`] so the
/// writer's properties (`lossproof.*` offsets) stay on the current snapshot.
#[must_use]
pub fn latest_properties(table: &Table, prefix: &str) -> HashMap<String, String> {
    latest_properties_on(table, iceberg::spec::MAIN_BRANCH, prefix)
}

/// [`latest_properties`] from the head of branch `branch` (main's current
/// snapshot when there is no such branch): a writer staging its commits on
/// a branch ([`super::Commit::on_branch`]) resumes from what it staged.
#[must_use]
pub fn latest_properties_on(table: &Table, branch: &str, prefix: &str) -> HashMap<String, String> {
    let mut found = HashMap::new();
    for snapshot in ancestors_from(table, super::head(table.metadata(), branch)) {
        for (key, value) in &snapshot.summary().additional_properties {
            if key.starts_with(prefix) && !found.contains_key(key) {
                found.insert(key.clone(), value.clone());
            }
        }
    }
    found
}

/// The current snapshot, its parent, …, up to the first one missing
/// (expired) or the first snapshot of the table.
fn ancestors(table: &Table) -> impl Iterator<Item = &iceberg::spec::SnapshotRef> {
    ancestors_from(table, table.metadata().current_snapshot())
}

/// `head`, its parent, … (as [`ancestors`]).
fn ancestors_from<'a>(
    table: &'a Table,
    head: Option<&'a iceberg::spec::SnapshotRef>,
) -> impl Iterator<Item = &'a iceberg::spec::SnapshotRef> {
    let meta = table.metadata();
    let mut next = head;
    // Bounded by the snapshot count: a corrupt parent cycle cannot loop.
    (0..meta.snapshots().len()).map_while(move |_| {
        let snapshot = next?;
        next = snapshot
            .parent_snapshot_id()
            .and_then(|id| meta.snapshot_by_id(id));
        Some(snapshot)
    })
}

/// Snapshots a branch or tag points at (the crate keeps `refs` private: read
/// them from the metadata's JSON form).
fn ref_heads(table: &Table) -> iceberg::Result<HashSet<i64>> {
    let meta = table.metadata();
    let json = serde_json::to_value(meta).map_err(|e| {
        iceberg::Error::new(
            iceberg::ErrorKind::Unexpected,
            "cannot serialise table metadata",
        )
        .with_source(e)
    })?;
    let mut heads: HashSet<i64> = json
        .get("refs")
        .and_then(serde_json::Value::as_object)
        .into_iter()
        .flat_map(|refs| refs.values())
        .filter_map(|r| r.get("snapshot-id").and_then(serde_json::Value::as_i64))
        .collect();
    heads.extend(meta.current_snapshot_id());
    Ok(heads)
}

/// Every local file `table` references (see [`Lake::delete_orphan_files`]).
async fn referenced_files(lake: &Lake, table: &Table) -> iceberg::Result<HashSet<PathBuf>> {
    let meta = table.metadata();
    let mut locations: Vec<String> = Vec::new();
    locations.push(table.metadata_location_result()?.to_owned());
    locations.extend(meta.metadata_log().iter().map(|l| l.metadata_file.clone()));
    locations.extend(meta.statistics_iter().map(|s| s.statistics_path.clone()));
    locations.extend(
        meta.partition_statistics_iter()
            .map(|s| s.statistics_path.clone()),
    );
    let mut manifests_seen = HashSet::new();
    for snapshot in meta.snapshots() {
        locations.push(snapshot.manifest_list().to_owned());
        let list = table.manifest_list_reader(snapshot).load().await?;
        for manifest_file in list.entries() {
            if !manifests_seen.insert(manifest_file.manifest_path.clone()) {
                continue;
            }
            locations.push(manifest_file.manifest_path.clone());
            let manifest = lake.manifest(table, manifest_file).await?;
            locations.extend(
                manifest
                    .entries()
                    .iter()
                    .filter(|e| e.is_alive())
                    .map(|e| e.file_path().to_owned()),
            );
        }
    }
    Ok(locations.iter().filter_map(|l| local_path(l)).collect())
}

/// `file:///a/b`, `file:/a/b` or `/a/b` as a path; None for other schemes.
fn local_path(location: &str) -> Option<PathBuf> {
    let path = location
        .strip_prefix("file://")
        .or_else(|| location.strip_prefix("file:"))
        .unwrap_or(location);
    path.starts_with('/').then(|| PathBuf::from(path))
}

/// Every regular file under `dir` (recursively) with its modification time;
/// a missing `dir` has none.
fn list_files(
    dir: &Path,
    out: &mut Vec<(PathBuf, SystemTime)>,
) -> Result<(), (PathBuf, std::io::Error)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err((dir.to_owned(), e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| (dir.to_owned(), e))?;
        let path = entry.path();
        let file_type = entry.file_type().map_err(|e| (path.clone(), e))?;
        if file_type.is_dir() {
            list_files(&path, out)?;
        } else if file_type.is_file() {
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .map_err(|e| (path.clone(), e))?;
            out.push((path, modified));
        }
    }
    Ok(())
}

fn millis(when: SystemTime) -> i64 {
    when.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
