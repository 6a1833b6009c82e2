//! Snapshot commits iceberg-rust 0.10 does not have: row deltas (data files
//! plus equality/position delete files), overwrites and replaces (remove
//! live files, add new ones), all with a BASE CHECK and periodic manifest
//! merging.
//!
//! A [`Commit`] is computed against the table a writer READ (`base`). The
//! catalog only accepts it if it still points at `base`'s metadata file
//! (compare-and-swap on `iceberg_tables.metadata_location`); otherwise the
//! writer gets [`CommitError::Conflict`] naming both, and decides itself
//! whether to reload and recompute. iceberg-rust's own `Transaction::commit`
//! would silently rebase instead (../shared/design/ICEBERG.md).
//!
//! What one commit writes, in order:
//! 1. a manifest for the added data files and one for the added delete files;
//! 2. for each existing manifest that holds a removed file, a rewritten one
//!    (the file marked deleted, the rest kept as existing); when there are
//!    more than [`MERGE_MIN_COUNT`] manifests, the small ones are merged into
//!    one (keeps commit latency flat; Iceberg Java does the same with
//!    `commit.manifest.min-count-to-merge`);
//! 3. the manifest list, a snapshot whose summary has the `added-*`,
//!    `deleted-*` and `total-*` counts plus the writer's own properties;
//! 4. the next `vN-….metadata.json`, then the compare-and-swap. A writer
//!    that asked for it ([`Commit::keeping_snapshots`]) expires its older
//!    snapshots in that same metadata file, so the file (written and read
//!    at every commit) does not grow with the number of commits.
//!
//! Files written for a commit that then conflicts are left for
//! [`super::Lake::delete_orphan_files`].

use std::collections::{HashMap, HashSet};
use std::str::FromStr as _;

use iceberg::spec::{
    DataContentType, DataFile, FormatVersion, MAIN_BRANCH, ManifestContentType, ManifestFile,
    ManifestListWriter, ManifestWriter, ManifestWriterBuilder, Operation, Snapshot,
    SnapshotReference, SnapshotRetention, SnapshotSummaryCollector, Summary, TableMetadata,
    TableMetadataBuilder,
};
use iceberg::table::Table;
use iceberg::{MetadataLocation, TableIdent};

use super::{Lake, Retain, unique_prefix};

/// More manifests than this in a snapshot and the small ones are merged
/// into one (Iceberg Java's `commit.manifest.min-count-to-merge` default).
pub const MERGE_MIN_COUNT: usize = 100;

/// A manifest with at least this many entries counts as full and is no
/// longer rewritten by merging (so a merge does not rewrite the whole table).
pub const MERGE_FULL_ENTRIES: usize = 1_000;

/// What a commit changes. Build one with [`Commit::append`],
/// [`Commit::row_delta`], [`Commit::overwrite`] or [`Commit::replace`].
#[derive(Debug, Clone)]
pub struct Commit {
    operation: Operation,
    added: Vec<DataFile>,
    removed: Vec<String>,
    properties: HashMap<String, String>,
    data_sequence_number: Option<i64>,
    keep_snapshots: Option<usize>,
    /// The snapshot's timestamp (ms since the epoch); now when `None`.
    timestamp_ms: Option<i64>,
    /// Which branch it goes on ([`Commit::on_branch`], [`Commit::publishing`]).
    branch: Branch,
}

/// Where a commit's snapshot goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Branch {
    /// On `main`, after its current snapshot: what readers see.
    Main,
    /// On a branch of that name, after its head (main's current snapshot
    /// when there is no such branch yet): readers of `main` do not see it.
    On(String),
    /// On `main`, after the head of that branch (main's current snapshot
    /// when there is none), and the branch removed: everything committed
    /// on it becomes visible at once, with this snapshot.
    Publishing(String),
}

/// The snapshot a commit on `branch` of `meta` follows: the branch's head,
/// else main's current snapshot ([`Commit::on_branch`]).
#[must_use]
pub fn head<'a>(meta: &'a TableMetadata, branch: &str) -> Option<&'a iceberg::spec::SnapshotRef> {
    meta.snapshot_for_ref(branch)
        .or_else(|| meta.current_snapshot())
}

impl Commit {
    /// Add data files.
    #[must_use]
    pub fn append(data_files: Vec<DataFile>) -> Self {
        Self::new(Operation::Append, data_files, Vec::new())
    }

