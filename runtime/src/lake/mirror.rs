//! One lake table followed snapshot by snapshot, as a reader sees it: each
//! key's visible rows, kept from the files each snapshot added and
//! removed, so what a snapshot changed is known without reading the table
//! whole (docs/run.md, "Snapshots").
//!
//! Data files are read when a snapshot adds them; a removed data file's
//! rows are known from when it was added; a position-delete file names
//! rows by file and position; an equality-delete file's rows are keys,
//! deleting every row of the key in a file of a lower data sequence
//! number. The rows are canonical over the source's columns
//! ([`crate::reconcile::keyed_rows`]; a column is found in a file by the
//! Iceberg field id it had in the lake when first seen, so a column renamed
//! in place is followed) and kept as their
//! [`row_hash`](crate::reconcile::states::row_hash): a row's 16 bytes and
//! its key per visible row, in memory for the seed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{Array as _, Int64Array, StringArray};
use iceberg::spec::{DataContentType, DataFileFormat};
use iceberg::table::Table;

use super::history::{self, FileChange};
use crate::reconcile::canonical::Layout;
use crate::reconcile::changelog::{self, Fold};
use crate::reconcile::states::{Shown, row_hash};
use crate::reconcile::{SourceTable, keyed_rows};

/// A data file's rows as the mirror keeps them.
struct FileRows {
    sequence_number: i64,
    /// Row `i` (position `i`): its key and row, `None` once deleted.
    rows: Vec<Option<(Arc<str>, u128)>>,
}

/// One table's visible rows, by key.
pub struct Mirror {
    table: SourceTable,
    /// Each of `table`'s columns' Iceberg field id in the lake table, once
    /// seen there under its name (in the oldest of the table's schemas
    /// that has it: [`first_field_id`]): files are read by field id, so a
    /// column the lake renamed in place (as the source did) is still found,
    /// even when the rename came before the mirror's first look.
    field_ids: Vec<Option<i32>>,
    files: HashMap<String, FileRows>,
    /// Each key's visible rows: (file, position).
    keys: HashMap<Arc<str>, Vec<(Arc<str>, u32)>>,
    /// A change log's reader's view instead (`lake changelog`: every
    /// change event appended, each key its latest row in source order).
    changelog: Option<Fold>,
}

impl Mirror {
    /// An empty table whose rows are compared over `table`'s columns.
    #[must_use]
    pub fn new(table: SourceTable) -> Self {
        Self {
            field_ids: vec![None; table.columns.len()],
            table,
            files: HashMap::new(),
            keys: HashMap::new(),
            changelog: None,
        }
    }

    /// An empty change log of `table`'s changes (Debezium's envelope,
    /// [`crate::reconcile::changelog::COLUMNS`]), followed as its readers
    /// see it: each key's latest row in source order
    /// ([`crate::reconcile::changelog`]).
    #[must_use]
    pub fn changelog(table: SourceTable) -> Self {
        Self {
            changelog: Some(Fold::new(table.clone())),
            ..Self::new(table)
        }
    }

    /// Rows visible now.
    #[must_use]
    pub fn rows(&self) -> usize {
        match &self.changelog {
            Some(fold) => fold.rows(),
            None => self.keys.values().map(Vec::len).sum(),
        }
    }

    /// Apply snapshot `snapshot` of `table` (the next one after the last
    /// applied): what it shows now for every key it changed.
    ///
    /// # Errors
    /// When a file cannot be read, or holds what the mirror cannot follow
    /// (a deletion vector, equality deletes on other columns than the key).
    pub async fn apply(
        &mut self,
        table: &Table,
        snapshot: i64,
    ) -> Result<Vec<(String, Shown)>, String> {
        let changes = history::changes(table, snapshot)
            .await
            .map_err(|e| e.to_string())?;
        self.apply_changes(table, &changes).await
    }

    /// Start again from `table`'s current snapshot, read whole (after the
    /// snapshots in between expired): what it shows now for every key the
    /// mirror held or holds now.
    ///
    /// # Errors
    /// As [`Mirror::apply`].
    pub async fn reset(&mut self, table: &Table) -> Result<Vec<(String, Shown)>, String> {
        let before: Vec<Arc<str>> = match &mut self.changelog {
            Some(fold) => fold.clear().into_iter().map(Arc::from).collect(),
            None => self.keys.keys().cloned().collect(),
        };
        self.files.clear();
        self.keys.clear();
        // A table replaced (rebuilt, recreated) can number its fields
        // anew: a column found under its name takes its id there; one not
        // found (renamed since) keeps the id it had.
        let schema = table.metadata().current_schema();
        for ((name, _), id) in self.table.columns.iter().zip(&mut self.field_ids) {
            if let Some(field) = schema.field_by_name(name) {
                *id = Some(field.id);
            } else if id.is_none() {
                *id = first_field_id(table, name);
            }
        }
        let live = history::live(table).await.map_err(|e| e.to_string())?;
        let mut changed = self.apply_changes(table, &live).await?;
        let now: HashSet<&str> = changed.iter().map(|(k, _)| k.as_str()).collect();
        let gone: Vec<(String, Shown)> = before
            .iter()
            .filter(|k| !now.contains(&***k))
            .map(|k| (k.to_string(), Shown::Absent))
            .collect();
        changed.extend(gone);
        Ok(changed)
    }

