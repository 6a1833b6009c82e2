//! Where the stack's programs are: the cache that `runtime/bootstrap.sh`
//! fills (default `~/.cache/lossproof`, or `$LOSSPROOF_CACHE`), keyed by version.

use std::path::PathBuf;
use std::process::Command;

use crate::error::{Error, IoContext as _, Result};

pub const NISSHI_VERSION: &str = "0.8.1";
pub const CONNECT_CLASSPATH: &str = "connect-3.1.1.0-avro-3.6.3.0";
pub const POSTGRES_BIN: &str = "/usr/lib/postgresql/15/bin";
/// pyiceberg (with its `sql-sqlite` and `pyarrow` extras) in its own
/// virtualenv: the Python side of the lake (and, later, dbt's).
pub const PYICEBERG_VERSION: &str = "0.12.0";

/// The nightly's virtualenv (dbt, moto server, boto3, python-hcl2); the
/// key changes with its pins in `bootstrap.sh`.
pub const NIGHTLY_VENV_KEY: &str = "1";
/// The template consumer's virtualenv (`scenarios/bring-your-own/`:
/// confluent-kafka, fastavro, pyiceberg); the key changes with its pins in
/// `bootstrap.sh`.
pub const BYO_VENV_KEY: &str = "1";
/// lakana-server, the Iceberg REST catalog the REST test starts
/// (`tests/careless.rs`); `.ci/test` installs it (not the bootstrap: the
/// stack does not need it).
pub const LAKANA_VERSION: &str = "0.20.0";
/// DuckDB with its iceberg and avro extension wheels (pinned together:
/// the extension wheels stop at this version), a reader the tests check the
/// correct consumer's tables with; `.ci/test` installs it.
pub const DUCKDB_VERSION: &str = "1.5.5";
/// moto's version in that virtualenv (pinned in `bootstrap.sh`).
pub const MOTO_VERSION: &str = "5.2.5";

/// The bootstrap script, shipped inside the binary so `lossproof up` works
/// from anywhere.
const BOOTSTRAP: &str = include_str!("../bootstrap.sh");

#[derive(Debug, Clone)]
pub struct Tools {
    pub cache: PathBuf,
}

impl Tools {
    #[must_use]
    pub fn from_env() -> Self {
        let cache = std::env::var_os("LOSSPROOF_CACHE").map_or_else(
            || {
                PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                    .join(".cache/lossproof")
            },
            PathBuf::from,
        );
        Self { cache }
    }

    #[must_use]
    pub fn nisshi(&self) -> PathBuf {
        self.cache
            .join(format!("tools/nisshi-{NISSHI_VERSION}/bin/nisshi"))
    }

    #[must_use]
    pub fn connect_classpath(&self) -> PathBuf {
        self.cache.join("jars").join(CONNECT_CLASSPATH)
    }

    /// The pyiceberg virtualenv (`bin/python` runs scripts that `import pyiceberg`).
    #[must_use]
    pub fn pyiceberg_venv(&self) -> PathBuf {
        self.cache
            .join(format!("venv-pyiceberg-{PYICEBERG_VERSION}"))
    }

    /// The Python interpreter of the pyiceberg virtualenv.
    #[must_use]
    pub fn pyiceberg_python(&self) -> PathBuf {
        self.pyiceberg_venv().join("bin/python")
    }

    /// The nightly's virtualenv: `bin/dbt`, `bin/python` with moto and boto3.
    #[must_use]
    pub fn nightly_venv(&self) -> PathBuf {
        self.cache.join(format!("venv-nightly-{NIGHTLY_VENV_KEY}"))
    }

    /// The template consumer's virtualenv: its `bin/` first on `PATH`
    /// makes `python3` in `scenarios/bring-your-own/*.lp` the one with its
    /// packages.
    #[must_use]
    pub fn byo_venv(&self) -> PathBuf {
        self.cache.join(format!("venv-byo-{BYO_VENV_KEY}"))
    }

    /// The DuckDB virtualenv's Python (`.ci/test` installs it).
    #[must_use]
    pub fn duckdb_python(&self) -> PathBuf {
        self.cache
            .join(format!("venv-duckdb-{DUCKDB_VERSION}"))
            .join("bin/python")
    }

    /// lakana-server's virtualenv (`.ci/test` installs it).
    #[must_use]
    pub fn lakana_venv(&self) -> PathBuf {
        self.cache.join(format!("venv-lakana-{LAKANA_VERSION}"))
    }

    #[must_use]
    pub fn postgres(program: &str) -> PathBuf {
        PathBuf::from(POSTGRES_BIN).join(program)
    }

    /// Everything the stack needs is installed.
    #[must_use]
    pub fn complete(&self) -> bool {
        self.nisshi().is_file()
            && self.connect_classpath().join(".complete").is_file()
            && Self::postgres("initdb").is_file()
            // Written by the bootstrap once pyiceberg imports.
            && self.pyiceberg_venv().join(".complete").is_file()
            && self.nightly_venv().join(".complete").is_file()
            && self.byo_venv().join(".complete").is_file()
            && which("java")
    }

    /// Run the bootstrap (installs what is missing; prints its progress).
    pub fn bootstrap(&self) -> Result<()> {
        eprintln!(
            "lossproof: installing the stack's components into {} (once)",
            self.cache.display()
        );
        let status = Command::new("timeout")
            .args(["3600", "bash", "-c", BOOTSTRAP, "bootstrap"])
            .env("LOSSPROOF_CACHE", &self.cache)
            .status()
            .context(|| "run the bootstrap".to_owned())?;
        if status.success() && self.complete() {
            Ok(())
        } else {
            Err(Error::Setup(format!(
                "the bootstrap failed ({status}); run `bash runtime/bootstrap.sh` to see why"
            )))
        }
    }
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
