//! Reading a table's rows as any Iceberg reader must see them, with
//! equality deletes applied by hash lookup.
//!
//! iceberg-rust 0.10 applies an equality-delete file by turning every
//! deleted key into a predicate (`NOT (id = 1) AND NOT (id = 2) …`) and
//! evaluating it per row: measured here, a careless consumer's table after
//! one minute of load (a few hundred delete files) took over a minute to
//! read, almost all of it cloning and evaluating predicates. This reader
//! keeps iceberg-rust's planning — which delete files apply to which data
//! file, by sequence number, is the crate's decision — and its Parquet
//! reading (schema evolution, position deletes); it only takes the equality
//! deletes off each task and applies them itself: a row is dropped when the
//! values of the delete file's columns equal one of the file's rows (NULL
//! equals NULL, as the spec says).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use arrow_array::{BooleanArray, RecordBatch};
use futures_util::stream::BoxStream;
use futures_util::{StreamExt as _, TryStreamExt as _};
use iceberg::arrow::ArrowReaderBuilder;
use iceberg::scan::FileScanTask;
use iceberg::spec::DataContentType;
use iceberg::table::Table;

use crate::reconcile::canonical;

/// Rows per batch read from a data file (DataFusion's batch size; the
/// Parquet reader's own default, 1,024, costs every per-batch step eight
/// times over).
const BATCH_ROWS: usize = 8192;

/// Why a table's rows could not be read into SQL or keyed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{what} {table}: {source}")]
    Iceberg {
        what: &'static str,
        table: String,
        #[source]
        source: iceberg::Error,
    },
    #[error("{what} {table}: {source}")]
    Query {
        what: &'static str,
        table: String,
        #[source]
        source: datafusion::error::DataFusionError,
    },
    #[error("no column {0}")]
    NoColumn(String),
    #[error(transparent)]
    Canonical(#[from] canonical::CanonicalError),
}

/// The keys one equality-delete file deletes: its column names, and each
/// row's values joined.
pub(super) type DeletedKeys = Arc<(Vec<String>, HashSet<String>)>;

/// Every row physically in data file `path` of `table`, in file order
/// (row `i` is position `i`), deletes NOT applied: columns `columns` only,
/// by the names the file was written with. What an index of row positions
/// reads (the correct consumer's key index).
pub async fn file_rows(
    table: &Table,
    path: &str,
    columns: &[&str],
) -> iceberg::Result<Vec<RecordBatch>> {
    let named: Vec<(&str, Option<i32>)> = columns.iter().map(|c| (*c, None)).collect();
    file_rows_by_field(table, path, &named).await
}

/// [`file_rows`] of columns named by Iceberg field id where one is given
/// (`(name, Some(id))`: the file's column with that field id, whatever it
/// was named when the file was written, as an Iceberg reader resolves a
/// renamed column), else by name; each returned under the name given.
/// A column the file does not have is left out.
///
/// # Errors
/// When the file cannot be read.
pub async fn file_rows_by_field(
    table: &Table,
    path: &str,
    columns: &[(&str, Option<i32>)],
) -> iceberg::Result<Vec<RecordBatch>> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::{PARQUET_FIELD_ID_META_KEY, ProjectionMask};
    let bytes = table.file_io().new_input(path)?.read().await?;
    let unexpected = |e: &dyn std::fmt::Display| {
        iceberg::Error::new(
            iceberg::ErrorKind::Unexpected,
            format!("data file {path}: {e}"),
        )
    };
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| unexpected(&e))?;
    let fields = builder.schema().fields().clone();
    let field_id = |f: &arrow_schema::Field| {
        f.metadata()
            .get(PARQUET_FIELD_ID_META_KEY)
            .and_then(|id| id.parse::<i32>().ok())
    };
    // (root index in the file, name to return it under), in file order:
    // the order a projection returns its columns in.
    let mut wanted: Vec<(usize, &str)> = columns
        .iter()
        .filter_map(|(name, id)| {
            let by_id = id.and_then(|id| fields.iter().position(|f| field_id(f) == Some(id)));
            by_id
                .or_else(|| fields.iter().position(|f| f.name() == name))
                .map(|i| (i, *name))
        })
        .collect();
    wanted.sort_unstable();
    wanted.dedup_by_key(|(i, _)| *i);
    let mask = ProjectionMask::roots(builder.parquet_schema(), wanted.iter().map(|(i, _)| *i));
    let renamed = Arc::new(arrow_schema::Schema::new(
        wanted
            .iter()
            .map(|(i, name)| fields[*i].as_ref().clone().with_name(*name))
            .collect::<Vec<_>>(),
    ));
    builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| unexpected(&e))?
        .map(|batch| {
            let batch = batch.map_err(|e| unexpected(&e))?;
            RecordBatch::try_new(renamed.clone(), batch.columns().to_vec())
                .map_err(|e| unexpected(&e))
        })
        .collect()
}

