//! `lossproof reconcile --run RUN`: gate, then score a run's lakes against
//! the source on the running local stack; `lossproof reconcile --source URL
//! --table T --lake sqlite:///…/catalog.db --lake-table NS.T`: compare a
//! PostgreSQL table of your own with an Iceberg table, no stack.

use std::path::Path;
use std::time::Duration;

use crate::CliResult;
use lossproof_runtime::ConnectClient;
use lossproof_runtime::debezium::{self, CaptureNames};
use lossproof_runtime::profile::{GlueLocation, LakeLocation};
use lossproof_runtime::reconcile::{self, DiffKind, Reconciliation, gate};

pub(crate) struct Args<'a> {
    pub state: &'a Path,
    /// An external profile instead of the local stack in `state`.
    pub profile: Option<&'a Path>,
    pub run: &'a str,
    pub consumers: &'a [String],
    pub out: Option<&'a Path>,
    pub wait: Duration,
    /// Score a live source: one snapshot, lakes that cover it, `in-flight`
    /// keys ([`reconcile::live`]).
    pub live: bool,
}

/// Exit 0 when every consumer is clean, 1 when any has diff rows, an error
/// (exit 2) when the run is INVALID.
pub(crate) fn run(args: &Args<'_>) -> CliResult<bool> {
    let (stack, endpoints) = crate::stack_cli::running(args.state, args.profile)?;
    let runtime = crate::stack_cli::runtime()?;
    // A kept seed of a scenario with tables of its own left them with its logs.
    let logs = stack.state().root().join("runs").join(args.run);
    let declared = lossproof_consumers::tables_file::of_seed(&logs)?;
    let workload = declared
        .as_ref()
        .unwrap_or_else(|| lossproof_vocabulary::workloads::orders());
    runtime.block_on(async {
        // A seed of `lossproof run` captures a database of its own (kept
        // with `--keep`); a run set up by hand, the stack's shared one.
        let mut names = CaptureNames::for_run(args.run);
        let own = names.clone().in_own_database();
        if lossproof_runtime::postgres::database_exists(&endpoints.source, &own.database).await? {
            names = own;
        }
        let source = endpoints.source.connect(&names.database).await?;
        let positions =
            lossproof_executor::under_test::positions(args.consumers, &[], &names, workload);
        let connect = ConnectClient::new(&endpoints.connect);
        let lake = endpoints.open_lake().await?;
        let lakes = lossproof_executor::under_test::lakes(args.consumers, &[], &names, workload);
        let tables: Vec<&str> = workload.table_names();
        if args.live {
            // The snapshot's own connection: every read of the source in
            // its transaction; the gate's queries on the other.
            let reader = endpoints.source.connect(&names.database).await?;
            let snapshot = reconcile::live::Snapshot::begin(&reader).await?;
            eprintln!(
                "live: the source's snapshot is at LSN {}",
                debezium::show_lsn(snapshot.lsn)
            );
            let scored = async {
                gate::wait_covered(
                    &connect,
                    &names,
                    &source,
                    snapshot.lsn,
                    &endpoints.kafka,
                    &positions,
                    &lake,
                    args.wait,
                )
                .await
                .map_err(|invalid| format!("INVALID: {invalid} — not scored"))?;
                let mut specs = Vec::new();
                for table in &tables {
                    specs.push(reconcile::source::describe(&reader, table).await?);
                }
                let scored = reconcile::reconcile_live(
                    &reader,
                    &lake,
                    &specs,
                    &lakes,
                    reconcile::RowTables::Skip,
                    &snapshot,
                )
                .await?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(scored)
            }
            .await;
            reconcile::live::Snapshot::end(&reader).await?;
            return finish(&scored?, args.out);
        }
        // What the source holds now is what the lake must hold once drained.
        let final_lsn = debezium::current_lsn(&source).await?;
        if let Err(invalid) = gate::wait_scoreable(
            &connect,
            &names,
            &source,
            final_lsn,
            &endpoints.kafka,
            &positions,
            Some(&lake),
            args.wait,
        )
        .await
        {
            return Err(format!("INVALID: {invalid} — not scored").into());
        }
        let scored =
            reconcile::reconcile(&source, &lake, &tables, &lakes, reconcile::RowTables::Skip)
                .await?;
        finish(&scored, args.out)
    })
}

