//! External stack profiles: a TOML file naming a team's own components
//! (source PostgreSQL, Kafka, a Confluent-compatible registry, Kafka Connect
//! with Debezium, an Iceberg catalog) instead of the stack `lossproof up`
//! starts (docs/profiles.md).
//!
//! ```toml
//! name = "staging"
//!
//! [source]
//! host = "pg.staging.internal"
//! port = 5432
//! user = "lossproof"
//! password = { env = "LOSSPROOF_PG_PASSWORD" }
//! database = "postgres"
//!
//! [kafka]
//! bootstrap = "kafka-1.staging.internal:9092"
//! properties = { "security.protocol" = "SASL_SSL", "sasl.mechanism" = "SCRAM-SHA-512", "sasl.username" = "lossproof" }
//! secrets = { "sasl.password" = { file = "/run/secrets/kafka" } }
//!
//! [registry]
//! url = "http://registry.staging.internal:8081"
//!
//! [connect]
//! url = "http://connect.staging.internal:8083"
//!
//! [lake]
//! catalog = "sql"
//! uri = "sqlite:///srv/lake/catalog.db"
//! warehouse = "/srv/lake/warehouse"
//! ```
//!
//! Secrets are never written in the file: each is `{ env = "VAR" }` or
//! `{ file = "PATH" }`, read when the profile is loaded, held in a
//! [`Secret`] whose `Debug` prints `***` and which has no `Display` nor
//! `Serialize`: it cannot reach a log, a record or a report by accident.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A password or key, read from the environment or a file. Only
/// [`Secret::expose`] gives its text, for the one place that sends it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret's text, to hand to a client library (never to print).
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// A profile that could not be loaded: what is wrong and where.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("profile {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("profile {path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

/// An external stack, loaded and checked, its secrets read.
#[derive(Debug, Clone)]
pub struct Profile {
    /// A name for records and reports (`staging`); the file's stem when
    /// the file gives none.
    pub name: String,
    pub source: Source,
    pub kafka: Kafka,
    pub registry: Http,
    pub connect: Http,
    pub lake: LakeLocation,
}

/// The source PostgreSQL server. lossproof connects as `user` to
/// `database` to create each seed's own database (the role needs CREATEDB
/// and REPLICATION, as Debezium's does).
#[derive(Debug, Clone)]
pub struct Source {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<Secret>,
    pub database: String,
    /// How Kafka Connect's workers reach the server, when not as lossproof
    /// does (another network, a proxy): Debezium's `database.hostname` and
    /// `database.port`.
    pub connect_host: String,
    pub connect_port: u16,
}

/// The Kafka cluster: bootstrap servers and librdkafka client properties
/// (`security.protocol`, `sasl.mechanism`, `ssl.ca.location`, …), the
/// secret ones apart.
#[derive(Debug, Clone)]
pub struct Kafka {
    pub bootstrap: String,
    pub properties: BTreeMap<String, String>,
    pub secrets: BTreeMap<String, Secret>,
}

/// An HTTP service (the registry, Connect's REST API), with basic auth
/// when it needs it.
#[derive(Debug, Clone)]
pub struct Http {
    pub url: String,
    pub user: Option<String>,
    pub password: Option<Secret>,
}

/// Where the lake is.
#[derive(Debug, Clone)]
pub enum LakeLocation {
    /// An Iceberg SQL catalog (a sqlite file) and its warehouse folder,
    /// both absolute paths: the local stack's, or a profile's.
    Sql {
        catalog_db: PathBuf,
        warehouse: PathBuf,
    },
    /// An AWS Glue catalog with an S3 warehouse: the aws stack's moto.
    Glue(GlueLocation),
}

