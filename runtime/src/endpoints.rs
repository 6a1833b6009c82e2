//! Where each component of the pipeline is: the local stack's loopback
//! ports, or the addresses an external profile names (docs/profiles.md).
//! Every connection the executor, the consumers, the compactor and the
//! reconciler open starts from an [`Endpoints`]: one place decides whether
//! a client goes through the fault proxy, which credentials it sends and
//! which lake it opens.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::lake::Lake;
use crate::ports::Ports;
use crate::profile::{Http, Kafka, LakeLocation, Profile, Secret, Source};

/// The user lossproof's own `PostgreSQL` clusters trust on loopback.
const LOCAL_USER: &str = "postgres";

/// The components one seed reaches, and how.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// `local`, or the profile's name (in records and reports).
    pub name: String,
    /// The source `PostgreSQL`, as lossproof reaches it (`connect_host` and
    /// `connect_port`: as Kafka Connect's workers do, through the fault
    /// proxy on the local stack).
    pub source: Source,
    /// Kafka for lossproof's own clients: topic administration, the drain
    /// gate, injected junk and duplicates. Never through the proxy.
    pub kafka: Kafka,
    /// Kafka for the pipeline's consumers (through the proxy locally).
    pub consumer_kafka: Kafka,
    /// The schema registry, as the consumers and Connect's converters reach
    /// it (through the proxy locally).
    pub registry: Http,
    /// Kafka Connect's REST API.
    pub connect: Http,
    lake: LakeAt,
    /// The local stack's ports; `None` on an external profile.
    local: Option<Ports>,
}

#[derive(Debug, Clone)]
enum LakeAt {
    /// The lake in a state directory (`<state>/lake`).
    State(PathBuf),
    /// A profile's lake, or the aws stack's on moto.
    Catalog(LakeLocation),
}

impl Endpoints {
    /// The stack `lossproof up` started at `ports`, its lake in `state_root`.
    #[must_use]
    pub fn local(ports: Ports, state_root: &Path) -> Self {
        let source = Source {
            // Debezium's connections go through the proxy's `postgres` link
            // (docs/network.md).
            connect_port: ports.source_link,
            ..Source::local(ports.source_postgres)
        };
        Self {
            name: "local".into(),
            source,
            kafka: Kafka::plain(ports.broker),
            consumer_kafka: Kafka::plain(ports.broker_link),
            registry: Http::plain(ports.registry_link),
            connect: Http::plain(ports.connect),
            lake: LakeAt::State(state_root.to_owned()),
            local: Some(ports),
        }
    }

    /// A team's own components, as `profile` names them: no proxy, every
    /// client the same addresses.
    #[must_use]
    pub fn external(profile: &Profile) -> Self {
        Self {
            name: profile.name.clone(),
            source: profile.source.clone(),
            kafka: profile.kafka.clone(),
            consumer_kafka: profile.kafka.clone(),
            registry: profile.registry.clone(),
            connect: profile.connect.clone(),
            lake: LakeAt::Catalog(profile.lake.clone()),
            local: None,
        }
    }

    /// The same components with the lake at `at` (the aws stack's: S3 and
    /// Glue on its moto).
    #[must_use]
    pub fn with_lake(self, at: LakeLocation) -> Self {
        Self {
            lake: LakeAt::Catalog(at),
            ..self
        }
    }

    /// Whether these are the local stack's components.
    #[must_use]
    pub fn is_local(&self) -> bool {
        self.local.is_some()
    }

    /// The local stack's ports, for what only acts on the stack lossproof
    /// started (the fault proxy, the broker's storage): an error naming
    /// `what` on an external profile. The analyser refuses such faults
    /// before a run starts (`check --profile`); this is the executor's guard.
    pub fn local_ports(&self, what: &str) -> Result<Ports> {
        self.local.ok_or_else(|| {
            Error::Setup(format!(
                "{what} needs the local stack; profile `{}` names external components",
                self.name
            ))
        })
    }

    /// Open the lake the consumers write.
    pub async fn open_lake(&self) -> Result<Lake> {
        match &self.lake {
            LakeAt::State(root) => Lake::open(root).await,
            LakeAt::Catalog(at) => Lake::open_at(at).await,
        }
    }

    /// Where the lake is: its catalog and its warehouse (for readers other
    /// than lossproof: pyiceberg, dbt).
    #[must_use]
    pub fn lake_location(&self) -> LakeLocation {
        match &self.lake {
            LakeAt::State(root) => Lake::location_in(root),
            LakeAt::Catalog(at) => at.clone(),
        }
    }
}

impl Source {
    /// Connect to `database` on this server (no TLS: a staging server that
    /// requires it is not supported yet, docs/profiles.md).
    pub async fn connect(&self, database: &str) -> Result<tokio_postgres::Client> {
        let mut config = tokio_postgres::Config::new();
        config
            .host(&self.host)
            .port(self.port)
            .user(&self.user)
            .dbname(database)
            .connect_timeout(Duration::from_secs(3));
        if let Some(password) = &self.password {
            config.password(password.expose());
        }
        let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(client)
    }

    /// Connect to the server's administrative database (where seeds'
    /// databases are created and dropped).
    pub async fn connect_admin(&self) -> Result<tokio_postgres::Client> {
        self.connect(&self.database).await
    }

    /// A cluster of the local stack on `port` (trust auth on loopback).
    #[must_use]
    pub fn local(port: u16) -> Self {
        Self {
            host: "127.0.0.1".into(),
            port,
            user: LOCAL_USER.into(),
            password: None,
            database: "postgres".into(),
            connect_host: "127.0.0.1".into(),
            connect_port: port,
        }
    }
}

