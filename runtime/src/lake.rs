//! The lake: an Iceberg SQL catalog in a sqlite file and a filesystem
//! warehouse, both under the state directory (the local stack), or, built
//! with `--features aws`, an AWS Glue catalog and an S3 warehouse (the aws
//! stack's moto: [`glue`]). Everything above this module sees one [`Lake`].
//!
//! ```text
//! <state>/lake/catalog.db    the catalog (JDBC-catalog layout: `iceberg_tables`,
//!                            `iceberg_namespace_properties`), catalog name `lossproof`
//! <state>/lake/warehouse/    data and metadata files (`file://` locations)
//! ```
//!
//! The sqlite file is in WAL mode (`catalog.db-wal` and `-shm` beside it
//! while it is open): one consumer stopped mid-read must not hold up the
//! others' commits ([`Journal`]).
//!
//! It is files only, not a process: `lossproof up` creates it after the other
//! components (idempotently), `lossproof down --purge` removes it with the
//! rest of the state directory. It does not appear in `lossproof status`.
//!
//! iceberg-rust (this module) and pyiceberg open the SAME catalog: pyiceberg
//! with `SqlCatalog("lossproof", uri=lake.pyiceberg_uri(),
//! warehouse=lake.warehouse_uri())`. Both sides write the catalog name into
//! the `catalog_name` column and only see rows carrying theirs, so the name
//! must be [`CATALOG_NAME`] on both (checked by `tests/lake.rs`).
//!
//! Both put a new table at `{warehouse}/{namespace}/{table}` (pyiceberg 0.12
//! too), and each reads the other's tables by following the catalog's
//! metadata location.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;
use futures_util::TryStreamExt as _;
use iceberg::io::LocalFsStorageFactory;
use iceberg::spec::{DataFile, DataFileFormat, Manifest, ManifestFile};
use iceberg::table::Table;
use iceberg::transaction::{ApplyTransactionAction as _, Transaction};
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::base_writer::equality_delete_writer::{
    EqualityDeleteFileWriterBuilder, EqualityDeleteWriterConfig,
};
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::{IcebergWriter as _, IcebergWriterBuilder as _};
use iceberg::{CatalogBuilder as _, NamespaceIdent, TableIdent};
use iceberg_catalog_sql::{SqlBindStyle, SqlCatalog, SqlCatalogBuilder};
use parquet::file::properties::WriterProperties;

use crate::error::{Error, IoContext as _, Result};
use crate::profile::LakeLocation;

mod commit;
mod compact;
#[cfg(feature = "aws")]
mod glue;
pub mod history;
mod maintenance;
pub mod mirror;
mod ordered;
pub mod read;
pub mod rest;
mod schema;
mod sql;

pub use commit::{Commit, CommitError, MERGE_FULL_ENTRIES, MERGE_MIN_COUNT, head};
pub use compact::{CARRIED_PREFIX, Compacted, LiveFile, ident, live_files};
pub use maintenance::{
    Expired, MaintenanceError, OrphanFiles, Retain, latest_properties, latest_properties_on,
    latest_property,
};
pub use read::ReadError;
pub use schema::{SchemaChange, SchemaError, check_evolution, check_promotion};
pub use sql::SESSION_MEMORY;

/// The catalog name both iceberg-rust and pyiceberg use for the lake (the
/// value of the `catalog_name` column).
pub const CATALOG_NAME: &str = "lossproof";

/// The lake's folder inside the state directory.
const LAKE_DIR: &str = "lake";

/// The lake: where it is and an open catalog.
#[derive(Debug)]
pub struct Lake {
    backend: Backend,
    /// Manifests this process has read, by path. Manifest files are
    /// immutable, and every commit of a writer that rewrites files reads the
    /// table's manifests again: parsing one re-validates its Avro schema,
    /// which was most of a commit's CPU before this cache (measured with
    /// `perf` on the correct consumer).
    manifests: std::sync::Mutex<HashMap<String, Arc<Manifest>>>,
}