/// Print the counts, write the diff if asked; clean = no damage.
fn finish(scored: &Reconciliation, out: Option<&Path>) -> CliResult<bool> {
    print_summary(scored);
    if let Some(out) = out {
        write_diff(scored, out)?;
        eprintln!(
            "diff: {} rows written to {}",
            scored.diff.len(),
            out.display()
        );
    }
    Ok(scored.clean())
}

/// A source table and a lake table of a team's own: what one comparison
/// needs, owned (a distributed comparison sends it to its workers).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Job {
    /// `postgres://USER:PASSWORD@HOST:PORT/DB`: never printed.
    pub source: String,
    pub table: String,
    /// The Iceberg catalog: `sqlite:///PATH/catalog.db` (a SQL catalog),
    /// `glue://REGION[?endpoint=URL]` (AWS Glue; with an endpoint, an
    /// emulator such as moto) or `http(s)://…` (a REST catalog).
    pub lake: String,
    /// `namespace.name`
    pub lake_table: String,
    /// The warehouse: a folder for a SQL catalog [default: the catalog
    /// file's folder], `s3://BUCKET/PREFIX` for Glue (required).
    pub warehouse: Option<String>,
    /// Compare only the rows this predicate selects, on both sides (SQL
    /// that PostgreSQL and DataFusion both read: `id BETWEEN 1 AND 1000`).
    pub filter: Option<String>,
    /// Source columns left out of the comparison.
    pub ignore: Vec<String>,
}

/// `lossproof reconcile --source …`: a [`Job`], where the diff goes, and
/// the workers to spread it over (none: here).
pub(crate) struct Standalone<'a> {
    pub job: Job,
    pub out: Option<&'a Path>,
    pub workers: &'a [String],
}

/// The consumer name a standalone comparison's counts carry.
const STANDALONE: &str = "lake";

/// A catalog `--lake` names.
enum LakeArg {
    /// One a stack could also use: SQL or Glue.
    At(LakeLocation),
    /// A REST catalog: its URI and its (non-secret) properties.
    Rest {
        uri: String,
        properties: Vec<(String, String)>,
    },
}

impl LakeArg {
    async fn open(&self) -> CliResult<lossproof_runtime::Lake> {
        Ok(match self {
            Self::At(location) => lossproof_runtime::Lake::open_at(location).await?,
            Self::Rest { uri, properties } => {
                let secrets = lossproof_runtime::lake::rest::RestSecrets::from_env();
                lossproof_runtime::Lake::open_rest(uri, properties, &secrets).await?
            }
        })
    }
}

/// `http(s)://HOST/PATH?k=v&…`: the REST catalog's URI and properties;
/// `--warehouse` is its `warehouse` property.
fn rest_catalog(lake: &str, warehouse: Option<&str>) -> CliResult<LakeArg> {
    let (uri, query) = lake.split_once('?').unwrap_or((lake, ""));
    let mut properties = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(format!("--lake {uri}?…: `{pair}` is not KEY=VALUE").into());
        };
        properties.push((key.to_owned(), value.to_owned()));
    }
    if let Some(warehouse) = warehouse {
        properties.push(("warehouse".to_owned(), warehouse.to_owned()));
    }
    Ok(LakeArg::Rest {
        uri: uri.trim_end_matches('/').to_owned(),
        properties,
    })
}

/// Where `--lake` (and `--warehouse`) say the lake table's catalog is.
fn lake_arg(lake: &str, warehouse: Option<&str>) -> CliResult<LakeArg> {
    if lake.starts_with("http://") || lake.starts_with("https://") {
        return rest_catalog(lake, warehouse);
    }
    lake_location(lake, warehouse).map(LakeArg::At)
}