    async fn apply_changes(
        &mut self,
        table: &Table,
        changes: &[FileChange],
    ) -> Result<Vec<(String, Shown)>, String> {
        if let Some(fold) = &mut self.changelog {
            return fold_changes(fold, table, changes).await;
        }
        let mut touched: HashSet<Arc<str>> = HashSet::new();
        // Removed data files first, then added ones, then deletes: a
        // snapshot's delete files apply to the files before it.
        for change in changes {
            if !change.added && change.content == DataContentType::Data {
                self.remove_file(&change.path, &mut touched);
            }
        }
        for change in changes {
            if change.added && change.content == DataContentType::Data {
                self.add_file(table, change, &mut touched).await?;
            }
        }
        for change in changes.iter().filter(|c| c.added) {
            match change.content {
                DataContentType::Data => {}
                DataContentType::PositionDeletes => {
                    self.position_deletes(table, change, &mut touched).await?;
                }
                DataContentType::EqualityDeletes => {
                    self.equality_deletes(table, change, &mut touched).await?;
                }
            }
        }
        Ok(touched
            .into_iter()
            .map(|key| {
                let shown = match self.keys.get(&key).map(Vec::as_slice) {
                    None | Some([]) => Shown::Absent,
                    Some([(file, pos)]) => self.files[&**file].rows[*pos as usize]
                        .as_ref()
                        .map_or(Shown::Absent, |(_, row)| Shown::Row(*row)),
                    Some(many) => Shown::Rows(many.len()),
                };
                (key.to_string(), shown)
            })
            .collect())
    }

    fn remove_file(&mut self, path: &str, touched: &mut HashSet<Arc<str>>) {
        let Some(file) = self.files.remove(path) else {
            return;
        };
        for (pos, row) in file.rows.iter().enumerate() {
            if let Some((key, _)) = row {
                self.unlink(key, path, pos);
                touched.insert(key.clone());
            }
        }
    }

