//! Health probes: each bounded by a short timeout, so `status` answers
//! within seconds even when a component hangs (e.g. `SIGSTOPped`).

use std::time::Duration;

use crate::component::Component;
use crate::ports::Ports;

/// Bound on one probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The result of probing one component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Answering; with the version it reports.
    Healthy { version: String },
    /// The process runs but does not answer properly.
    Unhealthy { reason: String },
}

impl Health {
    #[must_use]
    pub fn is_healthy(&self) -> bool {
        matches!(self, Self::Healthy { .. })
    }
}

/// Probe one component on its port.
pub async fn probe(component: Component, ports: &Ports, http: &reqwest::Client) -> Health {
    let port = component.port(ports);
    let result = tokio::time::timeout(PROBE_TIMEOUT, async {
        match component {
            Component::SourcePostgres | Component::BrokerPostgres => postgres_version(port).await,
            Component::Broker => tcp(port)
                .await
                .map(|()| format!("nisshi {}", crate::tools::NISSHI_VERSION)),
            Component::Registry => http_ok(http, &format!("http://127.0.0.1:{port}/"))
                .await
                .map(|_| format!("lossproof registry {}", env!("CARGO_PKG_VERSION"))),
            Component::Connect => {
                http_ok(http, &format!("http://127.0.0.1:{port}/health")).await?;
                let root: serde_json::Value = serde_json::from_str(
                    &http_ok(http, &format!("http://127.0.0.1:{port}/")).await?,
                )
                .map_err(|e| e.to_string())?;
                Ok(format!(
                    "kafka connect {}",
                    root["version"].as_str().unwrap_or("?")
                ))
            }
        }
    })
    .await;
    match result {
        Ok(Ok(version)) => Health::Healthy { version },
        Ok(Err(reason)) => Health::Unhealthy { reason },
        Err(_) => Health::Unhealthy {
            reason: format!("no answer within {}s", PROBE_TIMEOUT.as_secs()),
        },
    }
}

async fn tcp(port: u16) -> Result<(), String> {
    tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

async fn http_ok(http: &reqwest::Client, url: &str) -> Result<String, String> {
    let response = http.get(url).send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    let body = response.text().await.map_err(|e| e.to_string())?;
    if status.is_success() {
        Ok(body)
    } else {
        Err(format!("{url} answered {status}"))
    }
}

async fn postgres_version(port: u16) -> Result<String, String> {
    let client = crate::postgres::connect(port, "postgres")
        .await
        .map_err(|e| e.to_string())?;
    let row = client
        .query_one("SHOW server_version", &[])
        .await
        .map_err(|e| e.to_string())?;
    Ok(format!("postgresql {}", row.get::<_, String>(0)))
}
