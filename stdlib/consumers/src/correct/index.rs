//! The correct consumer's key index: for every key of every table, what the
//! lake holds for it, without holding the table in memory.
//!
//! Per `(table, key)` it keeps the newest applied change ([`Applied`]: its
//! position, whether it was a delete, its transaction), where that change's
//! `_lp_state` row is, and where the key's live data row is (file, row
//! position). A batch looks up only its own keys: the positions decide which
//! changes win, the locations are what its position delete files name.
//!
//! It is an embedded B-tree on local disk ([redb]), so its memory is a page
//! cache of fixed size whatever the table's size. It is a CACHE of the lake,
//! never the truth. It records, per table, the table's uuid and the
//! snapshot it reflects, and is updated only AFTER the lake committed.
//! [`sync`] compares that with the lake before the consumer trusts it:
//!
//! - the same snapshot: in step, nothing is read;
//! - an older snapshot of the table's history (a crash after the commit and
//!   before the index update; a compaction or a fold that committed since):
//!   the data files the later snapshots added are read (keys only, and the
//!   `_lp_state` rows) and the index catches up;
//! - a snapshot the table's history does not have (an index ahead of the
//!   lake: the lake was rolled back or restored, or the snapshots in between
//!   expired), another table uuid (a rebuilt or recreated table), or no
//!   index at all: it is cleared and rebuilt from every live file.
//!
//! Why a row's location is "the newest file holding the key": every writer of
//! these tables (a batch, a compaction, a fold of `_lp_state`) writes at most
//! one row per key per file, and a later version of a key is always in a file
//! with a higher data sequence number. So reading added files in commit order
//! (or live files in sequence order) and letting the last one win gives each
//! key's live row. A key whose newest change is a delete has no live row:
//! its recorded location is ignored ([`Entry::live_row`]), so the order in
//! which a catch-up reads data files and `_lp_state` rows does not matter.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array as _, BooleanArray, Int32Array, Int64Array, StringArray};
use iceberg::spec::DataContentType;
use iceberg::table::Table;
use redb::{ReadableDatabase as _, ReadableTable as _, TableDefinition};

use super::position::Position;
use super::state::{Applied, STATE_TABLE, row_keys};
use crate::error::{Error, Result};

/// Where the key indexes of a stack whose state is in `state_root` live:
/// `<state>/index/<namespace>/<prefix>keys.redb` ([`super::Config::index_path`]).
#[must_use]
pub fn dir(state_root: &Path) -> PathBuf {
    state_root.join("index")
}

/// `table \0 key` -> [`Entry`] (fixed-width, [`Entry::encode`]).
const KEYS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("keys");
/// File number -> path (locations name files by number).
const FILES: TableDefinition<u32, &str> = TableDefinition::new("files");
/// Path -> file number.
const PATHS: TableDefinition<&str, u32> = TableDefinition::new("paths");
/// `synced/<table>` -> `<uuid> <snapshot id>` (`-1`: no snapshot yet).
const META: TableDefinition<&str, &str> = TableDefinition::new("meta");

/// The page cache: the index's memory, whatever the table's size.
const CACHE_BYTES: usize = 64 << 20;

/// Index writes per redb transaction while catching up (bounds the memory
/// of a catch-up after a compaction of a large table).
const CHUNK: usize = 100_000;

/// A row of a file: `file` numbers a path in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub file: u32,
    pub pos: u64,
}

/// What the index holds for one key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Entry {
    /// The newest applied change and where its `_lp_state` row is.
    pub applied: Option<(Applied, Location)>,
    /// Where the newest data row of the key is (see [`Entry::live_row`]).
    pub row: Option<Location>,
}

impl Entry {
    /// The key's live data row: none when its newest change was a delete.
    #[must_use]
    pub fn live_row(&self) -> Option<Location> {
        match self.applied {
            Some((applied, _)) if applied.deleted => None,
            _ => self.row,
        }
    }

    /// The position the lake holds for the key.
    #[must_use]
    pub fn position(&self) -> Option<Position> {
        self.applied.map(|(a, _)| a.position)
    }

    const LEN: usize = 1 + 8 + 8 + 1 + 1 + 1 + 8 + 4 + 8 + 1 + 4 + 8;

    fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        match self.applied {
            None => put(&[0; 1 + 8 + 8 + 1 + 1 + 1 + 8 + 4 + 8]),
            Some((a, state)) => {
                put(&[1]);
                put(&a.position.after_commit.to_le_bytes());
                put(&a.position.lsn.to_le_bytes());
                put(&[
                    a.position.rank,
                    u8::from(a.deleted),
                    u8::from(a.tx_id.is_some()),
                ]);
                put(&a.tx_id.unwrap_or(0).to_le_bytes());
                put(&state.file.to_le_bytes());
                put(&state.pos.to_le_bytes());
            }
        }
        match self.row {
            None => put(&[0; 1 + 4 + 8]),
            Some(row) => {
                put(&[1]);
                put(&row.file.to_le_bytes());
                put(&row.pos.to_le_bytes());
            }
        }
        out
    }

    fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != Self::LEN {
            return Err(Error::Corrupt(format!(
                "key index: an entry of {} bytes, expected {}",
                bytes.len(),
                Self::LEN
            )));
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
        let applied = (bytes[0] == 1).then(|| {
            let applied = Applied {
                position: Position {
                    after_commit: u64_at(1),
                    lsn: u64_at(9),
                    rank: bytes[17],
                },
                deleted: bytes[18] == 1,
                tx_id: (bytes[19] == 1).then(|| i64::from_le_bytes(u64_at(20).to_le_bytes())),
            };
            let state = Location {
                file: u32_at(28),
                pos: u64_at(32),
            };
            (applied, state)
        });
        let row = (bytes[40] == 1).then(|| Location {
            file: u32_at(41),
            pos: u64_at(45),
        });
        Ok(Self { applied, row })
    }
}

fn key_bytes(table: &str, key: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(table.len() + 1 + key.len());
    out.extend_from_slice(table.as_bytes());
    out.push(0);
    out.extend_from_slice(key.as_bytes());
    out
}

/// One change to the index.
#[derive(Debug, Clone)]
pub enum Write {
    /// The key's newest data row is at `pos` of `path`.
    Row {
        table: String,
        key: Arc<str>,
        path: Arc<str>,
        pos: u64,
    },
    /// The key's newest applied change, its `_lp_state` row at `pos` of `path`.
    Applied {
        table: String,
        key: Arc<str>,
        applied: Applied,
        path: Arc<str>,
        pos: u64,
    },
    /// The index now reflects snapshot `snapshot` (`-1`: none) of the table
    /// with uuid `uuid`.
    Synced {
        table: String,
        uuid: String,
        snapshot: i64,
    },
}

/// How long [`KeyIndex::open`] waits for another process to let go of the
/// file (a killed consumer not yet gone) before it fails.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Create an empty index at `path` atomically: initialised beside it and
/// renamed into place. redb writes a new file's magic number last, so a
/// consumer killed while redb initialised the file in place (it can be
/// killed at any moment, its first second included) would leave a file no
/// later open accepts ("Not a redb database: magic number mismatch").
fn initialize(path: &Path) -> std::io::Result<()> {
    let fresh = path.with_extension("redb.new");
    // A leftover of a consumer killed here: nobody else writes this name.
    match std::fs::remove_file(&fresh) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    drop(redb::Database::create(&fresh).map_err(std::io::Error::other)?);
    std::fs::rename(&fresh, path)
}

/// Whether redb refused a file because it is not a readable database
/// (as opposed to a lock held, or an I/O failure of the disk).
fn unreadable(error: &redb::StorageError) -> bool {
    match error {
        redb::StorageError::Corrupted(_) => true,
        redb::StorageError::Io(e) => e.kind() == std::io::ErrorKind::InvalidData,
        _ => false,
    }
}

/// The index of one consumer namespace (and table prefix), on local disk.
#[derive(Clone)]
pub struct KeyIndex {
    db: Arc<redb::Database>,
    path: PathBuf,
}

fn redb_error(what: &str) -> impl Fn(&dyn std::fmt::Display) -> Error + '_ {
    move |e| Error::Index(format!("{what}: {e}"))
}

