//! Free loopback ports for one stack, chosen once and recorded.

use std::net::TcpListener;

use serde::{Deserialize, Serialize};

use crate::error::{IoContext as _, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ports {
    pub source_postgres: u16,
    pub broker_postgres: u16,
    pub broker: u16,
    pub registry: u16,
    pub connect: u16,
    /// The fault proxy's control API, and its listener in front of each
    /// link: every Kafka client, Debezium's connections to the source, and
    /// the registry's clients go through these (docs/network.md). 0 in a
    /// record written before the proxy existed: `up` then allocates afresh.
    #[serde(default)]
    pub netproxy: u16,
    #[serde(default)]
    pub broker_link: u16,
    #[serde(default)]
    pub source_link: u16,
    #[serde(default)]
    pub registry_link: u16,
    /// moto server's (the `aws` profile); 0 in a record written before it
    /// existed: `up --profile aws` then picks one.
    #[serde(default)]
    pub moto: u16,
}

impl Ports {
    /// Distinct free ports on 127.0.0.1 (all held open while choosing, so
    /// none is handed out twice).
    pub fn allocate() -> Result<Self> {
        let listeners: Vec<TcpListener> = (0..10)
            .map(|_| {
                TcpListener::bind("127.0.0.1:0").context(|| "bind a free loopback port".to_owned())
            })
            .collect::<Result<_>>()?;
        let port = |i: usize| {
            listeners[i]
                .local_addr()
                .map(|a| a.port())
                .context(|| "read a bound port".to_owned())
        };
        Ok(Self {
            source_postgres: port(0)?,
            broker_postgres: port(1)?,
            broker: port(2)?,
            registry: port(3)?,
            connect: port(4)?,
            netproxy: port(5)?,
            broker_link: port(6)?,
            source_link: port(7)?,
            registry_link: port(8)?,
            moto: port(9)?,
        })
    }

    /// Whether every port is allocated (a record from before the fault
    /// proxy has none for it).
    #[must_use]
    pub fn complete(&self) -> bool {
        [
            self.netproxy,
            self.broker_link,
            self.source_link,
            self.registry_link,
        ]
        .iter()
        .all(|p| *p != 0)
    }
}