impl LakeLocation {
    /// The catalog as Iceberg's standard catalog properties (pyiceberg's
    /// `load_catalog(name, **properties)` takes them as they are; Iceberg
    /// Java's names are the same): what a consumer of the team's own gets
    /// in `LOSSPROOF_CATALOG_PROPERTIES`. Credentials are not among them:
    /// on an emulator they are in the environment (`AWS_ACCESS_KEY_ID`),
    /// otherwise the program finds its own as AWS's tools do.
    #[must_use]
    pub fn catalog_properties(&self) -> Vec<(&'static str, String)> {
        match self {
            LakeLocation::Sql {
                catalog_db,
                warehouse,
            } => vec![
                ("type", "sql".to_owned()),
                ("uri", crate::lake::sqlalchemy_sqlite_uri(catalog_db)),
                ("warehouse", crate::lake::file_uri(warehouse)),
            ],
            LakeLocation::Glue(glue) => {
                let mut properties = vec![
                    ("type", "glue".to_owned()),
                    ("glue.region", glue.region.clone()),
                    ("s3.region", glue.region.clone()),
                    ("warehouse", glue.warehouse.clone()),
                ];
                if let Some(endpoint) = &glue.endpoint {
                    properties.extend([
                        ("glue.endpoint", endpoint.clone()),
                        ("s3.endpoint", endpoint.clone()),
                    ]);
                }
                if glue.emulator {
                    properties.push(("s3.path-style-access", "true".to_owned()));
                }
                properties
            }
        }
    }
}

/// A Glue catalog and its S3 warehouse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlueLocation {
    /// Glue's and S3's endpoint (moto's URL); `None`: AWS's own.
    pub endpoint: Option<String>,
    pub region: String,
    /// `s3://bucket/prefix`.
    pub warehouse: String,
    /// moto: fixed dummy credentials and path-style S3 addressing, never a
    /// user's credentials.
    pub emulator: bool,
}

// The file's shape. Unknown keys are errors: a misspelt `pasword` must not
// silently connect without one.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Option<String>,
    source: SourceFile,
    kafka: KafkaFile,
    registry: HttpFile,
    connect: HttpFile,
    lake: LakeFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceFile {
    host: String,
    #[serde(default = "default_pg_port")]
    port: u16,
    user: String,
    password: Option<SecretRef>,
    #[serde(default = "default_pg_database")]
    database: String,
    connect_host: Option<String>,
    connect_port: Option<u16>,
}

fn default_pg_port() -> u16 {
    5432
}

