//! An embedded Confluent-compatible schema registry for lossproof's local
//! stack, where no Confluent registry can be installed.
//!
//! It serves the REST subset Kafka Connect's `AvroConverter` and consumers
//! use (Confluent client 7.0.x), checks compatibility for real (Avro Java's
//! rules, which Confluent applies: see [`CompatibilityLevel`]), and persists
//! every subject, version and id in a state directory so a restarted registry
//! hands out the same ids clients have cached.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! let registry = Arc::new(lossproof_registry::Registry::open("/tmp/registry-state")?);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! lossproof_registry::serve(listener, registry, lossproof_registry::shutdown_signal()).await?;
//! # Ok(()) }
//! ```
//!
//! Requests are handled on the async runtime's threads; state changes write
//! a small file synchronously, which is fine for schema-registration traffic.

mod compatibility;
mod error;
mod http;
mod registry;
mod resolve;
mod schema;
mod state;
mod store;
mod version;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

pub use compatibility::{CompatibilityLevel, Previous};
pub use error::RegistryError;
pub use http::{CONTENT_TYPE, router, serve};
pub use registry::{Registry, SubjectVersion, SubjectVersionRef};
pub use schema::AvroSchema;
pub use version::VersionId;

/// Completes on SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// Run a registry for `lossproof registry`: open the state in `state_dir`,
/// listen on `listen` (a loopback address; port 0 picks a free one), print
/// `listening on ADDR` on stdout once bound, and serve until SIGTERM or
/// SIGINT. Blocks; starts its own single-threaded async runtime.
pub fn main_entry(listen: SocketAddr, state_dir: &Path) -> Result<(), RegistryError> {
    if !listen.ip().is_loopback() {
        return Err(RegistryError::NotLoopback(listen));
    }
    // Open (and lock) the state before binding: a second registry on the same
    // directory fails before it can announce an address.
    let registry = Arc::new(Registry::open(state_dir)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RegistryError::Server)?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|source| RegistryError::Bind {
                addr: listen,
                source,
            })?;
        let bound = listener.local_addr().map_err(RegistryError::Server)?;
        let mut stdout = std::io::stdout().lock();
        // A supervisor reads this line to learn the port; a closed stdout
        // must not stop the registry.
        let _ = writeln!(stdout, "listening on {bound}");
        let _ = stdout.flush();
        drop(stdout);
        serve(listener, registry, shutdown_signal())
            .await
            .map_err(RegistryError::Server)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_non_loopback_address() {
        let dir = tempfile::tempdir().unwrap();
        for addr in ["0.0.0.0:8081", "192.168.1.10:8081", "[::]:8081"] {
            let addr: SocketAddr = addr.parse().unwrap();
            assert!(matches!(
                main_entry(addr, dir.path()),
                Err(RegistryError::NotLoopback(_))
            ));
        }
        // Refused before the state directory is touched.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
