//! `lossproof nightly --run RUN`: the nightly workflow (compact -> reconcile
//! -> dbt marts) of one run's lake, as the Step Functions state machine in
//! `terraform/nightly.asl.json`, executed on moto server started for it
//! (runtime/src/nightly.rs). Exit 0 when the execution succeeded, 1 when it
//! failed (a diff, an INVALID run, a failed compaction or dbt build: the
//! marts are then left as they were), 2 when it could not run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::nightly::{self, Job, Moto, Report, Task};
use lossproof_runtime::profile::LakeLocation;
use lossproof_runtime::tools::Tools;

use crate::CliResult;

pub(crate) struct Args<'a> {
    pub state: &'a Path,
    pub profile: Option<&'a Path>,
    pub run: &'a str,
    /// The consumer whose lake is compacted, reconciled and read by dbt.
    pub consumer: &'a str,
    pub dbt_project: &'a Path,
    /// Where the marts live; `<state>/marts/<run>` by default.
    pub marts: Option<&'a Path>,
    /// Extra `dbt build` arguments (after the project's own).
    pub dbt_extra: &'a [String],
    pub timeout: Duration,
}

pub(crate) fn run(args: &Args<'_>) -> CliResult<bool> {
    // Run by a seed's `run nightly`: it must not outlive that run.
    lossproof_runtime::supervisor::die_with_parent();
    let (stack, endpoints) = crate::stack_cli::running(args.state, args.profile)?;
    let tools = Tools::from_env();
    let paths = Paths::resolve(args, &endpoints)?;
    let logs = args.state.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("create {}: {e}", logs.display()))?;
    let moto = Emulator::of(&stack, &tools, &logs)?;
    let execution = nightly::execution_name(args.run);
    let mut job = Job::on_emulator(moto.endpoint(), execution.clone(), args.run, args.timeout);
    job.tasks = tasks(args, &tools, &paths)?;
    println!(
        "nightly {} of run {} (lake {}): Compact -> Reconcile -> BuildMarts",
        job.names.state_machine, args.run, paths.namespace
    );
    let report = nightly::drive(
        &tools,
        &job,
        &paths.environment(),
        &logs.join("nightly.log"),
    )?;
    println!(
        "moto server after the workflow: {} MB resident",
        moto.rss_bytes() / 1_000_000
    );
    let written = paths.marts.join(format!("{execution}.json"));
    std::fs::write(
        &written,
        serde_json::to_string_pretty(&report).expect("a report serialises"),
    )
    .map_err(|e| format!("write {}: {e}", written.display()))?;
    print_report(&report, &paths.marts);
    println!("report: {}", written.display());
    match report.status.as_str() {
        "SUCCEEDED" => Ok(true),
        "FAILED" => Ok(false),
        other => Err(format!("the execution ended {other}").into()),
    }
}

/// The moto server the workflow runs on: the `aws` stack's own
/// (`lossproof up --profile aws`), or one started for this nightly alone.
enum Emulator {
    Stack {
        endpoint: String,
        process: lossproof_runtime::ProcessRecord,
    },
    Own(Moto),
}

impl Emulator {
    fn of(stack: &lossproof_runtime::Stack, tools: &Tools, logs: &Path) -> CliResult<Self> {
        if let Some((endpoint, process)) = stack.moto()? {
            let moto = Self::Stack { endpoint, process };
            println!(
                "moto server of the aws stack on {}: {} MB resident",
                moto.endpoint(),
                moto.rss_bytes() / 1_000_000
            );
            return Ok(moto);
        }
        let moto = Moto::start(tools, &logs.join("moto.log"), Duration::from_mins(1))?;
        println!(
            "moto server on 127.0.0.1:{}: ready in {:.1} s, {} MB resident",
            moto.port,
            moto.ready_in.as_secs_f64(),
            moto.rss_bytes() / 1_000_000
        );
        Ok(Self::Own(moto))
    }

    fn endpoint(&self) -> String {
        match self {
            Self::Stack { endpoint, .. } => endpoint.clone(),
            Self::Own(moto) => moto.endpoint(),
        }
    }

    fn rss_bytes(&self) -> u64 {
        match self {
            Self::Stack { process, .. } => process.group_rss_bytes(),
            Self::Own(moto) => moto.rss_bytes(),
        }
    }
}

/// Where everything the nightly touches is, as absolute paths.
struct Paths {
    state: PathBuf,
    profile: Option<PathBuf>,
    dbt_project: PathBuf,
    marts: PathBuf,
    lake: LakeLocation,
    /// The consumer's lake namespace for the run.
    namespace: String,
}

impl Paths {
    fn resolve(args: &Args<'_>, endpoints: &lossproof_runtime::Endpoints) -> CliResult<Self> {
        let dbt_project = absolute(args.dbt_project)?;
        if !dbt_project.join("dbt_project.yml").is_file() {
            return Err(format!(
                "{} is not a dbt project (no dbt_project.yml): pass --dbt-project DIR (the checkout's dbt/)",
                args.dbt_project.display()
            )
            .into());
        }
        let marts = match args.marts {
            Some(dir) => dir.to_owned(),
            None => nightly::marts_dir(args.state, args.run),
        };
        std::fs::create_dir_all(&marts).map_err(|e| format!("create {}: {e}", marts.display()))?;
        let lake = match endpoints.lake_location() {
            LakeLocation::Sql {
                catalog_db,
                warehouse,
            } => LakeLocation::Sql {
                catalog_db: absolute(&catalog_db)?,
                warehouse: absolute(&warehouse)?,
            },
            glue @ LakeLocation::Glue(_) => glue,
        };
        let names = CaptureNames::for_run(args.run);
        Ok(Self {
            state: absolute(args.state)?,
            profile: args.profile.map(absolute).transpose()?,
            dbt_project,
            marts: absolute(&marts)?,
            lake,
            namespace: lossproof_consumers::namespace(args.consumer, &names),
        })
    }