    /// Add data files and delete files (equality or position deletes) in one
    /// snapshot; the deletes apply to data committed BEFORE this snapshot.
    /// With only delete files this is a `delete` snapshot.
    #[must_use]
    pub fn row_delta(files: Vec<DataFile>) -> Self {
        let only_deletes = !files.is_empty()
            && files
                .iter()
                .all(|f| f.content_type() != DataContentType::Data);
        let operation = if only_deletes {
            Operation::Delete
        } else {
            Operation::Overwrite
        };
        Self::new(operation, files, Vec::new())
    }

    /// Remove the live files at `removed` (data or delete files) and add
    /// `added`: a logical change of the table's rows (copy-on-write).
    #[must_use]
    pub fn overwrite(removed: Vec<String>, added: Vec<DataFile>) -> Self {
        Self::new(Operation::Overwrite, added, removed)
    }

    /// Compaction: `added` hold exactly the rows of `removed`. Added files
    /// keep `data_sequence_number` (the sequence number of the snapshot the
    /// inputs were read from), so equality deletes committed after that
    /// snapshot still apply to them. Refused with [`CommitError::InputGone`]
    /// if any input is no longer live.
    #[must_use]
    pub fn replace(removed: Vec<String>, added: Vec<DataFile>, data_sequence_number: i64) -> Self {
        let mut commit = Self::new(Operation::Replace, added, removed);
        commit.data_sequence_number = Some(data_sequence_number);
        commit
    }

    /// Summary properties for the new snapshot (e.g. a writer's offsets).
    /// The computed `added-*`/`total-*` counts win over colliding keys.
    #[must_use]
    pub fn with_properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties = properties;
        self
    }

    /// Expire, in this commit's own metadata, every snapshot but the newest
    /// `keep` (the new one included; branch and tag heads always stay), once
    /// the table has half as many again: each metadata file lists at most
    /// `1.5 * keep` snapshots whatever the number of commits. Files stay on
    /// disk for [`super::Lake::delete_orphan_files`].
    #[must_use]
    pub fn keeping_snapshots(mut self, keep: usize) -> Self {
        self.keep_snapshots = Some(keep.max(1));
        self
    }

    /// Commit on branch `branch` instead of `main`, after its head (created
    /// from main's current snapshot by the first such commit): Iceberg's
    /// write-audit-publish. Readers of `main` see none of it until a
    /// [`Commit::publishing`] commit.
    #[must_use]
    pub fn on_branch(mut self, branch: &str) -> Self {
        self.branch = Branch::On(branch.to_owned());
        self
    }

    /// Commit on `main` everything committed on branch `branch` since it
    /// left `main`, with this commit's own files, as ONE snapshot, and
    /// remove the branch: `main` moves from its current snapshot to all of
    /// it at once. The branch's files are added by this snapshot (their
    /// data sequence numbers kept), so a reader following `main` snapshot
    /// by snapshot reads them as one change, and the branch's snapshots are
    /// never in `main`'s history (they are expired like any other). Refused
    /// as a conflict when `main` moved since the branch left it. Without
    /// the branch, an ordinary commit.
    #[must_use]
    pub fn publishing(mut self, branch: &str) -> Self {
        self.branch = Branch::Publishing(branch.to_owned());
        self
    }

    fn new(operation: Operation, added: Vec<DataFile>, removed: Vec<String>) -> Self {
        Self {
            operation,
            added,
            removed,
            properties: HashMap::new(),
            data_sequence_number: None,
            keep_snapshots: None,
            timestamp_ms: None,
            branch: Branch::Main,
        }
    }
}

/// Why a commit was not made.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The table changed since the writer read it.
    #[error(
        "commit conflict on {table}: computed against {base}, but the catalog now points at {head}"
    )]
    Conflict {
        table: TableIdent,
        base: String,
        head: String,
    },
    /// A file the commit removes is not live in the base snapshot.
    #[error("commit refused on {table}: {path} is not a live file of the table any more")]
    InputGone { table: TableIdent, path: String },
    #[error("commit on {table} failed: {source}")]
    Iceberg {
        table: TableIdent,
        #[source]
        source: iceberg::Error,
    },
    #[error("commit on {table} failed in the catalog: {source}")]
    Catalog {
        table: TableIdent,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl CommitError {
    /// True for [`CommitError::Conflict`]: reload, recompute, retry.
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }
}