/// A SQL or Glue catalog's location.
fn lake_location(lake: &str, warehouse: Option<&str>) -> CliResult<LakeLocation> {
    if let Some(catalog) = lake.strip_prefix("sqlite://").map(Path::new) {
        if !catalog.is_file() {
            return Err(format!("--lake: no catalog file {}", catalog.display()).into());
        }
        let warehouse = warehouse
            .map(Path::new)
            .or_else(|| catalog.parent())
            .unwrap_or(Path::new("."));
        return Ok(LakeLocation::Sql {
            catalog_db: catalog.to_owned(),
            warehouse: warehouse.to_owned(),
        });
    }
    if let Some(rest) = lake.strip_prefix("glue://") {
        let (region, query) = rest.split_once('?').unwrap_or((rest, ""));
        let region = region.trim_end_matches('/');
        if region.is_empty() {
            return Err("--lake glue://REGION[?endpoint=URL]: the region is missing".into());
        }
        let mut endpoint = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("endpoint", url)) => endpoint = Some(url.to_owned()),
                _ => {
                    return Err(
                        format!("--lake glue://…?{pair}: the one option is endpoint=URL").into(),
                    );
                }
            }
        }
        let warehouse = warehouse
            .filter(|w| w.starts_with("s3://"))
            .ok_or("--lake glue://…: --warehouse s3://BUCKET/PREFIX is required")?;
        return Ok(LakeLocation::Glue(GlueLocation {
            // An endpoint of its own is an emulator (moto, LocalStack):
            // path-style S3 and the emulator's fixed keys, never the
            // environment's credentials; without one, AWS's own Glue and
            // S3 with the usual credential chain (environment, profile).
            emulator: endpoint.is_some(),
            endpoint,
            region: region.to_owned(),
            warehouse: warehouse.to_owned(),
        }));
    }
    Err("--lake: sqlite:///PATH/catalog.db (an Iceberg SQL catalog), glue://REGION[?endpoint=URL] or http(s)://HOST/PATH (a REST catalog)".into())
}

/// Exit 0 when the lake table holds exactly the source table's rows, 1 when
/// it does not, an error (exit 2) when either cannot be read. Without the
/// source's history table every differing row is `wrong` (docs/run.md).
pub(crate) fn standalone(args: &Standalone<'_>) -> CliResult<bool> {
    // Bad arguments fail here, before anything connects.
    lake_arg(&args.job.lake, args.job.warehouse.as_deref())?;
    args.job.lake_namespace()?;
    let runtime = crate::stack_cli::runtime()?;
    let (job, workers) = (args.job.clone(), args.workers.to_vec());
    let scored = crate::stack_cli::on_worker(&runtime, async move {
        if workers.is_empty() {
            compare(&job, None).await
        } else {
            distributed(&job, &workers).await
        }
    })?;
    finish(&scored, args.out)
}

#[cfg(feature = "distributed")]
async fn distributed(job: &Job, workers: &[String]) -> CliResult<Reconciliation> {
    crate::distributed::reconcile(job, workers).await
}

#[cfg(not(feature = "distributed"))]
#[allow(clippy::unused_async)] // the same signature as with the feature
async fn distributed(_: &Job, _: &[String]) -> CliResult<Reconciliation> {
    Err("--workers: this lossproof was built without the `distributed` feature (cargo build --features distributed)".into())
}

impl Job {
    /// The lake table's (namespace, name).
    fn lake_namespace(&self) -> CliResult<(&str, &str)> {
        Ok(self
            .lake_table
            .rsplit_once('.')
            .ok_or("--lake-table is namespace.name")?)
    }

    /// The source's connection; its driver runs until the returned task is
    /// aborted. Errors name the source, never the URL (it holds the password).
    pub(crate) async fn connect(
        &self,
    ) -> CliResult<(tokio_postgres::Client, tokio::task::JoinHandle<()>)> {
        let (source, connection) = tokio_postgres::connect(&self.source, tokio_postgres::NoTls)
            .await
            .map_err(|e| format!("cannot connect to the source: {e}"))?;
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok((source, driver))
    }

