//! The executor's client for the fault proxy's control API
//! (`lossproof netproxy`, crate `lossproof-netproxy`). Each call is bounded
//! by the client's timeout.

use std::time::Duration;

use serde::de::DeserializeOwned;

pub use lossproof_netproxy::api::{
    ActiveFault, Cleared, FaultAck, FaultKind, FaultRequest, LinkStatus,
};

use crate::error::{Error, Result};

pub struct NetProxy {
    base: String,
    http: reqwest::Client,
}

impl NetProxy {
    /// # Panics
    /// If the HTTP client cannot be built (no TLS is configured, so it can).
    #[must_use]
    pub fn new(control_port: u16) -> Self {
        Self {
            base: format!("http://127.0.0.1:{control_port}"),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .expect("http client"),
        }
    }

    /// Set a fault on `link`; the proxy ends it itself after `for_ms`.
    pub async fn set(&self, link: &str, request: &FaultRequest) -> Result<FaultAck> {
        let response = self
            .http
            .post(format!("{}/links/{link}/faults", self.base))
            .json(request)
            .send()
            .await?;
        answer(response).await
    }

    /// End every fault `owner` set; how many were still acting.
    pub async fn clear_owner(&self, owner: &str) -> Result<usize> {
        let response = self
            .http
            .delete(format!("{}/faults", self.base))
            .query(&[("owner", owner)])
            .send()
            .await?;
        Ok(answer::<Cleared>(response).await?.cleared)
    }

    /// Every link: traffic counters and the faults acting now.
    pub async fn links(&self) -> Result<Vec<LinkStatus>> {
        let response = self.http.get(format!("{}/links", self.base)).send().await?;
        answer(response).await
    }
}

async fn answer<T: DeserializeOwned>(response: reqwest::Response) -> Result<T> {
    let status = response.status();
    let body = response.bytes().await?;
    if !status.is_success() {
        return Err(Error::Netproxy(format!(
            "{status}: {}",
            String::from_utf8_lossy(&body)
        )));
    }
    serde_json::from_slice(&body).map_err(|e| Error::Netproxy(format!("unreadable answer: {e}")))
}