impl Lake {
    /// Commit `commit` against `base` (the table as the writer read it).
    /// Returns the table as the catalog has it right after the swap (at the
    /// new snapshot, or later if another writer committed meanwhile).
    pub async fn commit(&self, base: &Table, commit: Commit) -> Result<Table, CommitError> {
        let metadata = self.stage(base, commit).await?;
        self.commit_metadata(base, &metadata).await
    }

    /// The metadata `base` would have after `commit`: its manifests and
    /// manifest list are written, nothing is committed.
    pub(super) async fn stage(
        &self,
        base: &Table,
        commit: Commit,
    ) -> Result<TableMetadata, CommitError> {
        let table = base.identifier();
        self.staged_metadata(base, commit)
            .await
            .map_err(|e| match e {
                Staged::Iceberg(source) => CommitError::Iceberg {
                    table: table.clone(),
                    source,
                },
                Staged::InputGone(path) => CommitError::InputGone {
                    table: table.clone(),
                    path,
                },
                Staged::Diverged { branch, main } => CommitError::Conflict {
                    table: table.clone(),
                    base: format!("the head of branch {branch}"),
                    head: format!("main at snapshot {main}, which the branch does not follow"),
                },
            })
    }

    /// Write `metadata` (derived from `base`'s) as the next metadata file
    /// and point the catalog at it if it still points at `base`'s: the base
    /// check every commit of the lake layer shares (snapshots, schema
    /// changes, snapshot expiry). Returns the table at that metadata: what
    /// the catalog points at after the swap.
    pub(super) async fn commit_metadata(
        &self,
        base: &Table,
        metadata: &TableMetadata,
    ) -> Result<Table, CommitError> {
        let swap = write_next(base, metadata).await?;
        self.swap_all(std::slice::from_ref(&swap)).await?;
        let (table, _, location) = swap;
        table_at(base, metadata.clone(), location)
            .map_err(|source| CommitError::Iceberg { table, source })
    }

    /// Commit several tables' changes ALL OR NOTHING: each is staged against
    /// its base, then one catalog transaction swaps every table's metadata
    /// location, and only if every table still points at its base. A crash
    /// or a conflict leaves every table as it was (the staged files are
    /// orphans). The SQL catalog can do this because all tables live in one
    /// database; a REST catalog would need `commit_transaction`. Glue cannot:
    /// there the tables are swapped in the order given, each under the base
    /// check, and a crash or a conflict can leave the first ones committed
    /// ([`Lake::commits_tables_atomically`]).
    pub async fn commit_all(
        &self,
        commits: Vec<(&Table, Commit)>,
    ) -> Result<Vec<Table>, CommitError> {
        // Staged side by side: each writes its own manifests and metadata
        // file (nothing is visible until the swap). Their snapshots share
        // one timestamp: one catalog commit, as a follower of the tables
        // groups them (docs/run.md, "Snapshots").
        let now = now_ms();
        let staged = futures_util::future::try_join_all(commits.into_iter().map(
            |(base, mut commit)| async move {
                commit.timestamp_ms = Some(now);
                let metadata = self.stage(base, commit).await?;
                let swap = write_next(base, &metadata).await?;
                Ok::<_, CommitError>((base, metadata, swap))
            },
        ))
        .await?;
        let swaps: Vec<_> = staged.iter().map(|(_, _, swap)| swap.clone()).collect();
        self.swap_all(&swaps).await?;
        // The catalog now points at exactly the metadata written above: the
        // tables are built from it instead of read back.
        staged
            .into_iter()
            .map(|(base, metadata, (table, _, location))| {
                table_at(base, metadata, location)
                    .map_err(|source| CommitError::Iceberg { table, source })
            })
            .collect()
    }

    /// Remove branch `branch` of `base` (its snapshots stay until they are
    /// expired; readers of `main` never saw them): how a writer that
    /// staged commits on a branch ([`Commit::on_branch`]) and stopped
    /// before publishing starts again from `main`. `base` itself when it
    /// has no such branch.
    pub async fn drop_branch(&self, base: &Table, branch: &str) -> Result<Table, CommitError> {
        if base.metadata().snapshot_for_ref(branch).is_none() {
            return Ok(base.clone());
        }
        let metadata = TableMetadataBuilder::new_from_metadata(
            base.metadata().clone(),
            base.metadata_location().map(str::to_owned),
        )
        .remove_ref(branch)
        .build()
        .map_err(|source| CommitError::Iceberg {
            table: base.identifier().clone(),
            source,
        })?
        .metadata;
        self.commit_metadata(base, &metadata).await
    }

