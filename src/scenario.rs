//! Loading a scenario file through the one parse+analyse path every command
//! shares (check, explain, fmt, lsp, run).

use std::io::IsTerminal;
use std::path::Path;

use crate::CliResult;
use lossproof_lang::render::{Style, render};
use lossproof_lang::{Analysis, Analyzer, FsLoader};
use lossproof_stdlib::Stdlib;

/// Read a scenario file, with an error that names it.
pub fn read(path: &Path) -> CliResult<String> {
    std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read `{}`: {}",
            path.display(),
            e.to_string().to_lowercase()
        )
        .into()
    })
}

/// Analyse the text of the scenario file at `path` (its includes resolve
/// relative to it).
pub fn analyze_text(path: &Path, text: &str) -> Analysis {
    Analyzer::new(&Stdlib, &FsLoader).analyze(&path.display().to_string(), text)
}

/// Read and analyse a scenario file, assertions planned against the
/// reconciler's tables.
pub fn analyze(path: &Path) -> CliResult<Analysis> {
    let mut analysis = analyze_text(path, &read(path)?);
    plan_assertions(&mut analysis);
    Ok(analysis)
}

/// Plan every assertion's SQL (without running it) against empty tables
/// shaped like the reconciler's (`diff`, `summary`, `source_rows`,
/// `lake_rows`, `faults`, `races`, `dead_letters`): a name DataFusion cannot resolve is an error at
/// the assertion's SQL, found before any stack starts.
pub fn plan_assertions(analysis: &mut Analysis) {
    let Some(plan) = &analysis.plan else { return };
    if plan.assertions.is_empty() {
        return;
    }
    let empty = lossproof_runtime::reconcile::Reconciliation::default();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    let Ok(dead_letters) =
        runtime.block_on(lossproof_stdlib::consumer::correct::state::dead_letters_batch(None, &[]))
    else {
        return;
    };
    let tables = lossproof_stdlib::run::assertion_tables(
        &[],
        &std::collections::BTreeMap::new(),
        dead_letters,
    );
    let Ok(ctx) = empty.session(&tables) else {
        return;
    };
    let mut found = Vec::new();
    for assertion in &plan.assertions {
        let options = datafusion::execution::context::SQLOptions::new()
            .with_allow_ddl(false)
            .with_allow_dml(false)
            .with_allow_statements(false);
        if let Err(e) = runtime.block_on(ctx.sql_with_options(&assertion.sql, options)) {
            let message = e.to_string();
            let message = message.lines().next().unwrap_or_default();
            found.push(
                lossproof_lang::Code::SqlDoesNotPlan
                    .at(assertion.sql_span, format!("SQL does not plan: {message}"))
                    .label("in this query")
                    .help(format!("the tables are {}", table_list(&runtime, &ctx))),
            );
        }
    }
    if !found.is_empty() {
        analysis.diagnostics.extend(found);
        analysis.plan = None;
    }
}

/// `diff(table, key, …), faults(…), …`: every table assertions see, with
/// its columns, read from the session itself (so the help never falls
/// behind a new table), in alphabetical order.
fn table_list(
    runtime: &tokio::runtime::Runtime,
    ctx: &datafusion::execution::context::SessionContext,
) -> String {
    let Some(schema) = ctx
        .catalog("datafusion")
        .and_then(|catalog| catalog.schema("public"))
    else {
        return String::new();
    };
    let mut names = schema.table_names();
    names.sort();
    names
        .iter()
        .filter_map(|name| {
            let table = runtime.block_on(schema.table(name)).ok()??;
            let columns: Vec<String> = table
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            Some(format!("{name}({})", columns.join(", ")))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Print an analysis' diagnostics to stderr, in colour on a terminal.
pub fn print_diagnostics(analysis: &Analysis) {
    if analysis.diagnostics.is_empty() {
        return;
    }
    let stderr = std::io::stderr();
    let color = stderr.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let width = if color { 120 } else { Style::PLAIN.width };
    eprint!(
        "{}",
        render(
            &analysis.sources,
            &analysis.diagnostics,
            Style { color, width }
        )
    );
}
