//! A scenario's own tables as `run` hands them to the reference consumers
//! (`--tables FILE`) and keeps them with a seed's logs: a JSON list of
//! `lossproof_lang::vocabulary::TableSig`.

use std::path::Path;

use lossproof_lang::vocabulary::{TableSig, WorkloadSig};

use crate::error::{Error, Result};

/// The file's name in a seed's log folder.
pub const TABLES_FILE: &str = "tables.json";

/// Write `tables` to `file`.
///
/// # Errors
/// When the file cannot be written.
///
/// # Panics
/// Never: tables are plain data and always serialise.
pub fn write(file: &Path, tables: &[TableSig]) -> Result<()> {
    let json =
        serde_json::to_string_pretty(tables).expect("tables are plain data and always serialise");
    std::fs::write(file, json).map_err(Error::io(file.display().to_string()))
}

/// The workload of a tables file.
///
/// # Errors
/// When the file cannot be read or is not a list of tables.
pub fn read(file: &Path) -> Result<WorkloadSig> {
    let text = std::fs::read_to_string(file).map_err(Error::io(file.display().to_string()))?;
    let tables: Vec<TableSig> = serde_json::from_str(&text)
        .map_err(|e| Error::Value(format!("{} is not a list of tables: {e}", file.display())))?;
    Ok(lossproof_vocabulary::workloads::declared(
        lossproof_lang::analyzer::DECLARED_WORKLOAD,
        tables,
    ))
}

/// The workload of a seed's tables file, if the seed has one (a scenario
/// with its own tables).
///
/// # Errors
/// When the file exists but cannot be read or is not a list of tables.
pub fn of_seed(logs: &Path) -> Result<Option<WorkloadSig>> {
    let file = logs.join(TABLES_FILE);
    if !file.is_file() {
        return Ok(None);
    }
    read(&file).map(Some)
}