    /// `table` as the catalog has it now.
    async fn load(&self, table: &TableIdent) -> Result<Table, CommitError> {
        self.catalog()
            .load_table(table)
            .await
            .map_err(|source| CommitError::Iceberg {
                table: table.clone(),
                source,
            })
    }

    /// Point each `(table, base, new)` at `new` if every one still points
    /// at its `base`; else the first table that moved is named in the
    /// conflict. On the SQL catalog this is one database transaction: all or
    /// nothing. Glue has no multi-table transaction: there each table is
    /// swapped in turn, in the order given, each with Glue's own optimistic
    /// lock, and a conflict on one leaves the ones before it swapped
    /// ([`super::glue`]: writers put the table whose snapshot records their
    /// position last).
    pub(super) async fn swap_all(
        &self,
        swaps: &[(TableIdent, String, String)],
    ) -> Result<(), CommitError> {
        match &self.backend {
            super::Backend::Sql { db, .. } => swap_all_sql(db, swaps).await,
            #[cfg(feature = "aws")]
            super::Backend::Glue(glue) => {
                for (table, base, new) in swaps {
                    // The AWS SDK's futures are large: boxed, so every
                    // commit's future stays small.
                    Box::pin(glue.swap(table, base, new)).await?;
                }
                Ok(())
            }
            super::Backend::Rest(rest) => match swaps.first() {
                None => Ok(()),
                Some((table, _, _)) => Err(CommitError::Catalog {
                    table: table.clone(),
                    source: format!(
                        "{} is a REST catalog: lossproof reads it, and writes it only through \
                         iceberg-rust's own commits (the REST protocol has no pointer swap)",
                        rest.uri
                    )
                    .into(),
                }),
            },
        }
    }

    /// Make each `target` table point at the current metadata of its
    /// `source` table, all in one catalog transaction, if every target is
    /// still at the metadata `targets` were read at: how a rebuilt table
    /// replaces the one readers use, atomically. The source tables stay
    /// registered (drop them afterwards); their files are shared.
    pub async fn replace_tables(
        &self,
        pairs: &[(&Table, &Table)],
    ) -> Result<Vec<Table>, CommitError> {
        let mut swaps = Vec::new();
        for (target, source) in pairs {
            let table = target.identifier().clone();
            let iceberg = |e| CommitError::Iceberg {
                table: table.clone(),
                source: e,
            };
            swaps.push((
                table.clone(),
                target
                    .metadata_location_result()
                    .map_err(iceberg)?
                    .to_owned(),
                source
                    .metadata_location_result()
                    .map_err(iceberg)?
                    .to_owned(),
            ));
        }
        self.swap_all(&swaps).await?;
        let mut tables = Vec::new();
        for (table, _, _) in &swaps {
            tables.push(self.load(table).await?);
        }
        Ok(tables)
    }

