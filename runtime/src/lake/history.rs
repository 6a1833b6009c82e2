//! A table's history as a follower reads it: the snapshots committed after
//! one it has seen, and the files each of them added. What a reader that
//! keeps up with a table incrementally needs (the correct consumer's key
//! index, the executor's snapshot follower), so it reads only what changed.

use iceberg::spec::{DataContentType, DataFileFormat, ManifestEntry, ManifestStatus};
use iceberg::table::Table;

/// Where a follower is in one lake table: the metadata file it last loaded,
/// the table's uuid (a new one: the table was replaced) and the snapshot it
/// last read (-1: none yet).
#[derive(Debug, Clone)]
pub struct Cursor {
    pub location: Option<String>,
    pub uuid: Option<String>,
    pub seen: i64,
}

impl Default for Cursor {
    fn default() -> Self {
        Self {
            location: None,
            uuid: None,
            seen: -1,
        }
    }
}

impl Cursor {
    /// The table again, unless `locations` (the catalog's current metadata
    /// file per table of the namespace, where it can list them:
    /// [`crate::Lake::metadata_locations`]) says it has not changed since
    /// the last load: loading parses its whole metadata file, so a follower
    /// polling every 100 ms loads only what changed. `Ok(None)` also while
    /// the table was never there (its writer has not created it yet).
    ///
    /// # Errors
    /// The table cannot be loaded though it was loaded before.
    pub async fn load(
        &mut self,
        lake: &crate::Lake,
        namespace: &str,
        table: &str,
        locations: Option<&std::collections::HashMap<String, String>>,
    ) -> Result<Option<Table>, String> {
        if let Some(locations) = locations
            && self.location.is_some()
            && locations.get(table) == self.location.as_ref()
        {
            return Ok(None);
        }
        let ident = crate::lake::ident(namespace, table);
        let loaded = match lake.catalog().load_table(&ident).await {
            Ok(loaded) => loaded,
            Err(_) if self.uuid.is_none() => return Ok(None),
            Err(e) => return Err(format!("load {ident}: {e}")),
        };
        self.location = loaded.metadata_location().map(str::to_owned);
        Ok(Some(loaded))
    }
}

/// The snapshots of `table` committed after snapshot `seen`, oldest first,
/// along the current snapshot's ancestry: all of them when `seen` is -1
/// (nothing seen yet), `None` when `seen` is not an ancestor of the current
/// snapshot (it expired, or the table was rolled back or replaced).
#[must_use]
pub fn since(table: &Table, seen: i64) -> Option<Vec<i64>> {
    since_from(table, table.metadata().current_snapshot(), seen)
}

/// [`since`] along the ancestry of `head` (a branch's head: a writer
/// following what it staged there) instead of the current snapshot's.
#[must_use]
pub fn since_from(
    table: &Table,
    head: Option<&iceberg::spec::SnapshotRef>,
    seen: i64,
) -> Option<Vec<i64>> {
    let metadata = table.metadata();
    let mut since = Vec::new();
    let mut at = head;
    // Bounded by the snapshot count: a corrupt parent cycle cannot loop.
    for _ in 0..metadata.snapshots().len() {
        let Some(snapshot) = at else { break };
        if snapshot.snapshot_id() == seen {
            break;
        }
        since.push(snapshot.snapshot_id());
        at = snapshot
            .parent_snapshot_id()
            .and_then(|parent| metadata.snapshot_by_id(parent));
    }
    let reached = match at {
        Some(snapshot) => snapshot.snapshot_id() == seen,
        None => seen == -1,
    };
    reached.then(|| {
        since.reverse();
        since
    })
}

/// Whether snapshot `snapshot` of `table` was ever a reader's current
/// snapshot: the table's current one after some catalog commit. A writer
/// may add several snapshots in one commit (pyiceberg's `Table.upsert`: a
/// delete, then an append, one metadata file); the ones before the last
/// were never current, and no reader of the catalog could see them.
///
/// Told from the table's own logs (Iceberg spec, "Table Metadata"): the
/// snapshot log has an entry each time the current snapshot changed, and
/// the metadata log the `last-updated-ms` of each earlier metadata file,
/// that is, when each catalog commit was made. An entry was current after
/// a commit when some commit's time falls between it and the next entry.
/// Writers that follow Java's builder (iceberg-rust's too) drop the
/// entries of snapshots that were never current; writers that do not
/// (pyiceberg) are told by the times. Where the logs do not reach back
/// that far, or two entries share a millisecond, the answer is `true`:
/// a state of doubt is checked, never skipped.
#[must_use]
pub fn published(table: &Table, snapshot: i64) -> bool {
    let metadata = table.metadata();
    if metadata.current_snapshot_id() == Some(snapshot) {
        return true;
    }
    let Some(timestamp_ms) = metadata.snapshot_by_id(snapshot).map(|s| s.timestamp_ms()) else {
        return true;
    };
    let log: Vec<(i64, i64)> = metadata
        .history()
        .iter()
        .map(|e| (e.snapshot_id, e.timestamp_ms))
        .collect();
    let commits: Vec<i64> = metadata
        .metadata_log()
        .iter()
        .map(|m| m.timestamp_ms)
        .chain([metadata.last_updated_ms()])
        .collect();
    was_current(snapshot, timestamp_ms, &log, &commits)
}