#[derive(Debug)]
// One per lake: its size does not matter. Without `--features aws` the
// Glue variant is gone and clippy counts the SQL one large.
#[cfg_attr(not(feature = "aws"), allow(clippy::large_enum_variant))]
enum Backend {
    Sql {
        /// The folder of the catalog's sqlite file (`<state>/lake` locally).
        root: PathBuf,
        catalog_db: PathBuf,
        warehouse: PathBuf,
        catalog: SqlCatalog,
        /// The same sqlite file, for the compare-and-swap of [`Lake::commit`].
        db: sqlx::SqlitePool,
    },
    #[cfg(feature = "aws")]
    Glue(glue::Glue),
    /// A team's REST catalog: read, and written only by iceberg-rust's own
    /// commits ([`rest`]).
    Rest(Box<rest::Rest>),
}

/// Manifests kept by [`Lake::manifest`] before the cache starts over.
const MANIFEST_CACHE_MAX: usize = 4_096;

impl Lake {
    /// The lake of the state directory at `state_root`: its folders, the
    /// sqlite file and the catalog's tables are created if missing
    /// (idempotent). Needs a tokio runtime.
    ///
    /// Its sqlite file is kept in write-ahead-log mode ([`Journal::WriteAheadLog`]):
    /// every consumer of a run commits to this one file, and a consumer
    /// paused or killed while it reads must not hold up another's commit.
    pub async fn open(state_root: &Path) -> Result<Self> {
        let root = state_root.join(LAKE_DIR);
        Self::open_sqlite(
            &root.join("catalog.db"),
            &root.join("warehouse"),
            Journal::WriteAheadLog,
        )
        .await
    }

    /// Where the lake of the state directory at `state_root` is.
    #[must_use]
    pub fn location_in(state_root: &Path) -> LakeLocation {
        let root = state_root.join(LAKE_DIR);
        LakeLocation::Sql {
            catalog_db: root.join("catalog.db"),
            warehouse: root.join("warehouse"),
        }
    }

    /// The lake at `at`.
    pub async fn open_at(at: &LakeLocation) -> Result<Self> {
        match at {
            LakeLocation::Sql {
                catalog_db,
                warehouse,
            } => Self::open_catalog(catalog_db, warehouse).await,
            #[cfg(feature = "aws")]
            LakeLocation::Glue(at) => Ok(Self {
                backend: Backend::Glue(glue::Glue::open(at).await?),
                manifests: std::sync::Mutex::default(),
            }),
            #[cfg(not(feature = "aws"))]
            LakeLocation::Glue(at) => Err(Error::Setup(format!(
                "the lake is a Glue catalog on S3 ({}): this lossproof was built without it \
                 (cargo build --features aws)",
                at.warehouse
            ))),
        }
    }

    /// The lake behind the Iceberg REST catalog at `uri` (`http://…` or
    /// `https://…`), with the catalog's `properties` (`warehouse`,
    /// `prefix`, …) and its token or OAuth2 credential
    /// ([`rest::RestSecrets::from_env`]). Read-only but for iceberg-rust's
    /// own commits.
    pub async fn open_rest(
        uri: &str,
        properties: &[(String, String)],
        secrets: &rest::RestSecrets,
    ) -> Result<Self> {
        Ok(Self {
            backend: Backend::Rest(Box::new(rest::Rest::open(uri, properties, secrets).await?)),
            manifests: std::sync::Mutex::default(),
        })
    }

    /// Whether [`Lake::commit_all`] moves several tables all or nothing
    /// (the SQL catalog) or one after another (Glue: [`glue`]).
    #[must_use]
    pub fn commits_tables_atomically(&self) -> bool {
        match &self.backend {
            Backend::Sql { .. } => true,
            #[cfg(feature = "aws")]
            Backend::Glue(_) => false,
            Backend::Rest(_) => false,
        }
    }

