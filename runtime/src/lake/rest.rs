//! A lake behind an Iceberg REST catalog (`lossproof reconcile --lake
//! http://…`): a team's own catalog server (Polaris, Lakekeeper, Gravitino,
//! Nessie, lakana, a cloud's). lossproof READS through it: the standalone
//! reconciler lists and loads tables, and the server says where their files
//! are (and, for object stores, usually vends the credentials to read them).
//!
//! The catalog's properties are iceberg-rust's REST properties
//! (`warehouse`, `prefix`, `header.NAME`, `oauth2-server-uri`, `scope`, …);
//! the secret ones come from the environment, never from the command line
//! and never printed: [`TOKEN_ENV`] (a bearer token) and [`CREDENTIAL_ENV`]
//! (`client_id:client_secret` for the catalog's OAuth2 token endpoint).
//!
//! Writes: only iceberg-rust's own commits ([`super::Lake::append`], sent as
//! the REST protocol's table updates). lossproof's base-checked commits
//! swap metadata pointers, which a REST catalog does not let a client do:
//! [`super::Lake::commit`] on this lake is an error saying so.

use std::collections::HashMap;
use std::sync::Arc;

use iceberg::CatalogBuilder as _;
use iceberg_catalog_rest::{REST_CATALOG_PROP_URI, RestCatalog, RestCatalogBuilder};

use crate::error::{Error, Result};

/// The environment variable holding the catalog's bearer token.
pub const TOKEN_ENV: &str = "LOSSPROOF_LAKE_TOKEN";
/// The environment variable holding `client_id:client_secret` for the
/// catalog's OAuth2 token endpoint.
pub const CREDENTIAL_ENV: &str = "LOSSPROOF_LAKE_CREDENTIAL";
/// Properties that are secrets: from the environment only.
const SECRET_PROPERTIES: [&str; 2] = ["token", "credential"];

/// The catalog's secrets: a bearer token, or an OAuth2 credential
/// (`client_id:client_secret`) to get one. Never printed.
#[derive(Clone, Default)]
pub struct RestSecrets {
    pub token: Option<String>,
    pub credential: Option<String>,
}

impl RestSecrets {
    /// [`TOKEN_ENV`] and [`CREDENTIAL_ENV`] (unset or empty: none).
    #[must_use]
    pub fn from_env() -> Self {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        Self {
            token: var(TOKEN_ENV),
            credential: var(CREDENTIAL_ENV),
        }
    }
}

impl std::fmt::Debug for RestSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |s: &Option<String>| s.as_ref().map(|_| "***");
        f.debug_struct("RestSecrets")
            .field("token", &shown(&self.token))
            .field("credential", &shown(&self.credential))
            .finish()
    }
}

/// An open REST catalog and the URI it was opened at (for messages).
pub(super) struct Rest {
    pub(super) uri: String,
    pub(super) catalog: RestCatalog,
}

impl std::fmt::Debug for Rest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rest")
            .field("uri", &self.uri)
            .finish_non_exhaustive()
    }
}

impl Rest {
    /// Open the REST catalog at `uri` with `properties` (none of them a
    /// secret: those are `secrets`) and list its namespaces, so an
    /// unreachable or refusing server is an error here, not at the first
    /// table.
    pub(super) async fn open(
        uri: &str,
        properties: &[(String, String)],
        secrets: &RestSecrets,
    ) -> Result<Self> {
        let mut props = HashMap::from([(REST_CATALOG_PROP_URI.to_owned(), uri.to_owned())]);
        for (key, value) in properties {
            if SECRET_PROPERTIES.contains(&key.as_str()) {
                return Err(Error::Setup(format!(
                    "the REST catalog's {key} is a secret: give it in ${}, not on the command line",
                    if key == "token" {
                        TOKEN_ENV
                    } else {
                        CREDENTIAL_ENV
                    }
                )));
            }
            props.insert(key.clone(), value.clone());
        }
        for (key, value) in [
            ("token", &secrets.token),
            ("credential", &secrets.credential),
        ] {
            if let Some(value) = value {
                props.insert(key.to_owned(), value.clone());
            }
        }
        let catalog = RestCatalogBuilder::default()
            .with_storage_factory(storage())
            .load(super::CATALOG_NAME, props)
            .await
            .map_err(|e| cannot_open(uri, &e))?;
        // The builder connects lazily: list the namespaces now, so a wrong
        // URI, prefix or token is reported as such.
        iceberg::Catalog::list_namespaces(&catalog, None)
            .await
            .map_err(|e| cannot_open(uri, &e))?;
        Ok(Self {
            uri: uri.to_owned(),
            catalog,
        })
    }
}

/// The error for a catalog that cannot be opened. iceberg-rust's REST
/// errors name the request, never the token (it redacts the
/// `Authorization` header).
fn cannot_open(uri: &str, e: &iceberg::Error) -> Error {
    Error::Setup(format!("cannot open the REST catalog {uri}: {e}"))
}

/// Where the tables' files are read: the local file system, and with
/// `--features aws` S3 too (the credentials the server vends, or the usual
/// AWS environment).
#[cfg(not(feature = "aws"))]
fn storage() -> Arc<dyn iceberg::io::StorageFactory> {
    Arc::new(iceberg::io::LocalFsStorageFactory)
}

#[cfg(feature = "aws")]
fn storage() -> Arc<dyn iceberg::io::StorageFactory> {
    Arc::new(iceberg_storage_opendal::OpenDalResolvingStorageFactory::new())
}
