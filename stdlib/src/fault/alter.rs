//! `alter table T widen C` / `add column C` / `drop column C`: schema changes
//! on the source while the workload runs.

use lossproof_lang::plan::PlannedAction;
use lossproof_runtime::reconcile::source::quote_ident;

use super::{Ctx, Fired, name_arg};
use crate::error::Error;

async fn execute(ctx: &Ctx<'_>, sql: String) -> Fired {
    ctx.source
        .batch_execute(&sql)
        .await
        .map(|()| sql.clone())
        .map_err(Error::pg(sql))
}

/// `ALTER TABLE … ALTER COLUMN … TYPE` the next wider type the vocabulary
/// names (`numeric(10,2)` -> `numeric(14,2)`, `integer` -> `bigint`).
pub async fn widen(ctx: &Ctx<'_>, action: &PlannedAction) -> Fired {
    let table = name_arg(action, "table")?;
    let column = name_arg(action, "column")?;
    let wider = ctx
        .workload
        .tables
        .iter()
        .find(|t| t.name == table)
        .and_then(|t| t.columns.iter().find(|c| c.name == column))
        .and_then(|c| c.widens_to)
        .ok_or_else(|| Error::Unsupported(format!("{table}.{column} has no wider type")))?;
    execute(
        ctx,
        format!(
            "ALTER TABLE {} ALTER COLUMN {} TYPE {wider}",
            quote_ident(table),
            quote_ident(column)
        ),
    )
    .await
}

/// `ALTER TABLE … ADD COLUMN … text`.
pub async fn add_column(ctx: &Ctx<'_>, action: &PlannedAction) -> Fired {
    let table = name_arg(action, "table")?;
    let column = name_arg(action, "column")?;
    execute(
        ctx,
        format!(
            "ALTER TABLE {} ADD COLUMN {} text",
            quote_ident(table),
            quote_ident(column)
        ),
    )
    .await
}

/// `ALTER TABLE … DROP COLUMN …`.
pub async fn drop_column(ctx: &Ctx<'_>, action: &PlannedAction) -> Fired {
    let table = name_arg(action, "table")?;
    let column = name_arg(action, "column")?;
    execute(
        ctx,
        format!(
            "ALTER TABLE {} DROP COLUMN {}",
            quote_ident(table),
            quote_ident(column)
        ),
    )
    .await
}