    /// The lake whose Iceberg SQL catalog is the sqlite file `catalog_db`
    /// (created if missing, with the catalog's tables) and whose data lives
    /// under `warehouse` (created if missing): an external profile's lake.
    /// Its journal mode is left as found: the file is the team's.
    pub async fn open_catalog(catalog_db: &Path, warehouse: &Path) -> Result<Self> {
        Self::open_sqlite(catalog_db, warehouse, Journal::AsFound).await
    }

    async fn open_sqlite(catalog_db: &Path, warehouse: &Path, journal: Journal) -> Result<Self> {
        std::fs::create_dir_all(warehouse).context(|| format!("create {}", warehouse.display()))?;
        let warehouse = std::fs::canonicalize(warehouse)
            .context(|| format!("resolve {}", warehouse.display()))?;
        let folder = catalog_db.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(folder).context(|| format!("create {}", folder.display()))?;
        let root =
            std::fs::canonicalize(folder).context(|| format!("resolve {}", folder.display()))?;
        let catalog_db = root.join(catalog_db.file_name().unwrap_or("catalog.db".as_ref()));
        let uri = sqlx_sqlite_uri(&catalog_db);
        let cannot_open =
            |e: sqlx::Error| Error::Setup(format!("cannot open {}: {e}", catalog_db.display()));
        let options = uri
            .parse::<sqlx::sqlite::SqliteConnectOptions>()
            .map_err(cannot_open)?;
        let options = match journal {
            Journal::AsFound => options,
            Journal::WriteAheadLog => {
                write_ahead_log(&options).await.map_err(cannot_open)?;
                options.synchronous(sqlx::sqlite::SqliteSynchronous::Normal)
            }
        };
        let catalog = SqlCatalogBuilder::default()
            .uri(uri.clone())
            .warehouse_location(file_uri(&warehouse))
            .sql_bind_style(SqlBindStyle::QMark)
            .with_storage_factory(Arc::new(LocalFsStorageFactory))
            .load(CATALOG_NAME, HashMap::new())
            .await
            .map_err(|e| {
                Error::Setup(format!(
                    "cannot open the lake catalog {}: {e}",
                    catalog_db.display()
                ))
            })?;
        let db = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .map_err(cannot_open)?;
        Ok(Self {
            backend: Backend::Sql {
                root,
                catalog_db,
                warehouse,
                catalog,
                db,
            },
            manifests: std::sync::Mutex::default(),
        })
    }

    /// The manifest `file` of `table`, read once per process.
    pub(crate) async fn manifest(
        &self,
        table: &Table,
        file: &ManifestFile,
    ) -> iceberg::Result<Arc<Manifest>> {
        let cached = self.cached_manifests().get(&file.manifest_path).cloned();
        if let Some(manifest) = cached {
            return Ok(manifest);
        }
        let manifest = Arc::new(file.load_manifest(table.file_io()).await?);
        let mut cache = self.cached_manifests();
        if cache.len() >= MANIFEST_CACHE_MAX {
            cache.clear();
        }
        cache.insert(file.manifest_path.clone(), Arc::clone(&manifest));
        Ok(manifest)
    }