impl KeyIndex {
    /// Open (or create) the index file at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_within(path, LOCK_WAIT)
    }

    fn open_within(path: &Path, wait: std::time::Duration) -> Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::Index(format!("cannot create {}: {e}", parent.display())))?;
        }
        let cannot = |e: &dyn std::fmt::Display| {
            Error::Index(format!("cannot open {}: {e}", path.display()))
        };
        if !path.exists() {
            initialize(path).map_err(|e| cannot(&e))?;
        }
        // A consumer started again right after a kill can find the killed
        // one still holding the file's lock for a moment (it is torn down,
        // its pages unmapped): wait for it, bounded, rather than fail.
        let deadline = std::time::Instant::now() + wait;
        let mut discarded = false;
        let db = loop {
            match redb::Database::builder()
                .set_cache_size(CACHE_BYTES)
                .create(path)
            {
                Err(redb::DatabaseError::DatabaseAlreadyOpen)
                    if std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                // The index is a cache of the lake: a file redb cannot read
                // (left by a crash inside an older lossproof's first open,
                // or damaged on disk) is discarded, and `sync` rebuilds the
                // index from the lake's live files. Once only.
                Err(redb::DatabaseError::Storage(e)) if !discarded && unreadable(&e) => {
                    eprintln!(
                        "warning: key index {}: {e}; discarding it (a cache of the lake, \
                         rebuilt from the lake's live files)",
                        path.display()
                    );
                    std::fs::remove_file(path).map_err(|e| cannot(&e))?;
                    initialize(path).map_err(|e| cannot(&e))?;
                    discarded = true;
                }
                other => break other.map_err(|e| cannot(&e))?,
            }
        };
        Ok(Self {
            db: Arc::new(db),
            path: path.to_owned(),
        })
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entries of `keys` of `table`, in order (default: never seen).
    pub fn get_many(&self, table: &str, keys: &[&str]) -> Result<Vec<Entry>> {
        let read = self.db.begin_read().map_err(|e| redb_error("read")(&e))?;
        let Some(entries) = open_read(&read, KEYS)? else {
            return Ok(vec![Entry::default(); keys.len()]);
        };
        keys.iter()
            .map(|key| {
                match entries
                    .get(key_bytes(table, key).as_slice())
                    .map_err(|e| redb_error("get")(&e))?
                {
                    Some(value) => Entry::decode(value.value()),
                    None => Ok(Entry::default()),
                }
            })
            .collect()
    }

    /// The path of file number `file`.
    pub fn path_of(&self, file: u32) -> Result<String> {
        let read = self.db.begin_read().map_err(|e| redb_error("read")(&e))?;
        open_read(&read, FILES)?
            .and_then(|files| files.get(file).ok().flatten().map(|p| p.value().to_owned()))
            .ok_or_else(|| Error::Corrupt(format!("key index: no file number {file}")))
    }

    /// What the index reflects of `table`: its uuid and snapshot.
    pub fn synced(&self, table: &str) -> Result<Option<(String, i64)>> {
        let read = self.db.begin_read().map_err(|e| redb_error("read")(&e))?;
        let Some(meta) = open_read(&read, META)? else {
            return Ok(None);
        };
        let Some(value) = meta
            .get(format!("synced/{table}").as_str())
            .map_err(|e| redb_error("meta")(&e))?
        else {
            return Ok(None);
        };
        let value = value.value();
        let (uuid, snapshot) = value
            .split_once(' ')
            .and_then(|(u, s)| Some((u.to_owned(), s.parse().ok()?)))
            .ok_or_else(|| Error::Corrupt(format!("key index: synced/{table} = {value}")))?;
        Ok(Some((uuid, snapshot)))
    }

    /// Apply `writes` in one durable transaction, in order (a later write
    /// of a key's row or change wins). Each key is read and written once
    /// however many writes name it (a batch's row and its change), and keys
    /// are visited in the tree's order: a batch touches its leaf pages once
    /// each, not once per write.
    pub fn apply(&self, writes: &[Write]) -> Result<()> {
        let mut txn = self.db.begin_write().map_err(|e| redb_error("write")(&e))?;
        // A crash reopens at the last commit without walking the tree.
        txn.set_quick_repair(true);
        {
            let mut entries = txn.open_table(KEYS).map_err(|e| redb_error("keys")(&e))?;
            let mut files = txn.open_table(FILES).map_err(|e| redb_error("files")(&e))?;
            let mut paths = txn.open_table(PATHS).map_err(|e| redb_error("paths")(&e))?;
            let mut meta = txn.open_table(META).map_err(|e| redb_error("meta")(&e))?;
            // A batch's writes name a handful of files: number each once.
            let mut numbered: std::collections::HashMap<Arc<str>, u32> =
                std::collections::HashMap::new();
            let mut number = |path: &Arc<str>| -> Result<u32> {
                if let Some(&n) = numbered.get(path) {
                    return Ok(n);
                }
                let known = paths
                    .get(&**path)
                    .map_err(|e| redb_error("paths")(&e))?
                    .map(|n| n.value());
                let n = if let Some(n) = known {
                    n
                } else {
                    let next = files
                        .last()
                        .map_err(|e| redb_error("files")(&e))?
                        .map_or(0, |(n, _)| n.value() + 1);
                    files
                        .insert(next, &**path)
                        .map_err(|e| redb_error("files")(&e))?;
                    paths
                        .insert(&**path, next)
                        .map_err(|e| redb_error("paths")(&e))?;
                    next
                };
                numbered.insert(path.clone(), n);
                Ok(n)
            };
            // The key writes by key, each key's in the order given (a
            // stable sort), so one read and one write per key.
            let mut keyed: Vec<(Vec<u8>, &Write)> = Vec::with_capacity(writes.len());
            for write in writes {
                match write {
                    Write::Row { table, key, .. } | Write::Applied { table, key, .. } => {
                        keyed.push((key_bytes(table, key), write));
                    }
                    Write::Synced {
                        table,
                        uuid,
                        snapshot,
                    } => {
                        meta.insert(
                            format!("synced/{table}").as_str(),
                            format!("{uuid} {snapshot}").as_str(),
                        )
                        .map_err(|e| redb_error("meta")(&e))?;
                    }
                }
            }
            keyed.sort_by(|a, b| a.0.cmp(&b.0));
            for same in keyed.chunk_by(|a, b| a.0 == b.0) {
                let k = &same[0].0;
                let mut entry = get(&entries, k)?;
                for (_, write) in same {
                    match write {
                        Write::Row { path, pos, .. } => {
                            entry.row = Some(Location {
                                file: number(path)?,
                                pos: *pos,
                            });
                        }
                        Write::Applied {
                            applied, path, pos, ..
                        } => {
                            let at = Location {
                                file: number(path)?,
                                pos: *pos,
                            };
                            entry.applied = Some((*applied, at));
                        }
                        Write::Synced { .. } => {}
                    }
                }
                entries
                    .insert(k.as_slice(), entry.encode().as_slice())
                    .map_err(|e| redb_error("keys")(&e))?;
            }
        }
        txn.commit().map_err(|e| redb_error("commit")(&e))
    }

    /// Forget everything (before a rebuild from the lake).
    pub fn clear(&self) -> Result<()> {
        let txn = self.db.begin_write().map_err(|e| redb_error("write")(&e))?;
        let cleared = [
            txn.delete_table(KEYS),
            txn.delete_table(FILES),
            txn.delete_table(PATHS),
            txn.delete_table(META),
        ];
        for result in cleared {
            result.map_err(|e| redb_error("clear")(&e))?;
        }
        txn.commit().map_err(|e| redb_error("commit")(&e))
    }
}

