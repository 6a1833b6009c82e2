//! The two `PostgreSQL` clusters: created with `initdb`, run as a non-root
//! user (`PostgreSQL` refuses root), listening only on loopback.

use std::path::{Path, PathBuf};
use std::process::Command;

use nix::unistd::{Uid, User, chown};

use crate::component::Component;
use crate::error::{Error, IoContext as _, Result};
use crate::profile::Source;
use crate::tools::Tools;

/// The user clusters run as when lossproof runs as root.
const POSTGRES_USER: &str = "postgres";

/// Connect to a cluster of the stack (trust auth on loopback).
pub async fn connect(port: u16, database: &str) -> Result<tokio_postgres::Client> {
    Source::local(port).connect(database).await
}

/// Whether `database` exists on `server`.
pub async fn database_exists(server: &Source, database: &str) -> Result<bool> {
    let client = server.connect_admin().await?;
    Ok(client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&database])
        .await?
        .is_some())
}

/// Drop `database` if it exists, closing its connections first (`WITH
/// (FORCE)`: a workload connection or a consumer of it cannot keep it).
pub async fn drop_database(server: &Source, database: &str) -> Result<()> {
    let client = server.connect_admin().await?;
    client
        .batch_execute(&format!(
            "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
            database.replace('"', "\"\"")
        ))
        .await?;
    Ok(())
}

/// Create `database` on `server` if it does not exist.
pub async fn ensure_database(server: &Source, database: &str) -> Result<()> {
    let client = server.connect_admin().await?;
    let exists = client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&database])
        .await?
        .is_some();
    if !exists {
        // Identifiers cannot be bound as parameters; `database` is ours, not user input.
        client
            .batch_execute(&format!("CREATE DATABASE \"{database}\""))
            .await?;
    }
    Ok(())
}

/// Make `database` refuse or accept writes again. Refusing sets
/// `default_transaction_read_only` on the database and ends its sessions,
/// so every client reconnects into sessions where each write fails (reads
/// still work): what a storage that cannot write does to its clients, as a
/// full disk would. Accepting again resets the setting and, only if it was
/// set, ends the sessions again (those opened meanwhile are read-only).
/// Returns how many sessions were ended; accepting writes on a database
/// that already does is a no-op (safe on every clean-up path).
pub async fn set_writable(port: u16, database: &str, writable: bool) -> Result<u64> {
    let client = connect(port, "postgres").await?;
    let read_only = client
        .query_opt(
            "SELECT 1 FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase \
             WHERE d.datname = $1 AND s.setrole = 0 \
               AND 'default_transaction_read_only=on' = ANY(s.setconfig)",
            &[&database],
        )
        .await?
        .is_some();
    if read_only != writable {
        return Ok(0);
    }
    // Identifiers cannot be bound as parameters; `database` is ours.
    let quoted = format!("\"{}\"", database.replace('"', "\"\""));
    client
        .batch_execute(&if writable {
            format!("ALTER DATABASE {quoted} RESET default_transaction_read_only")
        } else {
            format!("ALTER DATABASE {quoted} SET default_transaction_read_only = on")
        })
        .await?;
    let ended: i64 = client
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = $1 AND pid <> pg_backend_pid()",
            &[&database],
        )
        .await?
        .get(0);
    Ok(u64::try_from(ended).unwrap_or(0))
}