    fn cached_manifests(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Manifest>>> {
        // A panic while holding the lock leaves a map of whole entries.
        self.manifests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Where each table of `namespace` has its current metadata, by table
    /// name, in one read of the catalog: what a follower checks before it
    /// loads a table (a load reads and parses the whole metadata file).
    /// `None` where the catalog has no cheap way to say (Glue, REST): load
    /// the tables.
    ///
    /// # Errors
    /// When the SQL catalog cannot be read.
    pub async fn metadata_locations(
        &self,
        namespace: &str,
    ) -> Result<Option<HashMap<String, String>>> {
        match &self.backend {
            Backend::Sql { db, .. } => {
                let rows: Vec<(String, Option<String>)> = sqlx::query_as(
                    "SELECT table_name, metadata_location FROM iceberg_tables \
                     WHERE catalog_name = ? AND table_namespace = ?",
                )
                .bind(CATALOG_NAME)
                .bind(namespace)
                .fetch_all(db)
                .await
                .map_err(|e| Error::Setup(format!("read the lake catalog: {e}")))?;
                Ok(Some(
                    rows.into_iter()
                        .filter_map(|(table, location)| Some((table, location?)))
                        .collect(),
                ))
            }
            #[cfg(feature = "aws")]
            Backend::Glue(_) => Ok(None),
            Backend::Rest(_) => Ok(None),
        }
    }

    /// The iceberg catalog (namespaces, tables, commits).
    #[must_use]
    pub fn catalog(&self) -> &dyn iceberg::Catalog {
        match &self.backend {
            Backend::Sql { catalog, .. } => catalog,
            #[cfg(feature = "aws")]
            Backend::Glue(glue) => glue.catalog(),
            Backend::Rest(rest) => &rest.catalog,
        }
    }

    /// Where the lake is, for a person: `<state>/lake`, or the S3 warehouse.
    #[must_use]
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Sql { root, .. } => root.display().to_string(),
            #[cfg(feature = "aws")]
            Backend::Glue(glue) => format!("Glue catalog, warehouse {}", glue.location().warehouse),
            Backend::Rest(rest) => format!("REST catalog {}", rest.uri),
        }
    }

    /// The local lake's sqlite file, folder of that file and warehouse
    /// folder; `None` on S3 or behind a REST catalog.
    fn local(&self) -> Option<(&Path, &Path, &Path)> {
        match &self.backend {
            Backend::Sql {
                root,
                catalog_db,
                warehouse,
                ..
            } => Some((catalog_db, root, warehouse)),
            #[cfg(feature = "aws")]
            Backend::Glue(_) => None,
            Backend::Rest(_) => None,
        }
    }

    /// `<state>/lake` (the local lake only).
    ///
    /// # Panics
    /// On the S3 lake.
    #[must_use]
    pub fn root(&self) -> &Path {
        self.local().expect("a local lake").1
    }

    /// The sqlite file holding the catalog (the local lake only).
    ///
    /// # Panics
    /// On the S3 lake.
    #[must_use]
    pub fn catalog_db(&self) -> PathBuf {
        self.local().expect("a local lake").0.to_owned()
    }

    /// The warehouse folder (the local lake only).
    ///
    /// # Panics
    /// On the S3 lake.
    #[must_use]
    pub fn warehouse(&self) -> PathBuf {
        self.local().expect("a local lake").2.to_owned()
    }

    /// The warehouse as the URI both sides use (`file://…` or `s3://…`).
    #[must_use]
    pub fn warehouse_uri(&self) -> String {
        match &self.backend {
            Backend::Sql { warehouse, .. } => file_uri(warehouse),
            #[cfg(feature = "aws")]
            Backend::Glue(glue) => glue.location().warehouse.clone(),
            // The server decides where each table's files are.
            Backend::Rest(rest) => rest.uri.clone(),
        }
    }

    /// The catalog as a `SQLAlchemy` URL, for pyiceberg's `SqlCatalog(uri=…)`
    /// (`sqlite:////abs/path`: three slashes, then the absolute path).
    #[must_use]
    pub fn pyiceberg_uri(&self) -> String {
        sqlalchemy_sqlite_uri(&self.catalog_db())
    }

    /// Create `namespace` unless it exists.
    pub async fn ensure_namespace(&self, namespace: &str) -> iceberg::Result<NamespaceIdent> {
        let ident = NamespaceIdent::new(namespace.to_owned());
        if !self.catalog().namespace_exists(&ident).await? {
            self.catalog()
                .create_namespace(&ident, HashMap::new())
                .await?;
        }
        Ok(ident)
    }

    /// The names of `namespace`'s tables, sorted; none when the namespace
    /// does not exist (yet).
    pub async fn table_names(&self, namespace: &str) -> iceberg::Result<Vec<String>> {
        let ident = NamespaceIdent::new(namespace.to_owned());
        if !self.catalog().namespace_exists(&ident).await? {
            return Ok(Vec::new());
        }
        let mut names: Vec<String> = self
            .catalog()
            .list_tables(&ident)
            .await?
            .into_iter()
            .map(|t| t.name)
            .collect();
        names.sort();
        Ok(names)
    }

