//! The components of the local stack, in start order.

use std::time::Duration;

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use crate::ports::Ports;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Component {
    /// lossproof's TCP fault proxy (`lossproof netproxy`): one listener in
    /// front of the broker, the source and the registry, where network
    /// faults act. First, so the broker's advertised address answers.
    Netproxy,
    /// The captured `PostgreSQL` (`wal_level=logical`).
    SourcePostgres,
    /// The broker's storage: a SEPARATE cluster, so nothing the broker does
    /// moves the source's WAL or hides its records.
    BrokerPostgres,
    /// nisshi, a Kafka-protocol broker.
    Broker,
    /// lossproof's embedded Confluent-compatible schema registry.
    Registry,
    /// Kafka Connect (distributed, one worker) running Debezium.
    Connect,
}

impl Component {
    /// Start order; stop in reverse.
    pub const ALL: [Component; 6] = [
        Self::Netproxy,
        Self::SourcePostgres,
        Self::BrokerPostgres,
        Self::Broker,
        Self::Registry,
        Self::Connect,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Netproxy => "netproxy",
            Self::SourcePostgres => "source-postgres",
            Self::BrokerPostgres => "broker-postgres",
            Self::Broker => "broker",
            Self::Registry => "registry",
            Self::Connect => "connect",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    #[must_use]
    pub fn port(self, ports: &Ports) -> u16 {
        match self {
            Self::Netproxy => ports.netproxy,
            Self::SourcePostgres => ports.source_postgres,
            Self::BrokerPostgres => ports.broker_postgres,
            Self::Broker => ports.broker,
            Self::Registry => ports.registry,
            Self::Connect => ports.connect,
        }
    }

    /// The polite stop signal: `PostgreSQL`'s fast shutdown is SIGINT (SIGTERM
    /// would wait for every client to disconnect).
    #[must_use]
    pub fn stop_signal(self) -> Signal {
        match self {
            Self::SourcePostgres | Self::BrokerPostgres => Signal::SIGINT,
            _ => Signal::SIGTERM,
        }
    }

    /// How long a polite stop may take before SIGKILL.
    #[must_use]
    pub fn stop_grace(self) -> Duration {
        match self {
            Self::Connect => Duration::from_secs(15),
            _ => Duration::from_secs(10),
        }
    }

    /// How long a start may take to become healthy.
    #[must_use]
    pub fn start_timeout(self) -> Duration {
        match self {
            Self::Connect => Duration::from_mins(2),
            Self::SourcePostgres | Self::BrokerPostgres => Duration::from_mins(1),
            Self::Netproxy | Self::Broker | Self::Registry => Duration::from_secs(30),
        }
    }
}

impl std::fmt::Display for Component {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