fn open_read<K: redb::Key + 'static, V: redb::Value + 'static>(
    read: &redb::ReadTransaction,
    definition: TableDefinition<K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>> {
    match read.open_table(definition) {
        Ok(table) => Ok(Some(table)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(redb_error("open")(&e)),
    }
}

fn get(entries: &redb::Table<'_, &[u8], &[u8]>, key: &[u8]) -> Result<Entry> {
    match entries.get(key).map_err(|e| redb_error("get")(&e))? {
        Some(value) => Entry::decode(value.value()),
        None => Ok(Entry::default()),
    }
}

/// One table the index follows: its name in the index, the lake table, and
/// its key columns (`None`: `_lp_state`, whose rows are read whole).
pub struct Followed<'a> {
    pub name: &'a str,
    pub table: &'a Table,
    pub key_columns: Option<&'a [String]>,
}

/// What [`sync`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Synced {
    /// Why it was rebuilt from every live file (`None`: it was not).
    pub rebuilt: Option<String>,
    /// Snapshots caught up on, files and rows read.
    pub snapshots: usize,
    pub files: usize,
    pub rows: u64,
    /// Tables whose unpublished snapshot parts a start dropped
    /// ([`super::state::STAGING`]).
    pub unstaged: usize,
}

impl Synced {
    /// One line for the consumer's log.
    #[must_use]
    pub fn describe(&self) -> String {
        let unstaged = match self.unstaged {
            0 => String::new(),
            n => format!(
                "; the parts of a snapshot staged on {n} tables and never published dropped \
                 (read again from the offsets on main)"
            ),
        };
        let synced = match (&self.rebuilt, self.snapshots) {
            (Some(why), _) => format!(
                "key index rebuilt from the lake ({why}): {} files, {} rows read",
                self.files, self.rows
            ),
            (None, 0) => "key index in step with the lake: nothing read".to_owned(),
            (None, n) => format!(
                "key index caught up {n} snapshots: {} files, {} rows read",
                self.files, self.rows
            ),
        };
        synced + &unstaged
    }
}

