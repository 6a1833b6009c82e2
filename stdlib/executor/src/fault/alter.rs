//! `alter table T widen C` / `add column C` / `drop column C` / `rename
//! column C to D`: schema changes
//! on the source while the workload runs.

use lossproof_runtime::reconcile::source::quote_ident;

use super::{Fired, Strike, name_arg};
use crate::error::Error;
use crate::seed::Seed;

async fn execute(seed: &Seed<'_>, sql: String) -> Fired {
    seed.source
        .batch_execute(&sql)
        .await
        .map(|()| sql.clone())
        .map_err(Error::pg(sql))
}

/// `ALTER TABLE … ALTER COLUMN … TYPE` the next wider type the vocabulary
/// names (`numeric(10,2)` -> `numeric(14,2)`, `integer` -> `bigint`), from
/// the column's type on the source now: a column renamed, added or widened
/// earlier in the scenario is widened from what it has become.
pub(super) async fn widen(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let table = name_arg(strike.action, "table")?;
    let column = name_arg(strike.action, "column")?;
    let sql = "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
               WHERE attrelid = $1::text::regclass AND attname = $2 AND NOT attisdropped";
    let now: String = seed
        .source
        .query_opt(sql, &[&quote_ident(table), &column])
        .await
        .map_err(Error::pg(format!("the type of {table}.{column}")))?
        .ok_or_else(|| Error::NotFired(format!("{table} has no column {column} now")))?
        .get(0);
    let wider = lossproof_lang::ColumnType::parse(&now)
        .ok()
        .and_then(|t| t.widens_to())
        .ok_or_else(|| Error::Unsupported(format!("{table}.{column} ({now}) has no wider type")))?;
    execute(
        seed,
        format!(
            "ALTER TABLE {} ALTER COLUMN {} TYPE {wider}",
            quote_ident(table),
            quote_ident(column)
        ),
    )
    .await
}

/// `ALTER TABLE … ADD COLUMN … text`.
pub(super) async fn add_column(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let table = name_arg(strike.action, "table")?;
    let column = name_arg(strike.action, "column")?;
    execute(
        seed,
        format!(
            "ALTER TABLE {} ADD COLUMN {} text",
            quote_ident(table),
            quote_ident(column)
        ),
    )
    .await
}

/// `ALTER TABLE … DROP COLUMN …`.
pub(super) async fn drop_column(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let table = name_arg(strike.action, "table")?;
    let column = name_arg(strike.action, "column")?;
    execute(
        seed,
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
pub(super) async fn rename_column(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let table = name_arg(strike.action, "table")?;
    let column = name_arg(strike.action, "column")?;
    let new_name = name_arg(strike.action, "new_name")?;
    execute(
        seed,
        format!(
            "ALTER TABLE {} RENAME COLUMN {} TO {}",
            quote_ident(table),
            quote_ident(column),
            quote_ident(new_name)
        ),
    )
    .await
}