    /// The snapshot `commit` follows, and the files it adds (each with its
    /// data sequence number, when it keeps one): a publishing commit's
    /// parent is main's current snapshot, and it adds (and removes) what
    /// its branch changed since it left `main`.
    async fn parent_and_added<'a>(
        &self,
        base: &'a Table,
        commit: &mut Commit,
    ) -> Result<
        (
            Option<&'a iceberg::spec::SnapshotRef>,
            Vec<(DataFile, Option<i64>)>,
        ),
        Staged,
    > {
        let meta = base.metadata();
        let parent = match &commit.branch {
            Branch::Main | Branch::Publishing(_) => meta.current_snapshot(),
            Branch::On(branch) => head(meta, branch),
        };
        let mut added: Vec<(DataFile, Option<i64>)> = std::mem::take(&mut commit.added)
            .into_iter()
            .map(|f| (f, commit.data_sequence_number))
            .collect();
        if let Branch::Publishing(branch) = &commit.branch
            && let Some(staged) = meta.snapshot_for_ref(branch)
        {
            // What main holds now must be in the branch's history, or
            // publishing would lose it.
            if let Some(main) = meta.current_snapshot_id()
                && super::history::since_from(base, Some(staged), main).is_none()
            {
                return Err(Staged::Diverged {
                    branch: branch.clone(),
                    main,
                });
            }
            let (branch_added, branch_removed) = self.diverged_files(base, staged, parent).await?;
            added.extend(branch_added);
            commit.removed.extend(branch_removed);
        }
        Ok((parent, added))
    }

    /// The files live at snapshot `branch` and not at `main` (each with its
    /// data sequence number), and those live at `main` and not at `branch`.
    async fn diverged_files(
        &self,
        base: &Table,
        branch: &iceberg::spec::SnapshotRef,
        main: Option<&iceberg::spec::SnapshotRef>,
    ) -> iceberg::Result<(Vec<(DataFile, Option<i64>)>, Vec<String>)> {
        let path = |e: &iceberg::spec::ManifestEntry| e.file_path().to_owned();
        let mut on_main: HashSet<String> =
            super::compact::live_entries_at(base, main, Some(self), path)
                .await?
                .into_iter()
                .collect();
        let entry = |e: &iceberg::spec::ManifestEntry| (e.data_file().clone(), e.sequence_number());
        let mut added = Vec::new();
        for (file, sequence) in
            super::compact::live_entries_at(base, Some(branch), Some(self), entry).await?
        {
            if !on_main.remove(file.file_path()) {
                added.push((file, sequence));
            }
        }
        Ok((added, on_main.into_iter().collect()))
    }

    /// The metadata `base` would have after `commit` (nothing committed yet).
    async fn staged_metadata(&self, base: &Table, commit: Commit) -> Result<TableMetadata, Staged> {
        let meta = base.metadata();
        let snapshot_id = new_snapshot_id(meta);
        let sequence_number = meta.next_sequence_number();
        let prefix = unique_prefix();
        let mut commit = commit;
        let (parent, added) = self.parent_and_added(base, &mut commit).await?;
        let mut manifests = Manifests {
            lake: self,
            base,
            parent,
            snapshot_id,
            prefix: &prefix,
            written: 0,
        };

        // Existing manifests, with removed files marked deleted.
        let mut summary = SnapshotSummaryCollector::default();
        let kept = manifests
            .carry_existing(&commit.removed, &mut summary)
            .await?;
        let mut kept = manifests.merge_small(kept).await?;

        // New files.
        kept.extend(manifests.write_added(added, &mut summary).await?);

        // Manifest list, snapshot, metadata.
        let list_path = format!(
            "{}/metadata/snap-{snapshot_id}-0-{prefix}.avro",
            meta.location()
        );
        let output = base.file_io().new_output(&list_path)?;
        let mut list = match meta.format_version() {
            FormatVersion::V1 => ManifestListWriter::v1(
                output.writer().await?,
                snapshot_id,
                parent.map(|p| p.snapshot_id()),
            ),
            FormatVersion::V2 => ManifestListWriter::v2(
                output.writer().await?,
                snapshot_id,
                parent.map(|p| p.snapshot_id()),
                sequence_number,
            ),
            FormatVersion::V3 => ManifestListWriter::v3(
                output.writer().await?,
                snapshot_id,
                parent.map(|p| p.snapshot_id()),
                sequence_number,
                Some(meta.next_row_id()),
            ),
        };
        list.add_manifests(kept.into_iter())?;
        let next_row_id = list.next_row_id();
        list.close().await?;

        let mut properties = commit.properties;
        properties.extend(summary.build());
        let summary = with_totals(
            Summary {
                operation: commit.operation,
                additional_properties: properties,
            },
            parent.map(|s| s.summary()),
        );
        let snapshot = Snapshot::builder()
            .with_manifest_list(list_path)
            .with_snapshot_id(snapshot_id)
            .with_parent_snapshot_id(parent.map(|p| p.snapshot_id()))
            .with_sequence_number(sequence_number)
            .with_summary(summary)
            .with_schema_id(meta.current_schema_id())
            .with_timestamp_ms(commit.timestamp_ms.unwrap_or_else(now_ms));
        let snapshot = match next_row_id {
            Some(next) => snapshot
                .with_row_range(meta.next_row_id(), next - meta.next_row_id())
                .build(),
            None => snapshot.build(),
        };
        // Expired from the base's snapshots: the newest `keep - 1` of them
        // stay beside the new one.
        let expired = match commit.keep_snapshots {
            Some(keep) if meta.snapshots().len() >= keep + keep / 2 => {
                super::maintenance::expirable(base, Retain::Last(keep - 1))?
            }
            _ => Vec::new(),
        };
        let target = match &commit.branch {
            Branch::On(branch) => branch.as_str(),
            Branch::Main | Branch::Publishing(_) => MAIN_BRANCH,
        };
        let mut builder = TableMetadataBuilder::new_from_metadata(
            meta.clone(),
            base.metadata_location().map(str::to_owned),
        )
        .add_snapshot(snapshot)?
        .set_ref(
            target,
            SnapshotReference::new(snapshot_id, SnapshotRetention::branch(None, None, None)),
        )?;
        if let Branch::Publishing(branch) = &commit.branch {
            builder = builder.remove_ref(branch);
        }
        let built = builder.remove_snapshots(&expired).build()?;
        Ok(built.metadata)
    }
}

