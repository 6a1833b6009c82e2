//! lossproof's runtime: the local stack and the tools to drive it.
//!
//! - [`Stack`]: `up` / `down` / `status` of the local profile, every
//!   component a child process in its own process group ([`ProcessRecord`]).
//! - [`ConnectClient`] and [`debezium`]: the Debezium connector of a run, its
//!   replication slot, and the drained check.
//! - [`NetProxy`]: the client of the fault proxy that stands in front of the
//!   broker, the source and the registry (network faults).
//! - [`Lake`]: the local Iceberg lake (sqlite SQL catalog + filesystem
//!   warehouse) that iceberg-rust and pyiceberg share.
//! - [`Profile`]: an external stack (a team's own components), loaded from
//!   a TOML file with its secrets kept out of every output.
//!
//! - [`reconcile`]: the reconciler, the diff and the assertions over it.
//!
//! Depends on `lang/` only.

mod abort_on_drop;
pub mod change_event;
pub mod component;
pub mod connect;
pub mod debezium;
pub mod endpoints;
pub mod error;
pub mod health;
pub mod lake;
pub mod netproxy;
pub mod nightly;
pub mod ports;
pub mod postgres;
pub mod process;
pub mod profile;
pub mod reconcile;
pub mod stack;
pub mod state_dir;
pub mod supervisor;
pub mod tools;
pub mod versions;

pub use abort_on_drop::AbortOnDrop;
pub use component::{Component, StackProfile};
pub use connect::ConnectClient;
pub use endpoints::Endpoints;
pub use error::{Error, Result};
pub use lake::Lake;
pub use netproxy::NetProxy;
pub use ports::Ports;
pub use process::ProcessRecord;
pub use profile::Profile;
pub use stack::Stack;
pub use state_dir::StateDir;
pub use tools::Tools;
