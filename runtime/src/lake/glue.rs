//! The lake on S3 with an AWS Glue catalog (`--features aws`): the aws
//! stack's (`lossproof up --profile aws`, moto on loopback).
//!
//! Namespaces are Glue databases, tables are Glue tables whose
//! `metadata_location` parameter points at the Iceberg metadata file, data
//! and metadata live under the S3 warehouse (`s3://bucket/prefix`), read and
//! written through iceberg-rust's opendal S3 storage with path-style
//! addressing (what moto serves). iceberg-catalog-glue does namespaces,
//! tables, loads and iceberg-rust's own commits.
//!
//! The base check of every other commit ([`Glue::swap`]) is the one Iceberg
//! Java's Glue catalog makes: read the table, refuse unless its
//! `metadata_location` is the writer's base, then `UpdateTable` with the
//! `VersionId` just read, which Glue refuses
//! (`ConcurrentModificationException`) if another writer updated the table
//! in between. moto 5.2.5 ignores `VersionId`; lossproof's moto server
//! enforces it as AWS does (runtime/moto_server.py), so a race is a
//! conflict here too, never a lost commit.
//!
//! Glue has no multi-table transaction: [`super::Lake::commit_all`] swaps
//! table after table, so a crash between two swaps leaves the first
//! committed. Writers that need several tables to move together put the
//! table that records their position LAST (the correct consumer's
//! `_lp_state`): after a crash they resume from the old position and apply
//! again what the tables before it already hold (docs/consumers.md).

use std::collections::HashMap;

use aws_sdk_glue::error::ProvideErrorMetadata as _;
use aws_sdk_glue::types::TableInput;
use iceberg::io::S3_PATH_STYLE_ACCESS;
use iceberg::{CatalogBuilder as _, TableIdent};
use iceberg_catalog_glue::{
    AWS_ACCESS_KEY_ID, AWS_REGION_NAME, AWS_SECRET_ACCESS_KEY, GLUE_CATALOG_PROP_URI,
    GLUE_CATALOG_PROP_WAREHOUSE, GlueCatalog, GlueCatalogBuilder,
};

use super::CommitError;
use crate::error::{Error, Result};
use crate::nightly::EMULATOR_KEY;
use crate::profile::GlueLocation;
const METADATA_LOCATION: &str = "metadata_location";
const PREVIOUS_METADATA_LOCATION: &str = "previous_metadata_location";

/// An open Glue catalog, and a Glue client of its own for the base check.
pub(super) struct Glue {
    at: GlueLocation,
    catalog: GlueCatalog,
    client: aws_sdk_glue::Client,
}

impl std::fmt::Debug for Glue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Glue")
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl Glue {
    /// Open the catalog at `at` (nothing is created). Needs a tokio runtime.
    /// The catalog gives its S3 storage the same endpoint, region and keys
    /// unless told otherwise (iceberg-catalog-glue's `GlueCatalog::new`).
    pub(super) async fn open(at: &GlueLocation) -> Result<Self> {
        let mut props = HashMap::from([
            (GLUE_CATALOG_PROP_WAREHOUSE.to_owned(), at.warehouse.clone()),
            (AWS_REGION_NAME.to_owned(), at.region.clone()),
        ]);
        if let Some(endpoint) = &at.endpoint {
            props.insert(GLUE_CATALOG_PROP_URI.to_owned(), endpoint.clone());
        }
        if at.emulator {
            props.insert(S3_PATH_STYLE_ACCESS.to_owned(), "true".to_owned());
            for key in [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY] {
                props.insert(key.to_owned(), EMULATOR_KEY.to_owned());
            }
        }
        let catalog = GlueCatalogBuilder::default()
            .load(super::CATALOG_NAME, props)
            .await
            .map_err(|e| {
                Error::Setup(format!(
                    "cannot open the Glue catalog of {}: {e}",
                    at.warehouse
                ))
            })?;
        let mut config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new(at.region.clone()));
        if let Some(endpoint) = &at.endpoint {
            config = config.endpoint_url(endpoint);
        }
        if at.emulator {
            config = config.credentials_provider(aws_sdk_glue::config::Credentials::new(
                EMULATOR_KEY,
                EMULATOR_KEY,
                None,
                None,
                "lossproof emulator",
            ));
        }
        let client = aws_sdk_glue::Client::new(&config.load().await);
        Ok(Self {
            at: at.clone(),
            catalog,
            client,
        })
    }

    pub(super) fn catalog(&self) -> &GlueCatalog {
        &self.catalog
    }

    pub(super) fn location(&self) -> &GlueLocation {
        &self.at
    }

    /// Point `table` at metadata file `new` if Glue still points it at
    /// `base` (see the module docs).
    pub(super) async fn swap(
        &self,
        table: &TableIdent,
        base: &str,
        new: &str,
    ) -> std::result::Result<(), CommitError> {
        let failed = |e: String| CommitError::Catalog {
            table: table.clone(),
            source: e.into(),
        };
        let database = table.namespace().join(".");
        let got = self
            .client
            .get_table()
            .database_name(&database)
            .name(table.name())
            .send()
            .await
            .map_err(|e| failed(glue_error(&e)))?;
        let current = got
            .table()
            .ok_or_else(|| failed("GetTable returned no table".to_owned()))?;
        let mut parameters = current.parameters().cloned().unwrap_or_default();
        let head = parameters.get(METADATA_LOCATION).cloned();
        if head.as_deref() != Some(base) {
            return Err(CommitError::Conflict {
                table: table.clone(),
                base: base.to_owned(),
                head: head.unwrap_or_else(|| "no metadata location".to_owned()),
            });
        }
        parameters.insert(METADATA_LOCATION.to_owned(), new.to_owned());
        parameters.insert(PREVIOUS_METADATA_LOCATION.to_owned(), base.to_owned());
        let input = TableInput::builder()
            .name(table.name())
            .set_table_type(current.table_type().map(str::to_owned))
            .set_storage_descriptor(current.storage_descriptor().cloned())
            .set_parameters(Some(parameters))
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let updated = self
            .client
            .update_table()
            .database_name(&database)
            .table_input(input)
            .set_version_id(current.version_id().map(str::to_owned))
            .skip_archive(true)
            .send()
            .await;
        match updated {
            Ok(_) => Ok(()),
            // Another writer updated the table between our read and our
            // update: name where it points now.
            Err(e) if e.code() == Some("ConcurrentModificationException") => {
                Err(CommitError::Conflict {
                    table: table.clone(),
                    base: base.to_owned(),
                    head: self
                        .head(&database, table)
                        .await
                        .unwrap_or_else(|| "a newer Glue table version".to_owned()),
                })
            }
            Err(e) => Err(failed(glue_error(&e))),
        }
    }

    /// Where Glue points `table` now, if it answers.
    async fn head(&self, database: &str, table: &TableIdent) -> Option<String> {
        let got = self
            .client
            .get_table()
            .database_name(database)
            .name(table.name())
            .send()
            .await
            .ok()?;
        got.table()?.parameters()?.get(METADATA_LOCATION).cloned()
    }
}

/// An AWS SDK error as one line: its code and message.
fn glue_error<E: aws_sdk_glue::error::ProvideErrorMetadata + std::fmt::Debug>(e: &E) -> String {
    match (e.code(), e.message()) {
        (Some(code), Some(message)) => format!("Glue: {code}: {message}"),
        (Some(code), None) => format!("Glue: {code}"),
        _ => format!("Glue: {e:?}"),
    }
}