/// `base`'s table at `metadata`, stored at `location` (built in memory, not
/// read back from the catalog).
pub(super) fn table_at(
    base: &Table,
    metadata: TableMetadata,
    location: String,
) -> iceberg::Result<Table> {
    Table::builder()
        .file_io(base.file_io().clone())
        .identifier(base.identifier().clone())
        .metadata_location(location)
        .metadata(metadata)
        .runtime(iceberg::Runtime::current())
        .build()
}

/// Write `metadata` (derived from `base`'s) as `base`'s next metadata file;
/// returns the swap that makes it current: (table, base location, new location).
async fn write_next(
    base: &Table,
    metadata: &TableMetadata,
) -> Result<(TableIdent, String, String), CommitError> {
    let table = base.identifier().clone();
    let iceberg = |source| CommitError::Iceberg {
        table: table.clone(),
        source,
    };
    let base_location = base.metadata_location_result().map_err(iceberg)?.to_owned();
    let location = MetadataLocation::from_str(&base_location)
        .map_err(iceberg)?
        .with_next_version()
        .with_new_metadata(metadata);
    metadata
        .write_to(base.file_io(), &location)
        .await
        .map_err(iceberg)?;
    Ok((table, base_location, location.to_string()))
}

/// Why staging failed (mapped to [`CommitError`] by the caller).
enum Staged {
    Iceberg(iceberg::Error),
    InputGone(String),
    /// Publishing a branch whose history lacks main's current snapshot:
    /// another writer committed on main since the branch left it.
    Diverged {
        branch: String,
        main: i64,
    },
}

impl From<iceberg::Error> for Staged {
    fn from(e: iceberg::Error) -> Self {
        Self::Iceberg(e)
    }
}

/// Writes the manifests of one commit.
struct Manifests<'a> {
    lake: &'a Lake,
    base: &'a Table,
    /// The snapshot the commit follows (its manifests are carried).
    parent: Option<&'a iceberg::spec::SnapshotRef>,
    snapshot_id: i64,
    prefix: &'a str,
    written: usize,
}

