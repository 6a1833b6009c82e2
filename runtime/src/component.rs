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
    /// moto server: emulated AWS (S3, Glue, SQS, Step Functions) for the
    /// `aws` stack profile only (`lossproof up --profile aws`).
    Moto,
}

impl Component {
    /// The local profile's components, in start order (stop in reverse).
    pub const LOCAL: [Component; 6] = [
        Self::Netproxy,
        Self::SourcePostgres,
        Self::BrokerPostgres,
        Self::Broker,
        Self::Registry,
        Self::Connect,
    ];

    /// Every component: [`Component::LOCAL`], then moto (the `aws`
    /// profile's, [`StackProfile::components`]).
    pub const ALL: [Component; 7] = {
        let mut all = [Self::Moto; 7];
        let mut i = 0;
        while i < Self::LOCAL.len() {
            all[i] = Self::LOCAL[i];
            i += 1;
        }
        all
    };

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Netproxy => "netproxy",
            Self::SourcePostgres => "source-postgres",
            Self::BrokerPostgres => "broker-postgres",
            Self::Broker => "broker",
            Self::Registry => "registry",
            Self::Connect => "connect",
            Self::Moto => "moto",
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
            Self::Moto => ports.moto,
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
            Self::Netproxy | Self::Broker | Self::Registry | Self::Moto => Duration::from_secs(30),
        }
    }
}

/// Which components a stack runs, chosen by `lossproof up --profile` and
/// kept in the state directory's record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StackProfile {
    /// Everything on loopback, the lake in the state directory.
    #[default]
    Local,
    /// The local stack plus moto server (emulated AWS) with the resources
    /// terraform/ declares: the nightly workflow runs on it.
    Aws,
}

impl StackProfile {
    /// The components of a stack of this profile, in start order.
    #[must_use]
    pub fn components(self) -> &'static [Component] {
        match self {
            Self::Local => &Component::LOCAL,
            Self::Aws => &Component::ALL,
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Aws => "aws",
        }
    }
}

impl std::fmt::Display for Component {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for StackProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