/// How far the index is from one table.
enum Plan {
    InStep,
    /// The snapshots after the index's, oldest first.
    Since(Vec<i64>),
    Rebuild(String),
}

/// The snapshot the consumer's writes follow in `table`: the head of the
/// branch it stages a snapshot's parts on, else main's current snapshot.
fn head(table: &Table) -> Option<&iceberg::spec::SnapshotRef> {
    lossproof_runtime::lake::head(table.metadata(), super::state::STAGING)
}

fn plan(index: &KeyIndex, followed: &Followed<'_>) -> Result<Plan> {
    let metadata = followed.table.metadata();
    let current = head(followed.table).map_or(-1, |s| s.snapshot_id());
    let uuid = metadata.uuid().to_string();
    let Some((synced_uuid, synced)) = index.synced(followed.name)? else {
        return Ok(if current == -1 {
            Plan::InStep
        } else {
            Plan::Rebuild(format!("it has never seen {}", followed.name))
        });
    };
    if synced_uuid != uuid {
        return Ok(Plan::Rebuild(format!(
            "{} is another table than the one it indexed (rebuilt or recreated)",
            followed.name
        )));
    }
    if synced == current {
        return Ok(Plan::InStep);
    }
    if let Some(since) =
        lossproof_runtime::lake::history::since_from(followed.table, head(followed.table), synced)
    {
        return Ok(Plan::Since(since));
    }
    Ok(Plan::Rebuild(format!(
        "{} has no snapshot {synced} in its history: the index is ahead of the lake \
         (rolled back or restored) or the snapshots since expired",
        followed.name
    )))
}

