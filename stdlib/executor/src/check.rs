//! A scenario's whole check, the one `lossproof check`, `lossproof run` and
//! the language server run: the vocabulary's ([`lossproof_vocabulary::check`]),
//! then every assertion's SQL planned, not run, against the tables
//! assertions see, empty (`lossproof_runtime::reconcile::tables`): a name
//! DataFusion cannot resolve is an error at the assertion's SQL, found
//! before any stack starts.

use lossproof_lang::{Analysis, Code, Loader};
use lossproof_runtime::reconcile::{self, tables};
use lossproof_vocabulary::Place;

/// Check the scenario `text` (named `name`, its includes read through
/// `loader`) for a run at `place`. A plan comes back only when there is no
/// diagnostic. Needs no async runtime of the caller's: call it from a
/// thread that is not running one.
#[must_use]
pub fn check(name: &str, text: &str, loader: &dyn Loader, place: Place<'_>) -> Analysis {
    let mut analysis = lossproof_vocabulary::check(name, text, loader, place);
    plan_assertions(&mut analysis);
    analysis
}

/// Plan every assertion's SQL (without running it).
fn plan_assertions(analysis: &mut Analysis) {
    let Some(plan) = &analysis.plan else { return };
    if plan.assertions.is_empty() {
        return;
    }
    let (Ok(runtime), Ok(ctx)) = (
        tokio::runtime::Builder::new_current_thread().build(),
        tables::session(Vec::new()),
    ) else {
        return;
    };
    let mut found = Vec::new();
    for assertion in &plan.assertions {
        if let Err(e) = runtime.block_on(reconcile::plan_sql(&ctx, &assertion.sql)) {
            let message = e.to_string();
            let message = message.lines().next().unwrap_or_default();
            found.push(
                Code::SqlDoesNotPlan
                    .at(assertion.sql_span, format!("SQL does not plan: {message}"))
                    .label("in this query")
                    .help(format!("the tables are {}", table_list())),
            );
        }
    }
    if !found.is_empty() {
        analysis.diagnostics.extend(found);
        analysis.plan = None;
    }
}

/// `dead_letters(consumer, …), diff(table, …), …`: every table assertions
/// see, with its columns, in alphabetical order.
fn table_list() -> String {
    let mut all: Vec<String> = tables::Table::ALL
        .iter()
        .map(|t| {
            let schema = t.schema();
            let columns: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            format!("{}({})", t.name(), columns.join(", "))
        })
        .collect();
    all.sort();
    all.join(", ")
}
