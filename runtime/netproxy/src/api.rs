//! The control API's messages (JSON over loopback HTTP), shared by the proxy
//! and the executor's client (`lossproof_runtime::netproxy`).
//!
//! | method and path                | body            | answer         |
//! |--------------------------------|-----------------|----------------|
//! | `GET /health`                  |                 | version text   |
//! | `GET /links`                   |                 | [`LinkStatus`] list |
//! | `POST /links/{link}/faults`    | [`FaultRequest`]| [`FaultAck`]   |
//! | `DELETE /links/{link}/faults/{id}` |             | [`Cleared`]    |
//! | `DELETE /faults?owner=OWNER`   |                 | [`Cleared`]    |

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

/// What a fault does to a link's traffic while it acts. Every kind acts on
/// both directions (client to server and back).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FaultKind {
    /// Every chunk of bytes is held `ms` ± `jitter_ms` (uniform, drawn from
    /// the request's seed, per direction) before it is passed on. Order is
    /// kept: a chunk never overtakes the one before it.
    Delay { ms: u64, jitter_ms: u64 },
    /// At most `bytes_per_second` per direction, over all of the link's
    /// connections together.
    Limit { bytes_per_second: u64 },
    /// New connections are refused (the listener is closed) and open ones
    /// are stalled: nothing is read or written until the cut ends.
    Cut,
    /// Every open connection is reset at once (RST to both ends). It acts
    /// once; `for_ms` is ignored.
    Reset,
    /// Bytes are read and dropped in both directions: accepted, never
    /// delivered, while the connections stay open.
    Blackhole,
    /// A close (FIN) from either end reaches the other end `ms` late.
    SlowClose { ms: u64 },
}

/// `POST /links/{link}/faults`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRequest {
    /// Who set it: clean-up clears every fault of one owner at once.
    pub owner: String,
    pub fault: FaultKind,
    /// How long it acts. The proxy removes it itself when this has passed,
    /// whatever happens to whoever set it.
    pub for_ms: u64,
    /// Where its random draws (the jitter) come from: the run's seed and
    /// the occurrence's index.
    pub seed: u64,
    pub stream: u64,
}

/// The answer to a [`FaultRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultAck {
    pub id: u64,
    /// Connections open on the link when it took effect (for `Reset`: how
    /// many were reset).
    pub open_connections: usize,
}

/// How many faults a `DELETE` removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cleared {
    pub cleared: usize,
}

/// One link as `GET /links` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkStatus {
    pub name: String,
    pub listen: SocketAddr,
    pub upstream: SocketAddr,
    /// Connections open now.
    pub open: usize,
    /// Connections accepted since the proxy started.
    pub accepted: u64,
    /// Accepted connections whose upstream could not be reached.
    pub upstream_failures: u64,
    /// Connections ended by a `Reset`.
    pub resets: u64,
    /// Bytes passed on, client to server and server to client.
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// Bytes read and dropped by a `Blackhole`.
    pub bytes_dropped: u64,
    pub faults: Vec<ActiveFault>,
}

/// A fault acting on a link now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveFault {
    pub id: u64,
    pub owner: String,
    pub fault: FaultKind,
    pub remaining_ms: u64,
}