    /// Drop every table of `namespace`, the namespace, and its files.
    pub async fn drop_namespace(&self, namespace: &str) -> iceberg::Result<()> {
        let ident = NamespaceIdent::new(namespace.to_owned());
        if !self.catalog().namespace_exists(&ident).await? {
            return Ok(());
        }
        // Where each table's files are (the S3 lake has no folder to remove).
        let mut locations = Vec::new();
        for table in self.catalog().list_tables(&ident).await? {
            if self.local().is_none()
                && let Ok(loaded) = self.catalog().load_table(&table).await
            {
                locations.push((
                    loaded.file_io().clone(),
                    loaded.metadata().location().to_owned(),
                ));
            }
            self.catalog().drop_table(&table).await?;
        }
        self.catalog().drop_namespace(&ident).await?;
        if let Backend::Sql { warehouse, .. } = &self.backend {
            let folder = warehouse.join(namespace);
            if folder.exists() {
                std::fs::remove_dir_all(&folder).map_err(|e| {
                    iceberg::Error::new(
                        iceberg::ErrorKind::Unexpected,
                        format!("remove {}: {e}", folder.display()),
                    )
                })?;
            }
        }
        for (io, location) in locations {
            io.delete_prefix(&format!("{}/", location.trim_end_matches('/')))
                .await?;
        }
        Ok(())
    }

    /// Write `batches` (in the table's current Arrow schema, see
    /// [`iceberg::arrow::schema_to_arrow_schema`]) as new Parquet data files
    /// and commit them with one `fast_append` whose snapshot summary carries
    /// `snapshot_properties`. Returns the table after the commit.
    ///
    /// This is iceberg-rust's own commit (it rebases on a changed table
    /// without telling); writers that need a base check use [`Lake::commit`].
    pub async fn append(
        &self,
        table: &Table,
        batches: Vec<RecordBatch>,
        snapshot_properties: HashMap<String, String>,
    ) -> iceberg::Result<Table> {
        let data_files = write_data_files(table, batches).await?;
        let tx = Transaction::new(table);
        let tx = tx
            .fast_append()
            .add_data_files(data_files)
            .set_snapshot_properties(snapshot_properties)
            .apply(tx)?;
        tx.commit(self.catalog()).await
    }

    /// Every row of the table's current snapshot, as Arrow (deletes applied).
    pub async fn scan(&self, ident: &TableIdent) -> iceberg::Result<Vec<RecordBatch>> {
        let table = self.catalog().load_table(ident).await?;
        table
            .scan()
            .select_all()
            .build()?
            .to_arrow()
            .await?
            .try_collect()
            .await
    }
}

/// Write `batches` (in the table's current Arrow schema) as Parquet data
/// files of `table`; nothing is committed.
pub async fn write_data_files(
    table: &Table,
    batches: Vec<RecordBatch>,
) -> iceberg::Result<Vec<DataFile>> {
    let mut writer = DataFileWriterBuilder::new(rolling_writer(
        table,
        table.metadata().current_schema().clone(),
    )?)
    .build(None)
    .await?;
    for batch in batches {
        writer.write(batch).await?;
    }
    writer.close().await
}