/// Bring `index` in step with the lake's current snapshots of `tables`
/// (see the module's documentation). Reads nothing when it is in step.
pub async fn sync(index: &KeyIndex, tables: &[Followed<'_>]) -> Result<Synced> {
    let mut plans = Vec::new();
    let mut rebuild = None;
    for followed in tables {
        match plan(index, followed)? {
            Plan::Rebuild(why) => {
                rebuild.get_or_insert(why);
                plans.push(Plan::InStep);
            }
            other => plans.push(other),
        }
    }
    let mut synced = Synced::default();
    if let Some(why) = rebuild {
        if let Some(staged) = tables.iter().find(|f| super::state::has_staged(f.table)) {
            // Rebuilt from main, the index would lose the staged parts: a
            // start drops them and reads them again instead.
            return Err(Error::Index(format!(
                "cannot rebuild ({why}) while {} has snapshot parts staged: restart",
                staged.name
            )));
        }
        let blocking = index.clone();
        tokio::task::spawn_blocking(move || blocking.clear())
            .await
            .map_err(|e| Error::Index(format!("clear: {e}")))??;
        for followed in tables {
            let mut files = live_data_files(followed.table).await?;
            files.sort_by_key(|(_, sequence)| *sequence);
            let paths: Vec<String> = files.into_iter().map(|(p, _)| p).collect();
            read_files(index, followed, &paths, &mut synced).await?;
            mark_synced(index, followed).await?;
        }
        synced.rebuilt = Some(why);
        return Ok(synced);
    }
    for (followed, plan) in tables.iter().zip(plans) {
        let Plan::Since(snapshots) = plan else {
            continue;
        };
        for snapshot in &snapshots {
            let paths = added_data_files(followed.table, *snapshot).await?;
            read_files(index, followed, &paths, &mut synced).await?;
        }
        synced.snapshots += snapshots.len();
        mark_synced(index, followed).await?;
    }
    Ok(synced)
}

/// Record that the index reflects `followed`'s current snapshot.
#[must_use]
pub fn synced_write(followed: &Followed<'_>) -> Write {
    let metadata = followed.table.metadata();
    Write::Synced {
        table: followed.name.to_owned(),
        uuid: metadata.uuid().to_string(),
        snapshot: head(followed.table).map_or(-1, |s| s.snapshot_id()),
    }
}

async fn mark_synced(index: &KeyIndex, followed: &Followed<'_>) -> Result<()> {
    apply(index, vec![synced_write(followed)]).await
}

/// [`KeyIndex::apply`] off the runtime's worker threads.
pub async fn apply(index: &KeyIndex, writes: Vec<Write>) -> Result<()> {
    let index = index.clone();
    tokio::task::spawn_blocking(move || index.apply(&writes))
        .await
        .map_err(|e| Error::Index(format!("write: {e}")))?
}

/// Read `paths` of `followed` in order into the index, in chunks.
async fn read_files(
    index: &KeyIndex,
    followed: &Followed<'_>,
    paths: &[String],
    synced: &mut Synced,
) -> Result<()> {
    let mut writes = Vec::new();
    for path in paths {
        let shared: Arc<str> = Arc::from(path.as_str());
        let rows = match followed.key_columns {
            Some(columns) => data_rows(followed, path, columns, &shared).await?,
            None => state_rows(followed.table, path, &shared).await?,
        };
        synced.files += 1;
        synced.rows += rows.len() as u64;
        writes.extend(rows);
        if writes.len() >= CHUNK {
            apply(index, std::mem::take(&mut writes)).await?;
        }
    }
    apply(index, writes).await
}

/// The keys of a data file, each at its row position.
async fn data_rows(
    followed: &Followed<'_>,
    path: &str,
    columns: &[String],
    shared: &Arc<str>,
) -> Result<Vec<Write>> {
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    let batches = lossproof_runtime::lake::read::file_rows(followed.table, path, &names)
        .await
        .map_err(Error::iceberg(format!(
            "{}: {path}",
            followed.table.identifier()
        )))?;
    let mut out = Vec::new();
    for batch in batches {
        for key in row_keys(&batch, columns)? {
            out.push(Write::Row {
                table: followed.name.to_owned(),
                key: key.into(),
                path: shared.clone(),
                pos: out.len() as u64,
            });
        }
    }
    Ok(out)
}

/// The `_lp_state` rows of a file, each at its row position.
async fn state_rows(table: &Table, path: &str, shared: &Arc<str>) -> Result<Vec<Write>> {
    let columns = [
        "table",
        "key",
        "after_commit",
        "lsn",
        "rank",
        "deleted",
        "tx_id",
    ];
    let batches = lossproof_runtime::lake::read::file_rows(table, path, &columns)
        .await
        .map_err(Error::iceberg(format!("{STATE_TABLE}: {path}")))?;
    let mut out = Vec::new();
    for batch in batches {
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .cloned()
                .ok_or_else(|| Error::Corrupt(format!("{STATE_TABLE} {path} has no column {name}")))
        };
        let (tables, keys, commits, lsns, ranks, deleted, tx_ids) = (
            column("table")?,
            column("key")?,
            column("after_commit")?,
            column("lsn")?,
            column("rank")?,
            column("deleted")?,
            column("tx_id")?,
        );
        let (
            Some(tables),
            Some(keys),
            Some(commits),
            Some(lsns),
            Some(ranks),
            Some(deleted),
            Some(tx_ids),
        ) = (
            tables.as_any().downcast_ref::<StringArray>(),
            keys.as_any().downcast_ref::<StringArray>(),
            commits.as_any().downcast_ref::<Int64Array>(),
            lsns.as_any().downcast_ref::<Int64Array>(),
            ranks.as_any().downcast_ref::<Int32Array>(),
            deleted.as_any().downcast_ref::<BooleanArray>(),
            tx_ids.as_any().downcast_ref::<Int64Array>(),
        )
        else {
            return Err(Error::Corrupt(format!(
                "{STATE_TABLE} {path} has unexpected column types"
            )));
        };
        for i in 0..batch.num_rows() {
            out.push(Write::Applied {
                table: tables.value(i).to_owned(),
                key: keys.value(i).into(),
                applied: Applied {
                    position: Position {
                        after_commit: u64::try_from(commits.value(i)).unwrap_or(0),
                        lsn: u64::try_from(lsns.value(i)).unwrap_or(0),
                        rank: u8::try_from(ranks.value(i)).unwrap_or(0),
                    },
                    deleted: deleted.value(i),
                    tx_id: tx_ids.is_valid(i).then(|| tx_ids.value(i)),
                },
                path: shared.clone(),
                pos: out.len() as u64,
            });
        }
    }
    Ok(out)
}