/// Every visible row of `table`'s current snapshot, in the table's current
/// Arrow schema.
pub async fn visible_rows(table: &Table) -> iceberg::Result<Vec<RecordBatch>> {
    visible_stream(table.clone()).try_collect().await
}

/// [`visible_rows`] as a stream: one data file read at a time (memory for
/// one file's rows and the equality-delete keys, not for the table).
#[must_use]
pub fn visible_stream(table: Table) -> BoxStream<'static, iceberg::Result<RecordBatch>> {
    futures_util::stream::once(async move {
        let tasks = plan_tasks(&table).await?;
        Ok::<_, iceberg::Error>(files_stream(table, tasks, DeleteCache::default()))
    })
    .try_flatten()
    .boxed()
}

/// The scan tasks (one per data file, with the delete files that apply to
/// it) of `table`'s current snapshot: iceberg-rust's planning.
pub(super) async fn plan_tasks(table: &Table) -> iceberg::Result<Vec<FileScanTask>> {
    if table.metadata().current_snapshot().is_none() {
        return Ok(Vec::new());
    }
    let scan = table.scan().select_all().build()?;
    scan.plan_files().await?.try_collect().await
}

/// The keys of the equality-delete files read so far, by path: shared by
/// the reads of one scan, so a delete file that applies to many data files
/// is read once.
pub(super) type DeleteCache = Arc<Mutex<HashMap<String, DeletedKeys>>>;

/// The visible rows of `tasks`' data files, one file at a time, in order.
pub(super) fn files_stream(
    table: Table,
    tasks: Vec<FileScanTask>,
    cache: DeleteCache,
) -> BoxStream<'static, iceberg::Result<RecordBatch>> {
    let state = (tasks.into_iter(), cache, table);
    futures_util::stream::try_unfold(state, |(mut tasks, cache, table)| async move {
        let Some(task) = tasks.next() else {
            return Ok::<_, iceberg::Error>(None);
        };
        let batches = read_task(&table, task, &cache).await?;
        let batches = futures_util::stream::iter(batches.into_iter().map(Ok));
        Ok(Some((batches, (tasks, cache, table))))
    })
    .try_flatten()
    .boxed()
}

/// One data file's visible rows: position deletes by iceberg-rust,
/// equality deletes by hash lookup (their keys cached by file in `cache`).
async fn read_task(
    table: &Table,
    mut task: FileScanTask,
    cache: &DeleteCache,
) -> iceberg::Result<Vec<RecordBatch>> {
    if let Some(why) = task.deletes.iter().find_map(unreadable) {
        return Err(iceberg::Error::new(
            iceberg::ErrorKind::FeatureUnsupported,
            format!(
                "{}: {why}; refusing to read the table rather than count it wrong",
                task.data_file_path
            ),
        ));
    }
    let (equality, others): (Vec<_>, Vec<_>) = std::mem::take(&mut task.deletes)
        .into_iter()
        .partition(|d| d.file_type == DataContentType::EqualityDeletes);
    task.deletes = others;
    let mut deleted = Vec::new();
    for file in equality {
        let known = cached(cache).get(&file.file_path).cloned();
        let keys = if let Some(keys) = known {
            keys
        } else {
            let keys = deleted_keys(table, &file.file_path).await?;
            cached(cache).insert(file.file_path.clone(), keys.clone());
            keys
        };
        deleted.push(keys);
    }
    let reader = ArrowReaderBuilder::new(table.file_io().clone(), iceberg::Runtime::current())
        .with_batch_size(BATCH_ROWS)
        .build();
    let stream = reader
        .read(futures_util::stream::iter([Ok(task)]).boxed())?
        .stream();
    let batches: Vec<RecordBatch> = stream.try_collect().await?;
    batches
        .into_iter()
        .map(|batch| without_deleted(batch, &deleted))
        .collect()
}