impl Kafka {
    /// A plaintext broker on loopback.
    #[must_use]
    pub fn plain(port: u16) -> Self {
        Self {
            bootstrap: format!("127.0.0.1:{port}"),
            properties: std::collections::BTreeMap::new(),
            secrets: std::collections::BTreeMap::new(),
        }
    }

    /// A librdkafka configuration with the bootstrap servers, the client
    /// properties and the secrets set; the caller adds its own.
    #[must_use]
    pub fn client_config(&self) -> rdkafka::ClientConfig {
        let mut config = rdkafka::ClientConfig::new();
        config.set("bootstrap.servers", &self.bootstrap);
        for (key, value) in &self.properties {
            config.set(key, value);
        }
        for (key, secret) in &self.secrets {
            config.set(key, secret.expose());
        }
        config
    }
}

impl Http {
    /// A plain HTTP service on loopback.
    #[must_use]
    pub fn plain(port: u16) -> Self {
        Self {
            url: format!("http://127.0.0.1:{port}"),
            user: None,
            password: None,
        }
    }

    /// A request to `path` (starting with `/`), with basic auth when the
    /// service needs it.
    pub fn request(
        &self,
        http: &reqwest::Client,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        let request = http.request(method, format!("{}{path}", self.url));
        match &self.user {
            Some(user) => request.basic_auth(user, self.password.as_ref().map(Secret::expose)),
            None => request,
        }
    }
}

/// Delete, soft then permanently (Confluent's two steps), every subject of
/// `registry` of the capture with topic prefix `prefix`: a seed's schemas
/// (`lp_<run>.public.<table>-key/-value`, its heartbeat topic's:
/// [`crate::debezium::owned_by`]). Returns how many.
pub async fn delete_subjects(registry: &Http, prefix: &str) -> Result<usize> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap_or_default();
    let failed = |what: String| {
        move |e: reqwest::Error| Error::Setup(format!("{what}: {}", e.without_url()))
    };
    let subjects: Vec<String> = registry
        .request(&http, reqwest::Method::GET, "/subjects")
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(failed("list the registry's subjects".into()))?
        .json()
        .await
        .map_err(failed("list the registry's subjects".into()))?;
    let ours: Vec<&String> = subjects
        .iter()
        .filter(|s| crate::debezium::owned_by(prefix, s))
        .collect();
    for subject in &ours {
        let path = format!("/subjects/{}", urlencoding(subject));
        for permanent in ["", "?permanent=true"] {
            registry
                .request(
                    &http,
                    reqwest::Method::DELETE,
                    &format!("{path}{permanent}"),
                )
                .send()
                .await
                .and_then(reqwest::Response::error_for_status)
                .map_err(failed(format!("delete subject {subject}")))?;
        }
    }
    Ok(ours.len())
}

/// `subject` as one URL path segment (subjects are topic names plus
/// `-key`/`-value`: letters, digits, `.`, `_`, `-`; anything else escaped).
fn urlencoding(subject: &str) -> String {
    subject
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        crate::profile::tests::parse(crate::profile::tests::FULL).expect("profile")
    }

    /// On a profile every client reaches the team's addresses with its
    /// credentials: the consumers the same Kafka as lossproof's own
    /// clients (no proxy), Connect's workers the source as the profile says.
    #[test]
    fn a_profile_names_every_client_address() {
        let e = Endpoints::external(&profile());
        assert!(!e.is_local());
        assert!(e.local_ports("a network fault").is_err());
        assert_eq!(e.consumer_kafka.bootstrap, "k1:9092,k2:9092");
        let config = e.consumer_kafka.client_config();
        assert_eq!(config.get("bootstrap.servers"), Some("k1:9092,k2:9092"));
        assert_eq!(config.get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(config.get("sasl.password"), Some("kafka-hunter2"));
        assert_eq!(
            (e.source.host.as_str(), e.source.user.as_str()),
            ("pg.staging", "lossproof")
        );
        assert_eq!(
            e.source.password.as_ref().map(Secret::expose),
            Some("pg-hunter2")
        );
        assert_eq!(e.registry.url, "http://registry:8081");
        assert_eq!(e.connect.user.as_deref(), Some("admin"));
    }

    /// The local stack: lossproof's own Kafka clients go straight to the
    /// broker, the consumers and Connect through the fault proxy's links.
    #[test]
    fn the_local_stack_routes_the_pipeline_through_the_proxy() {
        let ports = Ports {
            source_postgres: 1,
            broker_postgres: 2,
            broker: 3,
            registry: 4,
            connect: 5,
            netproxy: 6,
            broker_link: 7,
            source_link: 8,
            registry_link: 9,
            moto: 10,
        };
        let e = Endpoints::local(ports, Path::new("/state"));
        assert!(e.is_local());
        assert_eq!(e.kafka.bootstrap, "127.0.0.1:3");
        assert_eq!(e.consumer_kafka.bootstrap, "127.0.0.1:7");
        assert_eq!(e.registry.url, "http://127.0.0.1:9");
        assert_eq!(e.connect.url, "http://127.0.0.1:5");
        assert_eq!((e.source.port, e.source.connect_port), (1, 8));
        assert_eq!(e.local_ports("x").unwrap(), ports);
    }

    /// Whatever prints the endpoints (an error, a log line) shows no secret.
    #[test]
    fn printing_endpoints_shows_no_secret() {
        let text = format!("{:?}", Endpoints::external(&profile()));
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("Secret(***)"), "{text}");
    }

    #[test]
    fn subjects_are_one_path_segment() {
        assert_eq!(
            urlencoding("lp_run1s1.public.orders-value"),
            "lp_run1s1.public.orders-value"
        );
        assert_eq!(urlencoding("a/b c"), "a%2Fb%20c");
    }
}