/// The live data files of `table` with their data sequence numbers.
async fn live_data_files(table: &Table) -> Result<Vec<(String, i64)>> {
    let live = lossproof_runtime::lake::live_files(table)
        .await
        .map_err(Error::iceberg(table.identifier().to_string()))?;
    for file in &live {
        foreign(table, &file.path, file.content)?;
    }
    Ok(live
        .into_iter()
        .filter(|f| f.content == DataContentType::Data)
        .map(|f| (f.path, f.sequence_number.unwrap_or(0)))
        .collect())
}

/// This consumer writes data files and Parquet position deletes only: an
/// equality delete or a deletion vector in its tables came from another
/// writer, and its rows' positions cannot be trusted.
fn foreign(table: &Table, path: &str, content: DataContentType) -> Result<()> {
    let puffin = std::path::Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("puffin"));
    if content == DataContentType::EqualityDeletes || puffin {
        return Err(Error::Refused(format!(
            "{}: {path} is {} this consumer never writes: another writer changed the table; \
             rebuild it (--rebuild) instead of guessing where its rows are",
            table.identifier(),
            if puffin {
                "a deletion vector"
            } else {
                "an equality delete file"
            }
        )));
    }
    Ok(())
}

/// The data files snapshot `snapshot` of `table` added.
async fn added_data_files(table: &Table, snapshot: i64) -> Result<Vec<String>> {
    let added = lossproof_runtime::lake::history::added_files(table, snapshot)
        .await
        .map_err(Error::iceberg(table.identifier().to_string()))?;
    let mut out = Vec::new();
    for (path, content) in added {
        foreign(table, &path, content)?;
        if content == DataContentType::Data {
            out.push(path);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(lsn: u64, deleted: bool) -> Applied {
        Applied {
            position: Position {
                after_commit: lsn,
                lsn,
                rank: 2,
            },
            deleted,
            tx_id: Some(-5),
        }
    }

    #[test]
    fn entries_round_trip() {
        for entry in [
            Entry::default(),
            Entry {
                applied: Some((applied(u64::MAX, true), Location { file: 3, pos: 9 })),
                row: None,
            },
            Entry {
                applied: Some((
                    Applied {
                        tx_id: None,
                        ..applied(7, false)
                    },
                    Location { file: 0, pos: 0 },
                )),
                row: Some(Location {
                    file: u32::MAX,
                    pos: u64::MAX,
                }),
            },
        ] {
            assert_eq!(Entry::decode(&entry.encode()).unwrap(), entry);
        }
        assert!(Entry::decode(&[1, 2, 3]).is_err());
    }

    /// A consumer started again while the killed one still holds the file
    /// waits for it to let go; one that never does is refused with the path.
    #[test]
    fn a_held_index_is_waited_for_then_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i/keys.redb");
        let held = KeyIndex::open(&path).unwrap();
        let error = KeyIndex::open_within(&path, std::time::Duration::from_millis(300))
            .err()
            .expect("held by another handle");
        assert!(error.to_string().contains("keys.redb"), "{error}");
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(held);
        });
        KeyIndex::open_within(&path, std::time::Duration::from_secs(10))
            .expect("opened once the other handle let go");
        release.join().unwrap();
    }

    /// A file redb cannot read (a consumer killed while an older lossproof
    /// initialised the file in place: no magic number) is discarded, not a
    /// consumer wedged for good; a leftover of an initialisation killed
    /// beside the file is ignored. The index comes back empty: `sync`
    /// rebuilds it from the lake.
    #[test]
    fn an_unreadable_index_is_discarded_and_a_leftover_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.redb");
        std::fs::write(&path, vec![0u8; 4096]).unwrap();
        std::fs::write(path.with_extension("redb.new"), b"half").unwrap();
        let index = KeyIndex::open(&path).expect("a cache it cannot read is rebuilt");
        assert_eq!(index.synced("orders").unwrap(), None);
        index
            .apply(&[Write::Synced {
                table: "orders".into(),
                uuid: "u".into(),
                snapshot: 1,
            }])
            .unwrap();
        drop(index);
        let again = KeyIndex::open(&path).unwrap();
        assert_eq!(again.synced("orders").unwrap(), Some(("u".into(), 1)));
        assert!(!path.with_extension("redb.new").exists());
    }

    /// Rows and changes land independently; the newest write wins; a key
    /// whose newest change is a delete has no live row whatever its
    /// recorded row says; files are numbered once; clearing forgets all.
    #[test]
    fn writes_merge_per_key_and_deletes_hide_rows() {
        let dir = tempfile::tempdir().unwrap();
        let index = KeyIndex::open(&dir.path().join("i/keys.redb")).unwrap();
        let row = |key: &str, path: &str, pos| Write::Row {
            table: "orders".into(),
            key: key.into(),
            path: path.into(),
            pos,
        };
        let change = |key: &str, a, pos| Write::Applied {
            table: "orders".into(),
            key: key.into(),
            applied: a,
            path: "s1".into(),
            pos,
        };
        index
            .apply(&[
                row("1", "f1", 0),
                row("2", "f1", 1),
                change("1", applied(10, false), 0),
                change("2", applied(11, false), 1),
                row("1", "f2", 0),
                change("2", applied(12, true), 2),
            ])
            .unwrap();
        let got = index.get_many("orders", &["1", "2", "3"]).unwrap();
        assert_eq!(
            index.path_of(got[0].live_row().unwrap().file).unwrap(),
            "f2"
        );
        assert_eq!(got[0].position(), Some(applied(10, false).position));
        assert_eq!(got[1].live_row(), None, "deleted: no live row");
        assert!(got[1].row.is_some());
        assert_eq!(got[2], Entry::default());
        // A file named again in a later transaction keeps its number.
        index.apply(&[row("3", "f1", 7)]).unwrap();
        let three = index.get_many("orders", &["3"]).unwrap()[0];
        assert_eq!(three.row.unwrap().file, got[1].row.unwrap().file);
        assert_eq!(three.row.unwrap().pos, 7);
        assert_eq!(
            index.get_many("customers", &["1"]).unwrap()[0],
            Entry::default(),
            "tables are apart"
        );
        index
            .apply(&[Write::Synced {
                table: "orders".into(),
                uuid: "u".into(),
                snapshot: 42,
            }])
            .unwrap();
        assert_eq!(index.synced("orders").unwrap(), Some(("u".into(), 42)));
        index.clear().unwrap();
        assert_eq!(index.synced("orders").unwrap(), None);
        assert_eq!(
            index.get_many("orders", &["1"]).unwrap()[0],
            Entry::default()
        );
        index.apply(&[row("9", "f9", 4)]).unwrap();
        let got = index.get_many("orders", &["9"]).unwrap()[0];
        assert_eq!(index.path_of(got.row.unwrap().file).unwrap(), "f9");
    }
}