/// Write equality-delete files of `table` keyed on the fields `key_ids`:
/// `batches` are in the table's current Arrow schema (only the key columns
/// are kept). Committed by a [`Commit::row_delta`], they delete every row of
/// older snapshots whose key equals one of theirs.
pub async fn write_equality_deletes(
    table: &Table,
    key_ids: Vec<i32>,
    batches: Vec<RecordBatch>,
) -> iceberg::Result<Vec<DataFile>> {
    let schema = table.metadata().current_schema().clone();
    let config = EqualityDeleteWriterConfig::new(key_ids.clone(), schema.clone())?;
    let projected = Arc::new(
        iceberg::spec::Schema::builder()
            .with_fields(
                key_ids
                    .iter()
                    .map(|id| {
                        schema.field_by_id(*id).cloned().ok_or_else(|| {
                            iceberg::Error::new(
                                iceberg::ErrorKind::DataInvalid,
                                format!("no field with id {id} in {}", table.identifier()),
                            )
                        })
                    })
                    .collect::<iceberg::Result<Vec<_>>>()?,
            )
            .build()?,
    );
    let mut writer =
        EqualityDeleteFileWriterBuilder::new(rolling_writer(table, projected)?, config)
            .build(None)
            .await?;
    for batch in batches {
        writer.write(batch).await?;
    }
    writer.close().await
}

/// The field id of a position delete file's `file_path` column (the spec's
/// reserved id).
pub const POSITION_DELETE_FILE_PATH_ID: i32 = 2_147_483_546;
/// The field id of a position delete file's `pos` column.
pub const POSITION_DELETE_POS_ID: i32 = 2_147_483_545;

/// Write position-delete files of `table`: one row per `(data file path,
/// row position)` to delete, sorted by path then position as the spec asks.
/// Committed by a [`Commit::row_delta`], they delete exactly those rows of
/// those files (iceberg-rust 0.10 has no position-delete writer: this is
/// the rolling Parquet writer with the spec's reserved field ids, marked as
/// position deletes).
pub async fn write_position_deletes(
    table: &Table,
    mut positions: Vec<(String, i64)>,
) -> iceberg::Result<Vec<DataFile>> {
    use iceberg::spec::{DataContentType, NestedField, PrimitiveType, Type};
    if positions.is_empty() {
        return Ok(Vec::new());
    }
    positions.sort_unstable();
    let schema = Arc::new(
        iceberg::spec::Schema::builder()
            .with_fields([
                Arc::new(NestedField::required(
                    POSITION_DELETE_FILE_PATH_ID,
                    "file_path",
                    Type::Primitive(PrimitiveType::String),
                )),
                Arc::new(NestedField::required(
                    POSITION_DELETE_POS_ID,
                    "pos",
                    Type::Primitive(PrimitiveType::Long),
                )),
            ])
            .build()?,
    );
    let arrow_schema = Arc::new(iceberg::arrow::schema_to_arrow_schema(&schema)?);
    let (paths, rows): (Vec<String>, Vec<i64>) = positions.into_iter().unzip();
    let batch = RecordBatch::try_new(
        arrow_schema,
        vec![
            Arc::new(arrow_array::StringArray::from(paths)),
            Arc::new(arrow_array::Int64Array::from(rows)),
        ],
    )
    .map_err(|e| iceberg::Error::new(iceberg::ErrorKind::Unexpected, e.to_string()))?;
    let mut writer = rolling_writer(table, schema)?.build();
    writer.write(&None, &batch).await?;
    writer
        .close()
        .await?
        .into_iter()
        .map(|mut file| {
            file.content(DataContentType::PositionDeletes);
            file.build().map_err(|e| {
                iceberg::Error::new(
                    iceberg::ErrorKind::DataInvalid,
                    format!("a position delete file: {e}"),
                )
            })
        })
        .collect()
}

/// Parquet files under the table's `data/` folder with names no other
/// writer uses, rolled at the default size.
fn rolling_writer(
    table: &Table,
    schema: iceberg::spec::SchemaRef,
) -> iceberg::Result<
    RollingFileWriterBuilder<
        ParquetWriterBuilder,
        DefaultLocationGenerator,
        DefaultFileNameGenerator,
    >,
> {
    Ok(RollingFileWriterBuilder::new_with_default_file_size(
        ParquetWriterBuilder::new(WriterProperties::default(), schema),
        table.file_io().clone(),
        DefaultLocationGenerator::new(table.metadata())?,
        DefaultFileNameGenerator::new(unique_prefix(), None, DataFileFormat::Parquet),
    ))
}