impl Manifests<'_> {
    fn writer(&mut self, content: ManifestContentType) -> iceberg::Result<ManifestWriter> {
        let meta = self.base.metadata();
        let path = format!(
            "{}/metadata/{}-m{}.avro",
            meta.location(),
            self.prefix,
            self.written
        );
        self.written += 1;
        let builder = ManifestWriterBuilder::new(
            self.base.file_io().new_output(path)?,
            Some(self.snapshot_id),
            meta.current_schema().clone(),
            meta.default_partition_spec().as_ref().clone(),
        );
        Ok(match (meta.format_version(), content) {
            (FormatVersion::V1, _) => builder.build_v1(),
            (FormatVersion::V2, ManifestContentType::Data) => builder.build_v2_data(),
            (FormatVersion::V2, ManifestContentType::Deletes) => builder.build_v2_deletes(),
            (FormatVersion::V3, ManifestContentType::Data) => builder.build_v3_data(),
            (FormatVersion::V3, ManifestContentType::Deletes) => builder.build_v3_deletes(),
        })
    }

    /// The base snapshot's manifests, each one holding a file of `removed`
    /// rewritten with that file marked deleted (and counted in `summary`).
    async fn carry_existing(
        &mut self,
        removed: &[String],
        summary: &mut SnapshotSummaryCollector,
    ) -> Result<Vec<ManifestFile>, Staged> {
        let base = self.base;
        let meta = base.metadata();
        let mut remove: HashSet<&str> = removed.iter().map(String::as_str).collect();
        let mut kept: Vec<ManifestFile> = Vec::new();
        if let Some(parent) = self.parent {
            let list = base.manifest_list_reader(parent).load().await?;
            // Collected first: the crate's iterator is not `Send`, and a
            // commit must be able to run on any task (the executor's faults).
            let entries: Vec<ManifestFile> = list.consume_entries().into_iter().collect();
            for manifest_file in entries {
                if remove.is_empty() {
                    kept.push(manifest_file);
                    continue;
                }
                let manifest = self.lake.manifest(base, &manifest_file).await?;
                let hits: Vec<_> = manifest
                    .entries()
                    .iter()
                    .filter(|e| e.is_alive() && remove.contains(e.file_path()))
                    .map(|e| e.file_path().to_owned())
                    .collect();
                if hits.is_empty() {
                    kept.push(manifest_file);
                    continue;
                }
                let mut writer = self.writer(manifest_file.content)?;
                for entry in manifest.entries().iter().filter(|e| e.is_alive()) {
                    let (seq, file_seq) = (
                        entry.sequence_number().unwrap_or(0),
                        entry.file_sequence_number,
                    );
                    if hits.iter().any(|h| h == entry.file_path()) {
                        summary.remove_file(
                            entry.data_file(),
                            meta.current_schema().clone(),
                            meta.default_partition_spec().clone(),
                        );
                        writer.add_delete_file(entry.data_file().clone(), seq, file_seq)?;
                    } else {
                        let added_by = entry
                            .snapshot_id()
                            .unwrap_or(manifest_file.added_snapshot_id);
                        writer.add_existing_file(
                            entry.data_file().clone(),
                            added_by,
                            seq,
                            file_seq,
                        )?;
                    }
                }
                kept.push(writer.write_manifest_file().await?);
                for hit in &hits {
                    remove.remove(hit.as_str());
                }
            }
        }
        match remove.into_iter().next() {
            Some(gone) => Err(Staged::InputGone(gone.to_owned())),
            None => Ok(kept),
        }
    }

    /// One manifest for the added data files and one for the added delete
    /// files (each counted in `summary`); an added file inherits the
    /// snapshot's sequence number unless it comes with its own.
    async fn write_added(
        &mut self,
        added: Vec<(DataFile, Option<i64>)>,
        summary: &mut SnapshotSummaryCollector,
    ) -> iceberg::Result<Vec<ManifestFile>> {
        let meta = self.base.metadata();
        let (deletes, data): (Vec<_>, Vec<_>) = added
            .into_iter()
            .partition(|(f, _)| f.content_type() != DataContentType::Data);
        let mut out = Vec::new();
        for (content, files) in [
            (ManifestContentType::Data, data),
            (ManifestContentType::Deletes, deletes),
        ] {
            if files.is_empty() {
                continue;
            }
            let mut writer = self.writer(content)?;
            for (file, sequence) in files {
                summary.add_file(
                    &file,
                    meta.current_schema().clone(),
                    meta.default_partition_spec().clone(),
                );
                writer.add_file(file, sequence.unwrap_or(-1))?;
            }
            out.push(writer.write_manifest_file().await?);
        }
        Ok(out)
    }

    /// With more than [`MERGE_MIN_COUNT`] manifests, rewrite the small ones
    /// of each content type into one (live entries only, sequence numbers
    /// kept).
    async fn merge_small(
        &mut self,
        manifests: Vec<ManifestFile>,
    ) -> iceberg::Result<Vec<ManifestFile>> {
        if manifests.len() <= MERGE_MIN_COUNT {
            return Ok(manifests);
        }
        let mut out = Vec::new();
        for content in [ManifestContentType::Data, ManifestContentType::Deletes] {
            let (small, rest): (Vec<_>, Vec<_>) = manifests
                .iter()
                .filter(|m| m.content == content)
                .cloned()
                .partition(|m| entry_count(m) < MERGE_FULL_ENTRIES as u64);
            out.extend(rest);
            if small.len() < 2 {
                out.extend(small);
                continue;
            }
            let mut writer = self.writer(content)?;
            for manifest_file in &small {
                let manifest = self.lake.manifest(self.base, manifest_file).await?;
                for entry in manifest.entries() {
                    if !entry.is_alive() {
                        // A file this commit removes stays listed as
                        // deleted by it (the spec's rule, and Java's merge
                        // keeps them too): a reader following the table
                        // snapshot by snapshot learns of a removal from
                        // it. Older deleted entries are dropped.
                        if entry.snapshot_id() == Some(self.snapshot_id) {
                            writer.add_delete_file(
                                entry.data_file().clone(),
                                entry.sequence_number().unwrap_or(0),
                                entry.file_sequence_number,
                            )?;
                        }
                        continue;
                    }
                    writer.add_existing_file(
                        entry.data_file().clone(),
                        entry
                            .snapshot_id()
                            .unwrap_or(manifest_file.added_snapshot_id),
                        entry.sequence_number().unwrap_or(0),
                        entry.file_sequence_number,
                    )?;
                }
            }
            out.push(writer.write_manifest_file().await?);
        }
        Ok(out)
    }
}

