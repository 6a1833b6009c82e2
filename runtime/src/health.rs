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
            Component::Netproxy => http_ok(http, &format!("http://127.0.0.1:{port}/health")).await,
            Component::Registry => http_ok(http, &format!("http://127.0.0.1:{port}/"))
                .await
                .map(|_| format!("lossproof registry {}", env!("CARGO_PKG_VERSION"))),
            Component::Connect => {
                http_ok(http, &format!("http://127.0.0.1:{port}/health")).await?;
                let root: serde_json::Value = serde_json::from_str(
                    &http_ok(http, &format!("http://127.0.0.1:{port}/")).await?,
                )?;
                Ok(format!(
                    "kafka connect {}",
                    root["version"].as_str().unwrap_or("?")
                ))
            }
            // moto's own API: answers once the server routes requests.
            Component::Moto => http_ok(http, &format!("http://127.0.0.1:{port}/moto-api/config"))
                .await
                .map(|_| format!("moto server {}", crate::tools::MOTO_VERSION)),
        }
    })
    .await;
    match result {
        Ok(Ok(version)) => Health::Healthy { version },
        Ok(Err(error)) => Health::Unhealthy {
            reason: error.to_string(),
        },
        Err(_) => Health::Unhealthy {
            reason: format!("no answer within {}s", PROBE_TIMEOUT.as_secs()),
        },
    }
}

/// Why a probe failed (shown as the component's `reason`).
#[derive(Debug, thiserror::Error)]
enum ProbeError {
    #[error("{0}")]
    Connect(#[from] std::io::Error),
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    #[error("{url} answered {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Postgres(#[from] crate::Error),
}

async fn tcp(port: u16) -> Result<(), ProbeError> {
    tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    Ok(())
}

async fn http_ok(http: &reqwest::Client, url: &str) -> Result<String, ProbeError> {
    let response = http.get(url).send().await?;
    let status = response.status();
    let body = response.text().await?;
    if status.is_success() {
        Ok(body)
    } else {
        Err(ProbeError::Status {
            url: url.to_owned(),
            status,
        })
    }
}

async fn postgres_version(port: u16) -> Result<String, ProbeError> {
    let client = crate::postgres::connect(port, "postgres").await?;
    let row = client
        .query_one("SHOW server_version", &[])
        .await
        .map_err(crate::Error::Postgres)?;
    Ok(format!("postgresql {}", row.get::<_, String>(0)))
}