/// `file:///abs/path`.
/// A sqlite file as a `SQLAlchemy` URL (pyiceberg's `SqlCatalog(uri=…)`):
/// `sqlite:///` + the absolute path.
pub(crate) fn sqlalchemy_sqlite_uri(path: &Path) -> String {
    format!("sqlite:///{}", path.display())
}

pub(crate) fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// sqlx's sqlite URL: `sqlite://` + the absolute path (percent-encoded where
/// sqlx would read a query or a fragment), created if missing.
fn sqlx_sqlite_uri(path: &Path) -> String {
    let mut encoded = String::new();
    for c in path.display().to_string().chars() {
        match c {
            '%' => encoded.push_str("%25"),
            '?' => encoded.push_str("%3F"),
            '#' => encoded.push_str("%23"),
            c => encoded.push(c),
        }
    }
    format!("sqlite://{encoded}?mode=rwc")
}

/// How [`Lake::open_sqlite`] treats the sqlite file's journal.
#[derive(Clone, Copy)]
enum Journal {
    /// A team's catalog file: not changed.
    AsFound,
    /// lossproof's own local lake. In sqlite's default rollback-journal mode
    /// a reader holds a lock that a writer must wait out, and a writer
    /// fsyncs under its lock: one consumer SIGSTOPped (`pause consumer`)
    /// mid-read stalled every other consumer's commits until it was resumed
    /// (measured: the correct consumer's lag rose to 5.8 s while only the
    /// careless one was paused 5 s). In WAL mode readers and the writer do not
    /// block each other; lossproof's own commit swaps run with `synchronous`
    /// NORMAL (durable across a killed process, which is what the faults do,
    /// not across a power cut). What is left: a consumer stopped inside its
    /// own write transaction (microseconds per commit) still holds the single
    /// writer lock; docs/run.md, "Freshness", limits.
    WriteAheadLog,
}

/// Put the sqlite file of `options` in WAL mode (a property of the file,
/// kept for every later connection, iceberg-rust's, pyiceberg's and
/// DuckDB's included). Switching needs the file to itself for a moment and
/// sqlite does not wait for that, so a switch that meets another process
/// (two opening a new lake at once) is retried, bounded; a file already in
/// WAL mode needs no switch.
async fn write_ahead_log(options: &sqlx::sqlite::SqliteConnectOptions) -> sqlx::Result<()> {
    use sqlx::ConnectOptions as _;
    let mut connection = options.clone().connect().await?;
    let mut attempt = 0;
    let switched = loop {
        match sqlx::query_scalar::<_, String>("PRAGMA journal_mode = WAL")
            .fetch_one(&mut connection)
            .await
        {
            Ok(mode) => break Ok(mode),
            Err(e) if attempt < 50 && is_busy(&e) => {
                attempt += 1;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => break Err(e),
        }
    };
    let closed = sqlx::Connection::close(connection).await;
    let mode = switched?;
    closed?;
    if mode.eq_ignore_ascii_case("wal") {
        Ok(())
    } else {
        Err(sqlx::Error::Protocol(format!(
            "sqlite kept journal mode {mode}, not WAL"
        )))
    }
}

/// Whether `e` is sqlite's "database is locked" (`SQLITE_BUSY`, primary
/// result code 5, with or without an extended code on top).
fn is_busy(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db)
        if db.code().and_then(|c| c.parse::<i32>().ok()).is_some_and(|c| c & 0xff == 5))
}

/// A data-file name prefix no other append (of this or another process) uses.
fn unique_prefix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "lossproof-{nanos:x}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        assert_eq!(
            sqlx_sqlite_uri(Path::new("/tmp/a b?c#d%e/catalog.db")),
            "sqlite:///tmp/a b%3Fc%23d%25e/catalog.db?mode=rwc"
        );
        assert_eq!(file_uri(Path::new("/tmp/w")), "file:///tmp/w");
    }
}