/// [`published`] over the logs: `log` the snapshot log (id, time) and
/// `commits` the times of the catalog commits the metadata log still
/// lists, the current one's last, both oldest first.
fn was_current(snapshot: i64, timestamp_ms: i64, log: &[(i64, i64)], commits: &[i64]) -> bool {
    let Some(at) = log.iter().rposition(|(id, _)| *id == snapshot) else {
        // Not in the snapshot log though the log reaches back past it: a
        // writer that follows the spec left it out, as never current.
        return log.first().is_none_or(|(_, first)| *first > timestamp_ms);
    };
    let from = log[at].1;
    let until = log.get(at + 1).map_or(i64::MAX, |(_, t)| *t);
    let reaches_back = commits.first().is_some_and(|first| *first <= from);
    !reaches_back || until <= from || commits.iter().any(|c| from <= *c && *c < until)
}

/// One file a snapshot added or removed.
#[derive(Debug, Clone)]
pub struct FileChange {
    pub path: String,
    pub content: DataContentType,
    /// Added (else removed) by the snapshot.
    pub added: bool,
    /// Its data sequence number.
    pub sequence_number: Option<i64>,
    /// An equality-delete file's columns (field ids).
    pub equality_ids: Vec<i32>,
    pub format: DataFileFormat,
}

impl FileChange {
    fn of(entry: &ManifestEntry, added: bool) -> Self {
        Self {
            path: entry.file_path().to_owned(),
            content: entry.data_file().content_type(),
            added,
            sequence_number: entry.sequence_number(),
            equality_ids: entry.data_file().equality_ids().unwrap_or_default(),
            format: entry.file_format(),
        }
    }
}

/// The files (data and delete) snapshot `snapshot` of `table` added, with
/// their content type, in manifest order.
///
/// # Errors
/// When the snapshot is not in the table's metadata (expired), or a
/// manifest cannot be read.
pub async fn added_files(
    table: &Table,
    snapshot: i64,
) -> iceberg::Result<Vec<(String, DataContentType)>> {
    Ok(changes(table, snapshot)
        .await?
        .into_iter()
        .filter(|c| c.added)
        .map(|c| (c.path, c.content))
        .collect())
}

/// The files snapshot `snapshot` of `table` added and removed, in manifest
/// order: what a reader following the table one snapshot at a time applies.
///
/// # Errors
/// When the snapshot is not in the table's metadata (expired), or a
/// manifest cannot be read.
pub async fn changes(table: &Table, snapshot: i64) -> iceberg::Result<Vec<FileChange>> {
    let metadata = table.metadata();
    let Some(snapshot) = metadata.snapshot_by_id(snapshot) else {
        return Err(iceberg::Error::new(
            iceberg::ErrorKind::DataInvalid,
            format!(
                "{}: snapshot {snapshot} is not in the table's metadata (expired)",
                table.identifier()
            ),
        ));
    };
    let list = table.manifest_list_reader(snapshot).load().await?;
    let mut out = Vec::new();
    for manifest_file in list.entries() {
        if manifest_file.added_snapshot_id != snapshot.snapshot_id() {
            continue;
        }
        let manifest = manifest_file.load_manifest(table.file_io()).await?;
        out.extend(
            manifest
                .entries()
                .iter()
                .filter(|e| e.snapshot_id() == Some(snapshot.snapshot_id()))
                .filter_map(|e| match e.status() {
                    ManifestStatus::Added => Some(FileChange::of(e, true)),
                    ManifestStatus::Deleted => Some(FileChange::of(e, false)),
                    ManifestStatus::Existing => None,
                }),
        );
    }
    Ok(out)
}

/// Every live file of `table`'s current snapshot, as if that snapshot had
/// added them all (what a follower that lost its place starts again from).
///
/// # Errors
/// When a manifest cannot be read.
pub async fn live(table: &Table) -> iceberg::Result<Vec<FileChange>> {
    super::compact::live_entries(table, None, |e| FileChange::of(e, true)).await
}

#[cfg(test)]
mod tests {
    use super::was_current;

    #[test]
    fn a_snapshot_replaced_in_its_own_commit_was_never_current() {
        // pyiceberg's upsert: commit at 100 (snapshot 1), then one commit
        // adding a delete (2, at 205) and an append (3, at 210): its
        // metadata file's time is 210.
        let log = [(1, 100), (2, 205), (3, 210)];
        let commits = [100, 210];
        assert!(was_current(1, 100, &log, &commits));
        assert!(!was_current(2, 205, &log, &commits));
        assert!(was_current(3, 210, &log, &commits));
    }

    #[test]
    fn two_commits_make_two_states() {
        // The careless consumer: a delete commit, then an append commit.
        let log = [(1, 100), (2, 205), (3, 210)];
        let commits = [100, 205, 210];
        assert!(was_current(2, 205, &log, &commits));
    }

    #[test]
    fn doubt_is_checked() {
        // A spec writer left 2 out of the log: never current.
        assert!(!was_current(2, 205, &[(1, 100), (3, 210)], &[100, 210]));
        // The log does not reach back to it (cleared at an expiry), nor
        // the metadata log (its older files dropped), or a tie.
        assert!(was_current(2, 205, &[(3, 210)], &[100, 210]));
        assert!(was_current(2, 205, &[(1, 100), (2, 205), (3, 210)], &[210]));
        assert!(was_current(
            2,
            205,
            &[(1, 100), (2, 205), (3, 205)],
            &[100, 205]
        ));
    }
}
