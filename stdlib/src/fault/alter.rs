//! `alter table T widen C` / `add column C` / `drop column C` / `rename
//! column C to D`: schema changes
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
        .and_then(|c| c.widens_to.clone())
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

/// `ALTER TABLE … RENAME COLUMN … TO …`. The workload writes rows by
/// position, but updates `orders`' status, amount, quantity, note and
/// updated_at by name: renaming one of those makes those updates fail
/// (counted in the seed's `workload_failed`).
pub async fn rename_column(ctx: &Ctx<'_>, action: &PlannedAction) -> Fired {
    let table = name_arg(action, "table")?;
    let column = name_arg(action, "column")?;
    let new_name = name_arg(action, "new_name")?;
    execute(
        ctx,
        format!(
            "ALTER TABLE {} RENAME COLUMN {} TO {}",
            quote_ident(table),
            quote_ident(column),
            quote_ident(new_name)
        ),
    )
    .await
}