    fn unlink(&mut self, key: &Arc<str>, path: &str, pos: usize) {
        if let Some(at) = self.keys.get_mut(key) {
            at.retain(|(file, p)| !(&**file == path && *p as usize == pos));
            if at.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    async fn add_file(
        &mut self,
        table: &Table,
        change: &FileChange,
        touched: &mut HashSet<Arc<str>>,
    ) -> Result<(), String> {
        for ((name, _), id) in self.table.columns.iter().zip(&mut self.field_ids) {
            if id.is_none() {
                *id = first_field_id(table, name);
            }
        }
        let columns: Vec<&str> = self.table.columns.iter().map(|(n, _)| n.as_str()).collect();
        let by_field: Vec<(&str, Option<i32>)> = columns
            .iter()
            .copied()
            .zip(self.field_ids.iter().copied())
            .collect();
        let batches = super::read::file_rows_by_field(table, &change.path, &by_field)
            .await
            .map_err(|e| e.to_string())?;
        let key = self
            .table
            .key_columns()
            .map_err(|e| e.to_string())?
            .iter()
            .map(|(i, _, _)| *i)
            .collect();
        let mut layout = Layout::new(columns, key);
        let path: Arc<str> = Arc::from(change.path.as_str());
        let mut rows = Vec::new();
        for batch in &batches {
            for keyed in keyed_rows(&self.table, &mut layout, batch).map_err(|e| e.to_string())? {
                let key: Arc<str> = match self.keys.get_key_value(keyed.key()) {
                    Some((key, _)) => key.clone(),
                    None => Arc::from(keyed.key()),
                };
                let pos = u32::try_from(rows.len()).map_err(|e| e.to_string())?;
                self.keys
                    .entry(key.clone())
                    .or_default()
                    .push((path.clone(), pos));
                touched.insert(key.clone());
                rows.push(Some((key, row_hash(keyed.row()))));
            }
        }
        self.files.insert(
            change.path.clone(),
            FileRows {
                sequence_number: change.sequence_number.unwrap_or(0),
                rows,
            },
        );
        Ok(())
    }

    async fn position_deletes(
        &mut self,
        table: &Table,
        change: &FileChange,
        touched: &mut HashSet<Arc<str>>,
    ) -> Result<(), String> {
        if change.format == DataFileFormat::Puffin {
            return Err(format!(
                "{}: a deletion vector (Puffin): not followed",
                change.path
            ));
        }
        let batches = super::read::file_rows(table, &change.path, &["file_path", "pos"])
            .await
            .map_err(|e| e.to_string())?;
        for batch in &batches {
            let (Some(paths), Some(positions)) = (
                batch
                    .column_by_name("file_path")
                    .and_then(|c| c.as_any().downcast_ref::<StringArray>()),
                batch
                    .column_by_name("pos")
                    .and_then(|c| c.as_any().downcast_ref::<Int64Array>()),
            ) else {
                return Err(format!(
                    "{}: a position-delete file without file_path and pos",
                    change.path
                ));
            };
            for i in 0..batch.num_rows() {
                let (path, pos) = (paths.value(i), positions.value(i));
                let Ok(pos) = usize::try_from(pos) else {
                    continue;
                };
                let Some(row) = self
                    .files
                    .get_mut(path)
                    .and_then(|f| f.rows.get_mut(pos))
                    .and_then(Option::take)
                else {
                    continue;
                };
                self.unlink(&row.0, path, pos);
                touched.insert(row.0);
            }
        }
        Ok(())
    }

    async fn equality_deletes(
        &mut self,
        table: &Table,
        change: &FileChange,
        touched: &mut HashSet<Arc<str>>,
    ) -> Result<(), String> {
        let schema = table.metadata().current_schema();
        let mut names: Vec<&str> = Vec::new();
        for id in &change.equality_ids {
            names.push(
                schema
                    .field_by_id(*id)
                    .map(|f| f.name.as_str())
                    .ok_or_else(|| format!("{}: equality field {id} unknown", change.path))?,
            );
        }
        let key_columns = self.table.key_columns().map_err(|e| e.to_string())?;
        let mut wanted: Vec<&str> = key_columns.iter().map(|(_, n, _)| *n).collect();
        let mut given = names.clone();
        wanted.sort_unstable();
        given.sort_unstable();
        if wanted != given {
            return Err(format!(
                "{}: equality deletes on {} (not the key {}): not followed",
                change.path,
                names.join(", "),
                wanted.join(", ")
            ));
        }
        // The key columns alone, canonical as a data row's key.
        let key_table = SourceTable {
            columns: key_columns
                .iter()
                .map(|(_, n, kind)| ((*n).to_owned(), *kind))
                .collect(),
            ..self.table.clone()
        };
        let batches = super::read::file_rows(table, &change.path, &names)
            .await
            .map_err(|e| e.to_string())?;
        let mut layout = Layout::new(
            key_table.columns.iter().map(|(n, _)| n.as_str()).collect(),
            (0..key_table.columns.len()).collect(),
        );
        let sequence_number = change.sequence_number.unwrap_or(i64::MAX);
        for batch in &batches {
            for keyed in keyed_rows(&key_table, &mut layout, batch).map_err(|e| e.to_string())? {
                let Some((key, at)) = self.keys.remove_entry(keyed.key()) else {
                    continue;
                };
                let mut kept = Vec::new();
                for (path, pos) in at {
                    let file = self.files.get_mut(&*path);
                    match file {
                        Some(file) if file.sequence_number < sequence_number => {
                            file.rows[pos as usize] = None;
                        }
                        _ => kept.push((path, pos)),
                    }
                }
                if !kept.is_empty() {
                    self.keys.insert(key.clone(), kept);
                }
                touched.insert(key);
            }
        }
        Ok(())
    }
}

/// The field id of the column named `name` in the oldest of `table`'s
/// schemas that has one: the column as it was named when the follower's
/// tables were described, though the lake renamed it since (the current
/// schema alone would not know the old name, and every file written after
/// the rename would be read as lacking the column).
fn first_field_id(table: &Table, name: &str) -> Option<i32> {
    table
        .metadata()
        .schemas_iter()
        .filter_map(|schema| Some((schema.schema_id(), schema.field_by_name(name)?.id)))
        .min_by_key(|(schema, _)| *schema)
        .map(|(_, id)| id)
}

/// A change log's snapshot: the events of the data files it added, folded
/// in. Files it removed are not un-read (a rewrite of a change log, as
/// compaction makes, adds the same events again: replays, which change
/// nothing); delete files are not followed in a change log.
async fn fold_changes(
    fold: &mut Fold,
    table: &Table,
    changes: &[FileChange],
) -> Result<Vec<(String, Shown)>, String> {
    let mut shown: HashMap<String, Shown> = HashMap::new();
    for change in changes.iter().filter(|c| c.added) {
        if change.content != DataContentType::Data {
            return Err(format!(
                "{}: a delete file in a change log: not followed",
                change.path
            ));
        }
        let columns: Vec<&str> = changelog::COLUMNS.split(", ").collect();
        let batches = super::read::file_rows(table, &change.path, &columns)
            .await
            .map_err(|e| e.to_string())?;
        for batch in &batches {
            for (key, row) in fold.apply(batch).map_err(|e| e.to_string())? {
                let now = row.map_or(Shown::Absent, |row| Shown::Row(row_hash(&row)));
                shown.insert(key, now);
            }
        }
    }
    Ok(shown.into_iter().collect())
}