/// Why this reader cannot apply delete file `delete`, if it cannot: a
/// deletion vector (Iceberg v3, a blob in a Puffin file), which
/// iceberg-rust 0.10.1 does not read (apache/iceberg-rust#2792). Applying
/// none of its deletes would count deleted rows as live.
fn unreadable(delete: &iceberg::scan::FileScanTaskDeleteFile) -> Option<String> {
    let puffin = std::path::Path::new(&delete.file_path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("puffin"));
    (delete.file_type == DataContentType::PositionDeletes && puffin).then(|| {
        format!(
            "its delete file {} is a deletion vector (Iceberg v3, Puffin), which lossproof's reader \
             (iceberg-rust 0.10.1) cannot read yet",
            delete.file_path
        )
    })
}

/// The cache's map (a panic while it was held loses nothing: it only
/// caches what can be read again).
fn cached(cache: &DeleteCache) -> std::sync::MutexGuard<'_, HashMap<String, DeletedKeys>> {
    cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn deleted_keys(table: &Table, path: &str) -> iceberg::Result<DeletedKeys> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let bytes = table.file_io().new_input(path)?.read().await?;
    let unexpected = |e: &dyn std::fmt::Display| {
        iceberg::Error::new(
            iceberg::ErrorKind::Unexpected,
            format!("equality delete file {path}: {e}"),
        )
    };
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| unexpected(&e))?
        .build()
        .map_err(|e| unexpected(&e))?;
    let mut columns: Vec<String> = Vec::new();
    let mut keys = HashSet::new();
    for batch in reader {
        let batch = batch.map_err(|e| unexpected(&e))?;
        columns = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        for key in row_keys(&batch, &columns).map_err(|e| unexpected(&e))? {
            keys.insert(key);
        }
    }
    Ok(Arc::new((columns, keys)))
}

/// Each row's values of `columns`, canonical and joined (one key per row:
/// what equality deletes compare, and what the correct consumer indexes by).
pub fn row_keys(batch: &RecordBatch, columns: &[String]) -> Result<Vec<String>, ReadError> {
    let mut rendered = Vec::new();
    for name in columns {
        let array = batch
            .column_by_name(name)
            .ok_or_else(|| ReadError::NoColumn(name.clone()))?;
        rendered.push(canonical::arrow_column(array)?);
    }
    Ok((0..batch.num_rows())
        .map(|i| {
            rendered
                .iter()
                .map(|c| c[i].as_str())
                .collect::<Vec<_>>()
                .join("\u{1f}")
        })
        .collect())
}

fn without_deleted(batch: RecordBatch, deleted: &[DeletedKeys]) -> iceberg::Result<RecordBatch> {
    if deleted.is_empty() || batch.num_rows() == 0 {
        return Ok(batch);
    }
    let unexpected = |e: &dyn std::fmt::Display| {
        iceberg::Error::new(iceberg::ErrorKind::Unexpected, e.to_string())
    };
    let mut keep = vec![true; batch.num_rows()];
    for file in deleted {
        let (columns, keys) = file.as_ref();
        if keys.is_empty() {
            continue;
        }
        for (i, key) in row_keys(&batch, columns)
            .map_err(|e| unexpected(&e))?
            .iter()
            .enumerate()
        {
            if keys.contains(key) {
                keep[i] = false;
            }
        }
    }
    datafusion::arrow::compute::filter_record_batch(&batch, &BooleanArray::from(keep))
        .map_err(|e| unexpected(&e))
}

#[cfg(test)]
mod tests {
    use iceberg::scan::FileScanTaskDeleteFile;
    use iceberg::spec::DataContentType;

    fn delete(path: &str, file_type: DataContentType) -> FileScanTaskDeleteFile {
        FileScanTaskDeleteFile {
            file_path: path.to_owned(),
            file_size_in_bytes: 1,
            file_type,
            partition_spec_id: 0,
            equality_ids: None,
        }
    }

    /// A deletion vector is refused by name; position and equality delete
    /// files in Parquet are read.
    #[test]
    fn deletion_vectors_are_refused_by_name() {
        let why = super::unreadable(&delete(
            "s3://lake/t/data/00001-dv.puffin",
            DataContentType::PositionDeletes,
        ))
        .unwrap();
        assert!(
            why.contains("00001-dv.puffin") && why.contains("deletion vector"),
            "{why}"
        );
        for (path, kind) in [
            ("/lake/t/data/pos.parquet", DataContentType::PositionDeletes),
            ("/lake/t/data/eq.parquet", DataContentType::EqualityDeletes),
        ] {
            assert_eq!(super::unreadable(&delete(path, kind)), None);
        }
    }
}
