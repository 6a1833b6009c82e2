//! `lossproof consumer correct --rebuild`: when the consumer's logic
//! changed, or its lake must be trusted again, rebuild every table from the
//! beginning of the topics into new tables (`_lp_rebuild_<name>` in the same
//! namespace), then make the tables readers use point at the rebuilt ones
//! in ONE catalog transaction — only if nobody committed to them meanwhile
//! (stop the running consumer first). Readers see the old tables or the new
//! ones, never a mix.

use iceberg::TableIdent;
use lossproof_runtime::Lake;

use super::state::{DEAD_LETTERS, STATE_TABLE, load};
use super::{Config, Fatal};

/// Tables of a rebuild are named with this prefix until they are swapped in.
pub const PREFIX: &str = "_lp_rebuild_";

pub async fn run(
    lake: &Lake,
    config: &Config,
    stop: tokio::sync::watch::Receiver<bool>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), Fatal> {
    let ns = lake
        .ensure_namespace(&config.namespace)
        .await
        .map_err(crate::Error::iceberg(format!(
            "namespace {}",
            config.namespace
        )))?;
    let mut names: Vec<String> = config
        .workload
        .tables
        .iter()
        .map(|t| t.name.clone())
        .collect();
    names.push(STATE_TABLE.to_owned());
    names.push(DEAD_LETTERS.to_owned());
    // What readers use now (created empty if the consumer never ran). A
    // lake that has rows but lost its offsets is exactly what a rebuild is for.
    super::state::LakeState::create_tables(lake, &config.namespace, "", config.workload).await?;
    let mut current = Vec::new();
    for name in &names {
        current.push(load(lake, &ns, name).await?);
    }
    // Leftovers of an interrupted rebuild start over.
    for name in &names {
        let ident = TableIdent::new(ns.clone(), format!("{PREFIX}{name}"));
        if lake.catalog().table_exists(&ident).await.unwrap_or(false) {
            lake.catalog()
                .drop_table(&ident)
                .await
                .map_err(crate::Error::iceberg(ident.to_string()))?;
        }
    }
    log(&format!(
        "correct: rebuilding {} from the beginning of {} topics",
        config.namespace,
        config.topics.len()
    ));
    let rebuild = Config {
        table_prefix: PREFIX.to_owned(),
        until_end: true,
        group: format!("{}-rebuild", config.group),
        ..config.clone()
    };
    // Its key index starts empty too.
    let _ = std::fs::remove_file(rebuild.index_path());
    let report = super::run(lake, &rebuild, stop, log).await?;
    let mut swapped_in = Vec::new();
    for name in &names {
        swapped_in.push(load(lake, &ns, &format!("{PREFIX}{name}")).await?);
    }
    let pairs: Vec<_> = current.iter().zip(&swapped_in).collect();
    lake.replace_tables(&pairs).await.map_err(|e| {
        Fatal::Other(format!(
            "the rebuild is complete but was not swapped in: {e} (was the consumer still running? \
             stop it and rebuild again)"
        ))
    })?;
    for name in &names {
        let ident = TableIdent::new(ns.clone(), format!("{PREFIX}{name}"));
        lake.catalog()
            .drop_table(&ident)
            .await
            .map_err(crate::Error::iceberg(ident.to_string()))?;
    }
    // The rebuilt tables' index was for their old names; the consumer's
    // own index sees new tables (another uuid) and rebuilds from the lake.
    let _ = std::fs::remove_file(rebuild.index_path());
    log(&format!(
        "correct: rebuilt {} from {} records ({} changes applied) and swapped it in",
        config.namespace, report.records, report.applied
    ));
    Ok(())
}
