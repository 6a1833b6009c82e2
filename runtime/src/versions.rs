//! Each component's version, as the component itself reports it: what a
//! run record names so a result can be tied to the stack it ran on
//! (docs/profiles.md). A component that does not say is recorded as such,
//! never guessed.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::endpoints::Endpoints;

/// `component -> version` for the source, Kafka Connect, the Debezium
/// `PostgreSQL` plugin, the registry and Kafka. Each probe is bounded
/// (seconds); an unreachable component says why instead of a version.
pub async fn probe(endpoints: &Endpoints) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let postgres = match endpoints.source.connect_admin().await {
        Ok(client) => match client.query_one("SHOW server_version", &[]).await {
            Ok(row) => format!("PostgreSQL {}", row.get::<_, String>(0)),
            Err(e) => format!("unknown ({e})"),
        },
        Err(e) => format!("unreachable ({e})"),
    };
    out.insert("postgres".to_owned(), postgres);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap_or_default();
    let get = |service: &crate::profile::Http, path: &str| {
        let request = service.request(&http, reqwest::Method::GET, path).send();
        async move {
            let response = request.await.map_err(|e| e.without_url().to_string())?;
            if !response.status().is_success() {
                return Err(format!("answered {}", response.status()));
            }
            response
                .json::<Value>()
                .await
                .map_err(|e| e.without_url().to_string())
        }
    };
    let connect = match get(&endpoints.connect, "/").await {
        Ok(v) => v["version"].as_str().map_or_else(
            || "not reported".to_owned(),
            |v| format!("Kafka Connect {v}"),
        ),
        Err(e) => format!("unreachable ({e})"),
    };
    out.insert("connect".to_owned(), connect);
    let debezium = match get(&endpoints.connect, "/connector-plugins").await {
        Ok(Value::Array(plugins)) => plugins
            .iter()
            .find(|p| p["class"] == "io.debezium.connector.postgresql.PostgresConnector")
            .and_then(|p| p["version"].as_str())
            .map_or_else(
                || "not installed in Connect".to_owned(),
                |v| format!("Debezium PostgreSQL connector {v}"),
            ),
        Ok(_) => "not reported".to_owned(),
        Err(e) => format!("unreachable ({e})"),
    };
    out.insert("debezium".to_owned(), debezium);
    // Confluent's registry answers `/v1/metadata/version`; others may not.
    let registry = match get(&endpoints.registry, "/v1/metadata/version").await {
        Ok(v) => v["version"]
            .as_str()
            .map_or_else(|| "not reported".to_owned(), str::to_owned),
        Err(e) => format!("not reported ({e})"),
    };
    out.insert("registry".to_owned(), registry);
    // The Kafka protocol has no request that returns the broker's version.
    out.insert(
        "kafka".to_owned(),
        "not reported (the Kafka protocol has no version request)".to_owned(),
    );
    out
}