    /// The driver's environment, which its tasks inherit: where dbt finds
    /// the lake and puts the marts (dbt/profiles.yml reads these).
    fn environment(&self) -> Vec<(String, String)> {
        let lake = match &self.lake {
            LakeLocation::Sql {
                catalog_db,
                warehouse,
            } => vec![
                (
                    "LOSSPROOF_CATALOG_URI",
                    format!("sqlite:///{}", catalog_db.display()),
                ),
                (
                    "LOSSPROOF_WAREHOUSE",
                    format!("file://{}", warehouse.display()),
                ),
            ],
            LakeLocation::Glue(glue) => vec![
                (
                    "LOSSPROOF_AWS_ENDPOINT",
                    glue.endpoint.clone().unwrap_or_default(),
                ),
                ("LOSSPROOF_AWS_REGION", glue.region.clone()),
                ("LOSSPROOF_WAREHOUSE", glue.warehouse.clone()),
            ],
        };
        lake.into_iter()
            .chain([
                ("LOSSPROOF_MARTS_DIR", path(&self.marts)),
                ("LOSSPROOF_NAMESPACE", self.namespace.clone()),
                ("DBT_TARGET_PATH", path(&self.marts.join("target"))),
                ("DBT_LOG_PATH", path(&self.marts.join("logs"))),
                // No telemetry calls from dbt (no network here, none wanted).
                ("DBT_SEND_ANONYMOUS_USAGE_STATS", "false".to_owned()),
                ("DO_NOT_TRACK", "1".to_owned()),
            ])
            .map(|(k, v)| (k.to_owned(), v))
            .chain(nightly::emulator_credentials())
            .collect()
    }
}

/// The command each task of the state machine runs, and what its exit
/// statuses mean.
fn tasks(args: &Args<'_>, tools: &Tools, paths: &Paths) -> CliResult<BTreeMap<String, Task>> {
    let lossproof =
        std::env::current_exe().map_err(|e| format!("where is this lossproof binary: {e}"))?;
    let mut stack = vec!["--state".to_owned(), path(&paths.state)];
    if let Some(profile) = &paths.profile {
        stack.extend(["--profile".to_owned(), path(profile)]);
    }
    let lossproof_command = |verb: &str, extra: &[&str]| -> Vec<String> {
        [
            path(&lossproof),
            verb.to_owned(),
            "--run".to_owned(),
            args.run.to_owned(),
        ]
        .into_iter()
        .chain(["--consumer".to_owned(), args.consumer.to_owned()])
        .chain(stack.iter().cloned())
        .chain(extra.iter().map(|s| (*s).to_owned()))
        .collect()
    };
    let dbt_build: Vec<String> = [
        path(&tools.nightly_venv().join("bin/dbt")),
        "build".to_owned(),
        "--project-dir".to_owned(),
        path(&paths.dbt_project),
        "--profiles-dir".to_owned(),
        path(&paths.dbt_project),
        // dbt/profiles.yml: `local` reads the SQL catalog, `aws` Glue on S3.
        "--target".to_owned(),
        match paths.lake {
            LakeLocation::Sql { .. } => "local",
            LakeLocation::Glue(_) => "aws",
        }
        .to_owned(),
    ]
    .into_iter()
    .chain(args.dbt_extra.iter().cloned())
    .collect();
    Ok(BTreeMap::from([
        // exit 1: a writer won the race (nothing changed): transient.
        (
            "compact".to_owned(),
            Task::new(
                "Compact",
                lossproof_command("compact", &[]),
                &[(1, "Transient")],
            ),
        ),
        // exit 1: diff rows; 2: INVALID (not drained, a component down).
        (
            "reconcile".to_owned(),
            Task::new(
                "Reconcile",
                lossproof_command("reconcile", &["--wait-s", "120"]),
                &[(1, "Diff"), (2, "Invalid")],
            ),
        ),
        (
            "build_marts".to_owned(),
            Task::new(
                "BuildMarts",
                dbt_build,
                &[(1, "MartsFailed"), (2, "MartsFailed")],
            ),
        ),
    ]))
}

fn print_report(report: &Report, marts: &Path) {
    for attempt in &report.attempts {
        let outcome = attempt.error.as_deref().unwrap_or("ok");
        println!(
            "  {:<11} {:<12} {:>6.1} s",
            attempt.state, outcome, attempt.seconds
        );
    }
    if report.status == "SUCCEEDED" {
        println!(
            "SUCCEEDED: the lake reconciled; marts built in {}",
            marts.display()
        );
        return;
    }
    println!(
        "{} at {}: {} — the marts were not rebuilt",
        report.status,
        report.failed_state.as_deref().unwrap_or("?"),
        report.error.as_deref().unwrap_or("no error given")
    );
    for alert in &report.alerts {
        println!(
            "alert (SQS): run {}, error {}",
            alert["run"].as_str().unwrap_or("?"),
            alert["error"]["Error"].as_str().unwrap_or("?")
        );
    }
    if let Some(cause) = &report.cause {
        println!("cause:\n{}", cause.trim_end());
    }
}

fn absolute(path: &Path) -> CliResult<PathBuf> {
    std::path::absolute(path).map_err(|e| format!("resolve {}: {e}", path.display()).into())
}

fn path(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