/// Make sure the cluster exists; returns its folder. When running as root the
/// cluster belongs to `postgres`; if that user cannot reach the state dir
/// (e.g. under a home directory with mode 700), the cluster lives under
/// `/var/tmp/lossproof-postgres/` instead, keyed by the state dir.
pub fn prepare(component: Component, component_dir: &Path, state_root: &Path) -> Result<PathBuf> {
    let dir = if Uid::effective().is_root() {
        let user = User::from_name(POSTGRES_USER)
            .ok()
            .flatten()
            .ok_or_else(|| {
                Error::Setup(
                    "no `postgres` user: install postgresql-15 (`bash runtime/bootstrap.sh`)"
                        .into(),
                )
            })?;
        chown(component_dir, Some(user.uid), Some(user.gid))
            .map_err(std::io::Error::from)
            .context(|| format!("chown {}", component_dir.display()))?;
        if as_postgres(Command::new("test").arg("-w").arg(component_dir))
            .status()
            .is_ok_and(|s| s.success())
        {
            component_dir.to_owned()
        } else {
            let fallback = PathBuf::from("/var/tmp/lossproof-postgres")
                .join(format!(
                    "{:016x}",
                    fnv(state_root.to_string_lossy().as_bytes())
                ))
                .join(component.name());
            std::fs::create_dir_all(&fallback)
                .context(|| format!("create {}", fallback.display()))?;
            for dir in fallback.ancestors().take(3) {
                chown(dir, Some(user.uid), Some(user.gid))
                    .map_err(std::io::Error::from)
                    .context(|| format!("chown {}", dir.display()))?;
            }
            fallback
        }
    } else {
        component_dir.to_owned()
    };
    remove_stale_lock(&dir.join("data/postmaster.pid"))?;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(".s.PGSQL.")
                && entry.path().extension().is_some_and(|e| e == "lock")
            {
                remove_stale_lock(&entry.path())?;
            }
        }
    }
    if !dir.join("data/PG_VERSION").is_file() {
        let output = as_postgres(
            Command::new("timeout")
                .arg("120")
                .arg(Tools::postgres("initdb"))
                .args([
                    "-D",
                    &dir.join("data").to_string_lossy(),
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "--no-instructions",
                ]),
        )
        .output()
        .context(|| "run initdb".to_owned())?;
        if !output.status.success() {
            return Err(Error::Setup(format!(
                "initdb for {component} failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
    }
    Ok(dir)
}

/// After a SIGKILL the old postmaster can linger as a zombie until init
/// reaps it, and `PostgreSQL` takes the zombie's pid in `postmaster.pid` (and
/// in its socket's lock file) for a live server. A pid that is gone or a
/// zombie is stale: remove the lock file.
fn remove_stale_lock(pid_file: &Path) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(pid_file) else {
        return Ok(());
    };
    let Some(pid) = text
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<i32>().ok())
    else {
        return Ok(());
    };
    if !crate::process::running(pid) {
        std::fs::remove_file(pid_file)
            .context(|| format!("remove stale {}", pid_file.display()))?;
    }
    Ok(())
}

/// The server command: settings on the command line, so the cluster's own
/// files stay as `initdb` made them.
#[must_use]
pub fn command(component: Component, dir: &Path, port: u16) -> Command {
    let mut command = as_postgres(
        Command::new(Tools::postgres("postgres"))
            .arg("-D")
            .arg(dir.join("data")),
    );
    let mut set = |k: &str, v: &str| {
        command.arg("-c").arg(format!("{k}={v}"));
    };
    set("listen_addresses", "127.0.0.1");
    set("port", &port.to_string());
    set("unix_socket_directories", &dir.to_string_lossy());
    set("max_connections", "200");
    set("shared_buffers", "64MB");
    // Test data: a crashed process never loses committed data with fsync
    // off (only an operating-system crash would), and runs are much faster.
    set("fsync", "off");
    set("full_page_writes", "off");
    if component == Component::SourcePostgres {
        set("wal_level", "logical");
        set("max_replication_slots", "32");
        set("max_wal_senders", "32");
    }
    command
}

/// Run as the `postgres` user when we are root.
fn as_postgres(command: &mut Command) -> Command {
    if Uid::effective().is_root() {
        let mut wrapped = Command::new("runuser");
        wrapped
            .args(["-u", POSTGRES_USER, "--"])
            .arg(command.get_program())
            .args(command.get_args());
        wrapped
    } else {
        let mut same = Command::new(command.get_program());
        same.args(command.get_args());
        same
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
