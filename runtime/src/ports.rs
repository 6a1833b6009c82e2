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
}

impl Ports {
    /// Five distinct free ports on 127.0.0.1 (all held open while choosing,
    /// so none is handed out twice).
    pub fn allocate() -> Result<Self> {
        let listeners: Vec<TcpListener> = (0..5)
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
        })
    }
}
