//! `lossproof compact --run RUN [--table T]…`: compact a run's lake tables
//! by hand, with the same code `compact table T` runs in a scenario; with
//! `--every-ms`, the compaction job a scenario's `compactor` target is (the
//! executor starts it and kills, stops or pauses it like a consumer).

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use lossproof_executor::fault::maintenance::{CompactionEvent, Event};
use lossproof_runtime::Lake;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::lake::{Compacted, ident};

use crate::CliResult;

/// What to compact, and how often.
pub(crate) struct Job<'a> {
    pub state: &'a Path,
    /// An external profile instead of the local stack in `state`.
    pub profile: Option<&'a Path>,
    pub run: &'a str,
    /// Empty: every table of each lake.
    pub tables: &'a [String],
    pub consumers: &'a [String],
    /// `None`: one round, then exit.
    pub every: Option<Duration>,
    /// JSON lines, one per compaction started and one per outcome.
    pub record: Option<&'a Path>,
}

/// Compact the job's tables in each of its consumers' lakes, once or every
/// `job.every` until signalled; exit 1 if a compaction of the one round
/// lost the race to a writer (nothing changed; run it again).
pub(crate) fn compact(job: &Job<'_>) -> CliResult<bool> {
    // A seed's child: it must not outlive the run that started it.
    lossproof_runtime::supervisor::die_with_parent();
    let runtime = crate::stack_cli::runtime()?;
    runtime.block_on(async {
        let (_stack, endpoints) = crate::stack_cli::running(job.state, job.profile)?;
        let lake = endpoints.open_lake().await?;
        let names = CaptureNames::for_run(job.run);
        let mut record = match job.record {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("open {}: {e}", path.display()))?,
            ),
            None => None,
        };
        loop {
            let all_won = round(job, &lake, &names, record.as_mut()).await?;
            match job.every {
                None => return Ok(all_won),
                Some(every) => tokio::time::sleep(every).await,
            }
        }
    })
}

/// One compaction of every table of the job, lake after lake. In a
/// repeating job a failed compaction is logged and recorded, and the job
/// goes on (a maintenance job does not die of one bad table); a single
/// round fails with it.
async fn round(
    job: &Job<'_>,
    lake: &Lake,
    names: &CaptureNames,
    mut record: Option<&mut std::fs::File>,
) -> CliResult<bool> {
    let mut all_won = true;
    for consumer in job.consumers {
        let namespace = lossproof_consumers::namespace(consumer, names);
        let tables = if job.tables.is_empty() {
            match lake.table_names(&namespace).await {
                Ok(tables) => tables,
                Err(e) if job.every.is_some() => {
                    println!("{namespace}: could not list its tables: {e}");
                    continue;
                }
                Err(e) => return Err(format!("list the tables of {namespace}: {e}").into()),
            }
        } else {
            job.tables.to_vec()
        };
        for table in tables {
            let mut note = |event| {
                if let Some(file) = record.as_deref_mut() {
                    let line = CompactionEvent {
                        consumer: consumer.clone(),
                        table: table.clone(),
                        event,
                    };
                    // A record line is written whole or not at all (one
                    // write of a short line to a file opened for append).
                    let text = format!("{}\n", serde_json::to_string(&line).expect("serialises"));
                    if let Err(e) = file.write_all(text.as_bytes()) {
                        eprintln!("compact: could not record: {e}");
                    }
                }
            };
            note(Event::Start);
            match lake.compact(&ident(&namespace, &table)).await {
                Ok(outcome) => {
                    note(match outcome {
                        Compacted::Won { .. } => Event::Won,
                        Compacted::Lost { .. } => Event::Lost,
                        Compacted::NothingToDo { .. } => Event::Idle,
                    });
                    all_won &= !matches!(outcome, Compacted::Lost { .. });
                    println!("{namespace}.{}", outcome.describe(&table));
                }
                Err(e) if job.every.is_some() => {
                    note(Event::Failed);
                    println!("{namespace}.{table}: failed: {e}");
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    let _ = std::io::stdout().flush();
    Ok(all_won)
}