/// Live entries a manifest file lists (added + existing).
fn entry_count(m: &ManifestFile) -> u64 {
    u64::from(m.added_files_count.unwrap_or(0)) + u64::from(m.existing_files_count.unwrap_or(0))
}

/// `summary` with the `total-*` counts carried forward from `previous`
/// (iceberg-rust's helper for this is crate-private).
fn with_totals(mut summary: Summary, previous: Option<&Summary>) -> Summary {
    const TOTALS: [(&str, &str, &str); 6] = [
        ("total-data-files", "added-data-files", "deleted-data-files"),
        (
            "total-delete-files",
            "added-delete-files",
            "removed-delete-files",
        ),
        ("total-records", "added-records", "deleted-records"),
        ("total-files-size", "added-files-size", "removed-files-size"),
        (
            "total-position-deletes",
            "added-position-deletes",
            "removed-position-deletes",
        ),
        (
            "total-equality-deletes",
            "added-equality-deletes",
            "removed-equality-deletes",
        ),
    ];
    let get = |props: &HashMap<String, String>, key: &str| -> i128 {
        props.get(key).and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    for (total, added, removed) in TOTALS {
        let before = previous.map_or(0, |p| get(&p.additional_properties, total));
        let props = &summary.additional_properties;
        let after = (before + get(props, added) - get(props, removed)).max(0);
        summary
            .additional_properties
            .insert(total.to_owned(), after.to_string());
    }
    summary
}

/// A positive snapshot id no snapshot of `meta` has.
fn new_snapshot_id(meta: &TableMetadata) -> i64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    loop {
        // RandomState is seeded from the OS per instance: a cheap random u64.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let id = (h.finish() >> 1).cast_signed();
        if id != 0 && meta.snapshot_by_id(id).is_none() {
            return id;
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// [`Lake::swap_all`] on the SQL catalog: one transaction over the
/// `iceberg_tables` rows.
async fn swap_all_sql(
    db: &sqlx::SqlitePool,
    swaps: &[(TableIdent, String, String)],
) -> Result<(), CommitError> {
    let Some((first, _, _)) = swaps.first() else {
        return Ok(());
    };
    let catalog_error = |table: &TableIdent| {
        let table = table.clone();
        move |source: sqlx::Error| CommitError::Catalog {
            table,
            source: source.into(),
        }
    };
    let mut tx = db.begin().await.map_err(catalog_error(first))?;
    for (table, base, new) in swaps {
        let swapped = sqlx::query(
            "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? \
                 WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? \
                   AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL) AND metadata_location = ?",
        )
        .bind(new)
        .bind(base)
        .bind(super::CATALOG_NAME)
        .bind(table.namespace().join("."))
        .bind(table.name())
        .bind(base)
        .execute(&mut *tx)
        .await
        .map_err(catalog_error(table))?
        .rows_affected();
        if swapped != 1 {
            tx.rollback().await.map_err(catalog_error(table))?;
            let head: Option<String> = sqlx::query_scalar(
                "SELECT metadata_location FROM iceberg_tables \
                     WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
            )
            .bind(super::CATALOG_NAME)
            .bind(table.namespace().join("."))
            .bind(table.name())
            .fetch_optional(db)
            .await
            .map_err(catalog_error(table))?;
            return Err(CommitError::Conflict {
                table: table.clone(),
                base: base.clone(),
                head: head.unwrap_or_else(|| "no table (dropped)".to_owned()),
            });
        }
    }
    tx.commit().await.map_err(catalog_error(first))
}