fn default_pg_database() -> String {
    "postgres".to_owned()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KafkaFile {
    bootstrap: String,
    #[serde(default)]
    properties: BTreeMap<String, String>,
    #[serde(default)]
    secrets: BTreeMap<String, SecretRef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpFile {
    url: String,
    user: Option<String>,
    password: Option<SecretRef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LakeFile {
    catalog: String,
    uri: Option<String>,
    warehouse: Option<String>,
}

/// Where a secret comes from. A bare string is accepted by the parser only
/// to be refused with a reason (`resolve`).
#[derive(Deserialize)]
#[serde(untagged)]
enum SecretRef {
    Env {
        env: String,
    },
    File {
        file: PathBuf,
    },
    /// Kept only to be refused; its text is never read, so never echoed.
    Inline(#[expect(dead_code, reason = "refused unread")] String),
}

impl SecretRef {
    fn resolve(
        &self,
        key: &str,
        env: &dyn Fn(&str) -> Option<String>,
        base: &Path,
    ) -> Result<Secret, String> {
        match self {
            Self::Env { env: var } => env(var)
                .map(Secret)
                .ok_or_else(|| format!("{key}: environment variable {var} is not set")),
            Self::File { file } => {
                let path = base.join(file);
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{key}: read {}: {e}", path.display()))?;
                Ok(Secret(text.trim_end_matches(['\n', '\r']).to_owned()))
            }
            Self::Inline(_) => Err(format!(
                "{key}: a secret written in the profile would be committed and shared with it; \
                 give {{ env = \"VAR\" }} or {{ file = \"PATH\" }}"
            )),
        }
    }
}

impl Profile {
    /// Load `path`, reading secrets from the process environment.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        Self::parse(path, &text, &|var| std::env::var(var).ok())
    }

    /// Parse a profile's text; `env` answers environment variables (a test
    /// passes its own), and `{ file = … }` paths are relative to the
    /// profile's folder.
    #[allow(clippy::too_many_lines)] // the file's sections, one after another
    pub fn parse(
        path: &Path,
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ProfileError> {
        let invalid = |reason: String| ProfileError::Invalid {
            path: path.to_owned(),
            reason,
        };
        // toml's message names the line and column and quotes the line.
        let file: File = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let secret = |key: &str, r: &Option<SecretRef>| {
            r.as_ref()
                .map(|r| r.resolve(key, env, base))
                .transpose()
                .map_err(invalid)
        };
        let source = Source {
            password: secret("source.password", &file.source.password)?,
            connect_host: file
                .source
                .connect_host
                .unwrap_or_else(|| file.source.host.clone()),
            connect_port: file.source.connect_port.unwrap_or(file.source.port),
            host: file.source.host,
            port: file.source.port,
            user: file.source.user,
            database: file.source.database,
        };
        if file.kafka.bootstrap.trim().is_empty() {
            return Err(invalid("kafka.bootstrap is empty".into()));
        }
        let mut secrets = BTreeMap::new();
        for (key, r) in &file.kafka.secrets {
            if file.kafka.properties.contains_key(key) {
                return Err(invalid(format!(
                    "kafka: `{key}` is both a property and a secret"
                )));
            }
            secrets.insert(
                key.clone(),
                r.resolve(&format!("kafka.secrets.{key}"), env, base)
                    .map_err(invalid)?,
            );
        }
        for key in file.kafka.properties.keys() {
            if looks_secret(key) {
                return Err(invalid(format!(
                    "kafka.properties.{key}: put it under kafka.secrets as {{ env = \"VAR\" }} or {{ file = \"PATH\" }}"
                )));
            }
        }
        let kafka = Kafka {
            bootstrap: file.kafka.bootstrap,
            properties: file.kafka.properties,
            secrets,
        };
        let http = |what: &str, f: HttpFile| -> Result<Http, ProfileError> {
            if !(f.url.starts_with("http://") || f.url.starts_with("https://")) {
                return Err(invalid(format!(
                    "{what}.url must start with http:// or https://, not `{}`",
                    f.url
                )));
            }
            Ok(Http {
                password: secret(&format!("{what}.password"), &f.password)?,
                url: f.url.trim_end_matches('/').to_owned(),
                user: f.user,
            })
        };
        let registry = http("registry", file.registry)?;
        let connect = http("connect", file.connect)?;
        let lake = match file.lake.catalog.as_str() {
            "sql" => {
                let uri = file.lake.uri.ok_or_else(|| {
                    invalid("lake.uri is missing (sqlite:///ABSOLUTE/PATH)".into())
                })?;
                let catalog_db = uri
                    .strip_prefix("sqlite:")
                    .map(|rest| PathBuf::from(format!("/{}", rest.trim_start_matches('/'))))
                    .filter(|_| !uri.contains('?'))
                    .ok_or_else(|| {
                        invalid(format!(
                            "lake.uri = `{uri}`: expected sqlite:///ABSOLUTE/PATH (the catalog's sqlite file)"
                        ))
                    })?;
                let warehouse = file.lake.warehouse.ok_or_else(|| {
                    invalid("lake.warehouse is missing (an absolute folder or file:// URI)".into())
                })?;
                let warehouse =
                    PathBuf::from(warehouse.strip_prefix("file://").unwrap_or(&warehouse));
                if !warehouse.is_absolute() {
                    return Err(invalid(format!(
                        "lake.warehouse = `{}`: expected an absolute folder",
                        warehouse.display()
                    )));
                }
                LakeLocation::Sql {
                    catalog_db,
                    warehouse,
                }
            }
            "rest" | "glue" => {
                return Err(invalid(format!(
                    "lake.catalog = \"{}\": not supported yet, only \"sql\" (an Iceberg SQL catalog on sqlite, \
                     which lossproof's consumers and reconciler read and write)",
                    file.lake.catalog
                )));
            }
            other => {
                return Err(invalid(format!(
                    "lake.catalog = \"{other}\": expected \"sql\""
                )));
            }
        };
        let name = file.name.unwrap_or_else(|| {
            path.file_stem().map_or_else(
                || "external".to_owned(),
                |s| s.to_string_lossy().into_owned(),
            )
        });
        Ok(Self {
            name,
            source,
            kafka,
            registry,
            connect,
            lake,
        })
    }
}

/// librdkafka properties that carry a secret: refused among the plain ones.
fn looks_secret(key: &str) -> bool {
    key.ends_with("password") || key.ends_with("secret") || key.ends_with(".key.pem")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A profile using every section (secrets from [`env`]).
    pub(crate) const FULL: &str = r#"
name = "staging"

[source]
host = "pg.staging"
user = "lossproof"
password = { env = "PG_PASSWORD" }

[kafka]
bootstrap = "k1:9092,k2:9092"
properties = { "security.protocol" = "SASL_SSL", "sasl.mechanism" = "SCRAM-SHA-512" }
secrets = { "sasl.password" = { env = "KAFKA_PASSWORD" } }

[registry]
url = "http://registry:8081/"

[connect]
url = "http://connect:8083"
user = "admin"
password = { env = "CONNECT_PASSWORD" }

[lake]
catalog = "sql"
uri = "sqlite:///srv/lake/catalog.db"
warehouse = "/srv/lake/warehouse"
"#;

    fn env(var: &str) -> Option<String> {
        match var {
            "PG_PASSWORD" => Some("pg-hunter2".into()),
            "KAFKA_PASSWORD" => Some("kafka-hunter2".into()),
            "CONNECT_PASSWORD" => Some("connect-hunter2".into()),
            _ => None,
        }
    }

    pub(crate) fn parse(text: &str) -> Result<Profile, ProfileError> {
        Profile::parse(Path::new("profiles/staging.toml"), text, &env)
    }

    fn refused(text: &str) -> String {
        match parse(text) {
            Err(e) => e.to_string(),
            Ok(p) => panic!("expected a refusal, got {p:?}"),
        }
    }

    #[test]
    fn a_full_profile_loads_with_its_defaults() {
        let p = parse(FULL).unwrap();
        assert_eq!(p.name, "staging");
        assert_eq!(
            (p.source.port, p.source.database.as_str()),
            (5432, "postgres")
        );
        assert_eq!(
            (p.source.connect_host.as_str(), p.source.connect_port),
            ("pg.staging", 5432)
        );
        assert_eq!(p.source.password.as_ref().unwrap().expose(), "pg-hunter2");
        assert_eq!(p.kafka.secrets["sasl.password"].expose(), "kafka-hunter2");
        assert_eq!(p.registry.url, "http://registry:8081");
        let LakeLocation::Sql {
            catalog_db,
            warehouse,
        } = &p.lake
        else {
            panic!("a SQL catalog: {:?}", p.lake)
        };
        assert_eq!(warehouse, Path::new("/srv/lake/warehouse"));
        assert_eq!(catalog_db, Path::new("/srv/lake/catalog.db"));
    }

    /// Whatever prints a profile (logs, errors, records built with `{:?}`)
    /// never shows a secret.
    #[test]
    fn no_secret_is_ever_printed() {
        let text = format!("{:?}", parse(FULL).unwrap());
        for secret in ["pg-hunter2", "kafka-hunter2", "connect-hunter2"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains("Secret(***)"), "{text}");
    }

    #[test]
    fn a_secret_written_in_the_file_is_refused_without_echoing_it() {
        let why = refused(&FULL.replace(
            r#"password = { env = "PG_PASSWORD" }"#,
            r#"password = "inline-hunter2""#,
        ));
        assert!(
            why.contains("source.password") && why.contains("env ="),
            "{why}"
        );
        assert!(!why.contains("inline-hunter2"), "{why}");
        let why = refused(&FULL.replace(
            r#""sasl.mechanism" = "SCRAM-SHA-512""#,
            r#""sasl.mechanism" = "PLAIN", "sasl.password" = "x""#,
        ));
        assert!(why.contains("both a property and a secret"), "{why}");
    }

    #[test]
    fn bad_profiles_say_what_and_where() {
        let why = refused(&FULL.replace("PG_PASSWORD", "NOT_SET_ANYWHERE"));
        assert!(
            why.contains("profiles/staging.toml") && why.contains("NOT_SET_ANYWHERE is not set"),
            "{why}"
        );
        let why = refused(&FULL.replace("user = \"lossproof\"", "usr = \"lossproof\""));
        assert!(why.contains("usr") && why.contains("line"), "{why}");
        let why = refused(&FULL.replace("catalog = \"sql\"", "catalog = \"rest\""));
        assert!(why.contains("not supported yet"), "{why}");
        let why = refused(&FULL.replace("http://connect:8083", "connect:8083"));
        assert!(why.contains("connect.url must start with http://"), "{why}");
    }

    #[test]
    fn a_secret_file_is_read_relative_to_the_profile() {
        let dir = tempfile_dir();
        std::fs::write(dir.join("pg"), "from-a-file\n").unwrap();
        let text = FULL.replace(r#"{ env = "PG_PASSWORD" }"#, r#"{ file = "pg" }"#);
        let p = Profile::parse(&dir.join("staging.toml"), &text, &env).unwrap();
        assert_eq!(p.source.password.unwrap().expose(), "from-a-file");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lossproof-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
