//! Every way the runtime can fail, in one enum.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("`{0}` is missing: run `bash runtime/bootstrap.sh` (or `lossproof up`, which runs it)")]
    Missing(PathBuf),
    #[error("{component} did not become healthy within {timeout_s}s: {reason} (log: {log})")]
    NotHealthy {
        component: String,
        timeout_s: u64,
        reason: String,
        log: PathBuf,
    },
    #[error("{0}")]
    Setup(String),
    #[error("postgres: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("http: {0}")]
    Http(#[from] reqwest::Error),
    #[error("kafka connect: {0}")]
    Connect(String),
    #[error("fault proxy: {0}")]
    Netproxy(String),
    #[error("timed out after {0}s: {1}")]
    Timeout(u64, String),
    #[error("state file {path}: {reason}")]
    State { path: PathBuf, reason: String },
    #[error("interrupted")]
    Interrupted,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error with what was being done when it happened (`create the source
/// tables: db error: …`): how the executor's and the consumers' errors
/// carry a library's error.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct Context<E: std::error::Error + 'static> {
    pub what: String,
    #[source]
    pub source: E,
}

/// Builders of context-carrying errors, for `map_err`, inside an error
/// enum's `impl`: `kafka => Kafka(rdkafka::error::KafkaError)` makes
/// `Error::kafka("what was being done")`, a function that turns a
/// `KafkaError` into `Error::Kafka(Context { what, source })`.
#[macro_export]
macro_rules! context_builders {
    ($($builder:ident => $variant:ident($source:ty)),* $(,)?) => {
        $(
            pub(crate) fn $builder(what: impl Into<String>) -> impl FnOnce($source) -> Self {
                let what = what.into();
                move |source| Self::$variant($crate::error::Context { what, source })
            }
        )*
    };
}

/// Attach what was being done to an I/O error.
pub trait IoContext<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Io {
            what: what(),
            source,
        })
    }
}
