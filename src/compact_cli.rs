//! `lossproof compact --run RUN --table T`: compact a run's lake tables by
//! hand, with the same code `compact table T` runs in a scenario.

use std::path::Path;

use lossproof_runtime::Lake;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::lake::{Compacted, ident};

use crate::CliResult;

/// Compact `tables` in each of `consumers`' lakes of run `run`; exit 1 if a
/// compaction lost the race to a writer (nothing changed; run it again).
pub fn compact(
    state: &Path,
    run: &str,
    tables: &[String],
    consumers: &[String],
) -> CliResult<bool> {
    let runtime = crate::stack_cli::runtime()?;
    runtime.block_on(async {
        let stack = lossproof_runtime::Stack::open(state)?;
        let lake = Lake::open(stack.state().root()).await?;
        let names = CaptureNames::for_run(run);
        let mut all_won = true;
        for consumer in consumers {
            let namespace = lossproof_stdlib::consumer::namespace(consumer, &names);
            for table in tables {
                let outcome = lake.compact(&ident(&namespace, table)).await?;
                all_won &= !matches!(outcome, Compacted::Lost { .. });
                println!("{namespace}.{}", outcome.describe(table));
            }
        }
        Ok(all_won)
    })
}