    /// The source table as described, narrowed by `--where` and
    /// `--ignore-column`.
    pub(crate) async fn describe(
        &self,
        source: &tokio_postgres::Client,
    ) -> CliResult<reconcile::SourceTable> {
        let mut spec = reconcile::source::describe(source, &self.table).await?;
        spec.filter.clone_from(&self.filter);
        for column in &self.ignore {
            spec.ignore(column)?;
        }
        Ok(spec)
    }
}

/// Compare the job's tables, or only the keys in `bucket`.
pub(crate) async fn compare(
    job: &Job,
    bucket: Option<reconcile::source::KeyRange>,
) -> CliResult<Reconciliation> {
    let location = lake_arg(&job.lake, job.warehouse.as_deref())?;
    let (namespace, name) = job.lake_namespace()?;
    let (source, driver) = job.connect().await?;
    let scored = async {
        let lake = location.open().await?;
        let consumer = reconcile::ConsumerLake {
            consumer: STANDALONE.into(),
            namespace: namespace.into(),
            views: std::collections::HashMap::from([(
                job.table.clone(),
                format!(
                    "SELECT * FROM {}.{}",
                    reconcile::source::quote_ident(namespace),
                    reconcile::source::quote_ident(name)
                ),
            )]),
            changelog: false,
            applied: None,
        };
        let mut spec = job.describe(&source).await?;
        spec.bucket = bucket;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(
            reconcile::reconcile_tables(
                &source,
                &lake,
                &[spec],
                &[consumer],
                reconcile::RowTables::Skip,
            )
            .await?,
        )
    }
    .await;
    driver.abort();
    scored
}

fn print_summary(scored: &Reconciliation) {
    use std::fmt::Write as _;
    for (consumer, table, why) in &scored.in_memory {
        eprintln!("{consumer}'s {table}: compared in memory, not streamed ({why})");
    }
    let mut kinds = String::new();
    for kind in DiffKind::ALL {
        let _ = write!(kinds, "{:>12}", kind.as_str().to_uppercase());
    }
    println!(
        "{:<10} {:<12} {:>9} {:>7}{kinds}",
        "CONSUMER", "TABLE", "COMPARED", "WRONG"
    );
    for s in &scored.summary {
        let mut by_kind = String::new();
        for kind in DiffKind::ALL {
            let _ = write!(
                by_kind,
                "{:>12}",
                s.counts.by_kind.get(&kind).copied().unwrap_or(0)
            );
        }
        println!(
            "{:<10} {:<12} {:>9} {:>7}{by_kind}",
            s.consumer, s.table, s.counts.compared, s.counts.wrong
        );
    }
}

/// The diff as Parquet, CSV or JSON, by the file's extension.
fn write_diff(scored: &Reconciliation, out: &Path) -> CliResult<()> {
    let fail = |e: &dyn std::fmt::Display| -> Box<dyn std::error::Error + Send + Sync> {
        format!("write {}: {e}", out.display()).into()
    };
    let extension = out.extension().and_then(|e| e.to_str()).unwrap_or_default();
    match extension {
        "json" => {
            let text = serde_json::to_string_pretty(&scored.diff).map_err(|e| fail(&e))?;
            std::fs::write(out, text + "\n").map_err(|e| fail(&e))
        }
        "csv" => {
            let file = std::fs::File::create(out).map_err(|e| fail(&e))?;
            let mut writer = datafusion::arrow::csv::Writer::new(file);
            writer.write(&scored.diff_batch()).map_err(|e| fail(&e))
        }
        "parquet" => {
            let batch = scored.diff_batch();
            let file = std::fs::File::create(out).map_err(|e| fail(&e))?;
            let mut writer =
                datafusion::parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None)
                    .map_err(|e| fail(&e))?;
            writer.write(&batch).map_err(|e| fail(&e))?;
            writer.close().map(|_| ()).map_err(|e| fail(&e))
        }
        _ => Err(format!(
            "{}: write the diff as .parquet, .csv or .json (by the file's extension)",
            out.display()
        )
        .into()),
    }
}
