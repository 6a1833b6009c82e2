//! Every way a registry operation fails, and the Confluent error body each one
//! answers with (`{"error_code": N, "message": "..."}`).

use std::net::SocketAddr;
use std::path::PathBuf;

use axum::http::StatusCode;

/// A failed registry operation.
///
/// The HTTP status and Confluent `error_code` of each variant are those the
/// Confluent Schema Registry uses, so clients (the Java `RestService`, which
/// maps `error_code` to exceptions) react as they would against the real one.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("Subject '{0}' not found.")]
    SubjectNotFound(String),
    #[error("Version {version} not found.")]
    VersionNotFound { version: String },
    #[error("Schema {0} not found")]
    SchemaIdNotFound(u32),
    #[error("Schema not found")]
    SchemaNotFound,
    #[error("Subject '{0}' was soft deleted. Set permanent=true to delete permanently")]
    SubjectSoftDeleted(String),
    #[error("Subject '{0}' was not deleted first before being permanently deleted")]
    SubjectNotSoftDeleted(String),
    #[error(
        "Subject '{subject}' Version {version} was soft deleted. Set permanent=true to delete permanently"
    )]
    VersionSoftDeleted { subject: String, version: u32 },
    #[error(
        "Subject '{subject}' Version {version} was not deleted first before being permanently deleted"
    )]
    VersionNotSoftDeleted { subject: String, version: u32 },
    #[error("Subject '{0}' does not have subject-level compatibility configured")]
    SubjectCompatibilityNotConfigured(String),
    #[error(
        "Schema being registered is incompatible with an earlier schema for subject \"{subject}\" \
         ({level}), details: [{}]",
        messages.join(", ")
    )]
    Incompatible {
        subject: String,
        level: crate::CompatibilityLevel,
        messages: Vec<String>,
    },
    #[error("Invalid schema: {0}")]
    InvalidSchema(String),
    #[error(
        "The specified version '{0}' is not a valid version id. Allowed values are between \
         [1, 2^31-1] and the string \"latest\""
    )]
    InvalidVersion(String),
    #[error(
        "Invalid compatibility level '{0}'. Valid values are NONE, BACKWARD, BACKWARD_TRANSITIVE, \
         FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE"
    )]
    InvalidCompatibilityLevel(String),
    #[error("Unrecognized request body: {0}")]
    BadRequest(String),
    #[error("HTTP 404 Not Found")]
    RouteNotFound,
    #[error("HTTP 405 Method Not Allowed")]
    MethodNotAllowed,
    #[error("Error in the backend data store: {context}: {source}")]
    Storage {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("registry state {path} is unreadable: {message}")]
    CorruptState { path: PathBuf, message: String },
    #[error(
        "registry state directory {0} is in use by another registry process (its lock is held)"
    )]
    StateLocked(PathBuf),
    #[error(
        "refusing to listen on {0}: the embedded schema registry has no authentication, so it \
         only binds to a loopback address (127.0.0.0/8 or ::1)"
    )]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the registry server failed: {0}")]
    Server(#[source] std::io::Error),
}

impl RegistryError {
    pub(crate) fn storage(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Storage {
            context: context.into(),
            source,
        }
    }

    /// The HTTP status the Confluent registry answers this error with.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        match self {
            Self::SubjectNotFound(_)
            | Self::VersionNotFound { .. }
            | Self::SchemaIdNotFound(_)
            | Self::SchemaNotFound
            | Self::SubjectSoftDeleted(_)
            | Self::SubjectNotSoftDeleted(_)
            | Self::VersionSoftDeleted { .. }
            | Self::VersionNotSoftDeleted { .. }
            | Self::SubjectCompatibilityNotConfigured(_)
            | Self::RouteNotFound => StatusCode::NOT_FOUND,
            Self::Incompatible { .. } => StatusCode::CONFLICT,
            Self::InvalidSchema(_)
            | Self::InvalidVersion(_)
            | Self::InvalidCompatibilityLevel(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Storage { .. }
            | Self::CorruptState { .. }
            | Self::StateLocked(_)
            | Self::NotLoopback(_)
            | Self::Bind { .. }
            | Self::Server(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The Confluent `error_code` of this error.
    #[must_use]
    pub fn error_code(&self) -> u32 {
        match self {
            Self::SubjectNotFound(_) => 40401,
            Self::VersionNotFound { .. } => 40402,
            Self::SchemaIdNotFound(_) | Self::SchemaNotFound => 40403,
            Self::SubjectSoftDeleted(_) => 40404,
            Self::SubjectNotSoftDeleted(_) => 40405,
            Self::VersionSoftDeleted { .. } => 40406,
            Self::VersionNotSoftDeleted { .. } => 40407,
            Self::SubjectCompatibilityNotConfigured(_) => 40408,
            Self::Incompatible { .. } => 409,
            Self::InvalidSchema(_) => 42201,
            Self::InvalidVersion(_) => 42202,
            Self::InvalidCompatibilityLevel(_) => 42203,
            Self::BadRequest(_) => 400,
            Self::RouteNotFound => 404,
            Self::MethodNotAllowed => 405,
            Self::Storage { .. } | Self::CorruptState { .. } | Self::StateLocked(_) => 50001,
            Self::NotLoopback(_) | Self::Bind { .. } | Self::Server(_) => 50000,
        }
    }
}
