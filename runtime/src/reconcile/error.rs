//! Why a reconciliation could not be made. (What it finds is never an
//! error: a difference is a row of the `diff` table.)

use crate::lake::ReadError;
use crate::reconcile::canonical::CanonicalError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A column (`table.column`) whose type or value the canonical form
    /// does not cover.
    #[error("{table}.{column}: {source}")]
    Column {
        table: String,
        column: String,
        #[source]
        source: CanonicalError,
    },
    #[error("{table} has no primary key: rows cannot be matched")]
    NoPrimaryKey { table: String },
    #[error("{table}: key column {column} is not among its columns")]
    KeyColumnMissing { table: String, column: String },
    /// A query of the source database failed (PostgreSQL's own message,
    /// not only "db error").
    #[error("source: {what}: {}", postgres_message(source))]
    Source {
        what: String,
        #[source]
        source: tokio_postgres::Error,
    },
    /// One consumer's table could not be read.
    #[error("{consumer}'s {table}: {source}")]
    LakeTable {
        consumer: String,
        table: String,
        #[source]
        source: Box<Error>,
    },
    #[error(transparent)]
    Lake(#[from] ReadError),
    /// A DataFusion query (a view, an assertion) did not plan or run.
    #[error("{0}")]
    Query(#[from] datafusion::error::DataFusionError),
    /// An assertion's query returned something its expectation cannot
    /// judge (two rows for `is true`, a string for `< 5`).
    #[error("{0}")]
    Judge(String),
    /// A topic could not be read to its end (the capture check).
    #[error("topic {0}")]
    Topic(String),
    /// The source's history did not read back as written.
    #[error("source history: {0}")]
    History(String),
}

/// What PostgreSQL said (severity, message, detail, hint), or the
/// client's error when the server said nothing.
fn postgres_message(error: &tokio_postgres::Error) -> String {
    error
        .as_db_error()
        .map_or_else(|| error.to_string(), ToString::to_string)
}

impl Error {
    pub(crate) fn source_query(
        what: impl Into<String>,
    ) -> impl FnOnce(tokio_postgres::Error) -> Self {
        let what = what.into();
        move |source| Self::Source { what, source }
    }
}
