//! Kafka Connect (distributed mode, one worker) with Debezium, and a small
//! client for its REST API.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::{Error, IoContext as _, Result};
use crate::ports::Ports;
use crate::tools::Tools;

/// The worker's configuration. JSON is the worker default; connectors choose
/// Avro through the registry in their own config.
fn worker_properties(ports: &Ports) -> String {
    format!(
        "bootstrap.servers=127.0.0.1:{broker}
group.id=lossproof-connect
config.storage.topic=lossproof-connect-configs
offset.storage.topic=lossproof-connect-offsets
status.storage.topic=lossproof-connect-status
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
offset.storage.partitions=1
status.storage.partitions=1
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=false
value.converter.schemas.enable=false
listeners=http://127.0.0.1:{connect}
rest.advertised.host.name=127.0.0.1
rest.advertised.port={connect}
plugin.discovery=service_load
topic.creation.enable=true
offset.flush.interval.ms=1000
",
        broker = ports.broker_link,
        connect = ports.connect
    )
}

const LOG4J2: &str = "status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{1}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
";

/// Write the worker's files into `dir` and return the command that runs it.
pub fn command(dir: &Path, ports: &Ports, tools: &Tools) -> Result<Command> {
    let properties = dir.join("worker.properties");
    std::fs::write(&properties, worker_properties(ports))
        .context(|| format!("write {}", properties.display()))?;
    let log4j = dir.join("log4j2.properties");
    std::fs::write(&log4j, LOG4J2).context(|| format!("write {}", log4j.display()))?;
    let classpath = tools.connect_classpath();
    if !classpath.join(".complete").is_file() {
        return Err(Error::Missing(classpath));
    }
    let mut command = Command::new("java");
    command
        // Bounded heap; the serial collector keeps a 2-core machine responsive.
        .args(["-Xms128m", "-Xmx1g", "-XX:+UseSerialGC"])
        .arg(format!("-Dlog4j2.configurationFile={}", log4j.display()))
        .arg("-cp")
        .arg(format!("{}/*", classpath.display()))
        .arg("org.apache.kafka.connect.cli.ConnectDistributed")
        .arg(&properties);
    Ok(command)
}

/// The Kafka Connect REST API.
#[derive(Debug, Clone)]
pub struct ConnectClient {
    service: crate::profile::Http,
    http: reqwest::Client,
}

/// A connector's state and its tasks' states, as Connect reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectorStatus {
    pub connector: String,
    pub tasks: Vec<String>,
    /// The first task failure's trace, if any.
    pub failure: Option<String>,
}

impl ConnectorStatus {
    #[must_use]
    pub fn running(&self) -> bool {
        self.connector == "RUNNING"
            && !self.tasks.is_empty()
            && self.tasks.iter().all(|t| t == "RUNNING")
    }

    /// The connector or one of its tasks FAILED: Connect does not restart
    /// either by itself ("will not recover until manually restarted").
    #[must_use]
    pub fn failed(&self) -> bool {
        self.connector == "FAILED" || self.tasks.iter().any(|t| t == "FAILED")
    }
}

impl ConnectClient {
    /// # Panics
    /// If the HTTP client cannot be built (no TLS is configured, so it can).
    #[must_use]
    pub fn new(service: &crate::profile::Http) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("http client");
        Self {
            service: service.clone(),
            http,
        }
    }

    /// The client of the local stack's Connect at `port`.
    #[must_use]
    pub fn local(port: u16) -> Self {
        Self::new(&crate::profile::Http::plain(port))
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value)> {
        let mut request = self.service.request(&self.http, method.clone(), path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if status >= 400 && status != 404 {
            return Err(Error::Connect(format!(
                "{method} {path} answered {status}: {value}"
            )));
        }
        Ok((status, value))
    }

    /// Create the connector, or update its config (PUT is both).
    pub async fn put_config(&self, name: &str, config: &Value) -> Result<()> {
        self.call(
            reqwest::Method::PUT,
            &format!("/connectors/{name}/config"),
            Some(config.clone()),
        )
        .await
        .map(drop)
    }

    pub async fn names(&self) -> Result<Vec<String>> {
        let (_, value) = self.call(reqwest::Method::GET, "/connectors", None).await?;
        Ok(value
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// None when the connector does not exist.
    pub async fn status(&self, name: &str) -> Result<Option<ConnectorStatus>> {
        let (code, value) = self
            .call(
                reqwest::Method::GET,
                &format!("/connectors/{name}/status"),
                None,
            )
            .await?;
        if code == 404 {
            return Ok(None);
        }
        let tasks = value["tasks"].as_array().cloned().unwrap_or_default();
        Ok(Some(ConnectorStatus {
            connector: value["connector"]["state"]
                .as_str()
                .unwrap_or("UNKNOWN")
                .to_owned(),
            tasks: tasks
                .iter()
                .map(|t| t["state"].as_str().unwrap_or("UNKNOWN").to_owned())
                .collect(),
            failure: tasks.iter().find_map(|t| {
                t["trace"]
                    .as_str()
                    .map(|s| s.lines().next().unwrap_or(s).to_owned())
            }),
        }))
    }

    /// Wait (bounded) until the connector and all its tasks are RUNNING.
    pub async fn wait_running(&self, name: &str, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        let mut last = None;
        while Instant::now() < deadline {
            match self.status(name).await {
                Ok(Some(status)) if status.running() => return Ok(()),
                Ok(Some(status)) if status.tasks.iter().any(|t| t == "FAILED") => {
                    return Err(Error::Connect(format!(
                        "connector {name} task FAILED: {}",
                        status.failure.unwrap_or_default()
                    )));
                }
                Ok(other) => last = Some(format!("{other:?}")),
                Err(e) => last = Some(e.to_string()),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(Error::Timeout(
            limit.as_secs(),
            format!(
                "connector {name} not RUNNING; last seen {}",
                last.unwrap_or_default()
            ),
        ))
    }

    /// Stop (Connect 3.5+): tasks shut down, the config stays.
    pub async fn stop(&self, name: &str) -> Result<()> {
        self.call(
            reqwest::Method::PUT,
            &format!("/connectors/{name}/stop"),
            None,
        )
        .await
        .map(drop)
    }

    pub async fn resume(&self, name: &str) -> Result<()> {
        self.call(
            reqwest::Method::PUT,
            &format!("/connectors/{name}/resume"),
            None,
        )
        .await
        .map(drop)
    }

    pub async fn pause(&self, name: &str) -> Result<()> {
        self.call(
            reqwest::Method::PUT,
            &format!("/connectors/{name}/pause"),
            None,
        )
        .await
        .map(drop)
    }

    pub async fn restart(&self, name: &str) -> Result<()> {
        self.call(
            reqwest::Method::POST,
            &format!("/connectors/{name}/restart?includeTasks=true"),
            None,
        )
        .await
        .map(drop)
    }

    pub async fn delete(&self, name: &str) -> Result<()> {
        self.call(
            reqwest::Method::DELETE,
            &format!("/connectors/{name}"),
            None,
        )
        .await
        .map(drop)
    }

    /// Every connector with its status (for `lossproof status`).
    pub async fn all(&self) -> Result<Vec<(String, Option<ConnectorStatus>)>> {
        let mut out = Vec::new();
        for name in self.names().await? {
            let status = self.status(&name).await?;
            out.push((name, status));
        }
        Ok(out)
    }
}
