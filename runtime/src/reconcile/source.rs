//! Reading the source: each table's live schema from `PostgreSQL`'s catalog,
//! its rows with one streaming query, and the history of every version each
//! key had.
//!
//! The history is `lossproof_history (tbl, row jsonb)`, filled by an
//! `AFTER INSERT OR UPDATE` row trigger on every captured table
//! ([`history_ddl`], installed with the workload's tables). It is written by
//! the source database itself, in the writing transaction, so it does not
//! depend on Debezium or any consumer: a version the pipeline lost is still
//! in it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use futures_util::TryStreamExt as _;

use super::canonical::{self, Keyed, Kind};
use super::diff::History;
use super::error::Error;
use super::merge::KeyOrder;

/// A source table as the reconciler sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceTable {
    pub name: String,
    /// Primary-key columns, in key order.
    pub key: Vec<String>,
    /// Every column with its kind, in table order.
    pub columns: Vec<(String, Kind)>,
    /// A predicate both sides are read under (`id BETWEEN 1 AND 1000`):
    /// SQL both PostgreSQL and DataFusion understand. `None`: every row.
    pub filter: Option<String>,
    /// One bucket of the key space (a distributed comparison's share):
    /// both sides read only these keys. `None`: every key.
    pub bucket: Option<KeyRange>,
    /// Each column's SQL type as the source printed it when the table was
    /// described (`format_type`), by column name; empty when the table was
    /// not described from the source. What reads a version of a column
    /// dropped since back from the history ([`versions`]).
    pub types: std::collections::BTreeMap<String, String>,
}

/// Whose SQL a predicate is written in: the source's or the lake's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    DataFusion,
}

/// The keys whose first column is in `[from, to)`, compared as the merge
/// orders them ([`Kind::order_expr`]: integers by value, text by bytes).
/// `None` bounds are open; `nulls` also takes a NULL key (a lake row
/// without one), so that buckets cover every row exactly once.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeyRange {
    pub column: String,
    pub from: Option<String>,
    pub to: Option<String>,
    pub nulls: bool,
}

impl KeyRange {
    /// The first key column of `table`, if its kind can be split into
    /// ranges both sides compare alike (integers, text); an error names it
    /// otherwise.
    pub fn column_of(table: &SourceTable) -> Result<(String, Kind), Error> {
        let (_, name, kind) = table.key_columns()?[0];
        match kind {
            Kind::Int | Kind::Text => Ok((name.to_owned(), kind)),
            other => Err(Error::Judge(format!(
                "{}.{name} is the first primary-key column and its type ({other:?}) cannot be split into key ranges: buckets need an integer or text column",
                table.name
            ))),
        }
    }

    /// The predicate, in `dialect`'s SQL, on a table aliased `alias`.
    #[must_use]
    pub fn predicate(&self, kind: Kind, dialect: Dialect, alias: &str) -> String {
        let column = format!("{alias}.{}", quote_ident(&self.column));
        let expr = match dialect {
            Dialect::Postgres => kind.order_expr(&column),
            Dialect::DataFusion => column.clone(),
        };
        let literal = |v: &str| match kind {
            Kind::Int => v.to_owned(),
            _ => format!("'{}'", v.replace('\'', "''")),
        };
        let mut terms = Vec::new();
        if let Some(from) = &self.from {
            terms.push(format!("{expr} >= {}", literal(from)));
        }
        if let Some(to) = &self.to {
            terms.push(format!("{expr} < {}", literal(to)));
        }
        let range = if terms.is_empty() {
            "TRUE".to_owned()
        } else {
            terms.join(" AND ")
        };
        if self.nulls {
            format!("({range} OR {column} IS NULL)")
        } else {
            format!("({range})")
        }
    }
}

impl SourceTable {
    /// Whether only some rows are compared (a filter or a bucket).
    #[must_use]
    pub fn narrowed(&self) -> bool {
        self.filter.is_some() || self.bucket.is_some()
    }

    /// `WHERE (filter) AND (bucket)` in `dialect`'s SQL on a table aliased
    /// `alias`, or nothing.
    pub fn where_clause(&self, dialect: Dialect, alias: &str) -> Result<String, Error> {
        let mut terms = Vec::new();
        if let Some(filter) = &self.filter {
            terms.push(format!("({filter})"));
        }
        if let Some(bucket) = &self.bucket {
            let (_, kind) = KeyRange::column_of(self)?;
            terms.push(bucket.predicate(kind, dialect, alias));
        }
        Ok(if terms.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", terms.join(" AND "))
        })
    }

    /// Compare without `column` (a column the lake does not carry, or
    /// carries differently on purpose); a key column cannot be left out.
    pub fn ignore(&mut self, column: &str) -> Result<(), Error> {
        if self.key.iter().any(|k| k == column) {
            return Err(Error::Judge(format!(
                "{}.{column} is a primary-key column: rows are matched by it",
                self.name
            )));
        }
        let before = self.columns.len();
        self.columns.retain(|(c, _)| c != column);
        if self.columns.len() == before {
            return Err(Error::Judge(format!(
                "{} has no column {column}",
                self.name
            )));
        }
        Ok(())
    }

    /// Each primary-key column, in key order: its position among the
    /// columns, name and kind.
    pub fn key_columns(&self) -> Result<Vec<(usize, &str, Kind)>, Error> {
        self.key
            .iter()
            .map(|k| {
                self.columns
                    .iter()
                    .position(|(c, _)| c == k)
                    .map(|i| (i, k.as_str(), self.columns[i].1))
                    .ok_or_else(|| Error::KeyColumnMissing {
                        table: self.name.clone(),
                        column: k.clone(),
                    })
            })
            .collect()
    }
}

/// The history table and its trigger on each of `tables` (dropped and
/// created afresh: the workload's DDL resets its tables the same way).
///
/// One row per row version, written by the transaction that made it: its
/// transaction id (`xid`, 32 bits, as logical decoding names it), `w` for
/// a row written (inserted or updated: the new row) or `d` for a row
/// deleted (the old row: its key), and `seq`, the order of the writes
/// within the transaction. With the commit order ([`commit_order`]) this
/// is the source's state after every transaction ([`states`]).
#[must_use]
pub fn history_ddl(tables: &[&str]) -> String {
    let mut sql = String::from(
        "DROP TABLE IF EXISTS lossproof_history;\n\
         CREATE TABLE lossproof_history (tbl text NOT NULL, row jsonb NOT NULL, \
         xid bigint NOT NULL DEFAULT pg_current_xact_id()::xid::text::bigint, \
         op \"char\" NOT NULL DEFAULT 'w', seq bigserial);\n\
         CREATE OR REPLACE FUNCTION lossproof_record_version() RETURNS trigger LANGUAGE plpgsql AS $$\n\
         BEGIN IF TG_OP = 'DELETE' THEN \
         INSERT INTO lossproof_history (tbl, row, op) VALUES (TG_TABLE_NAME, to_jsonb(OLD), 'd'); \
         ELSE INSERT INTO lossproof_history (tbl, row) VALUES (TG_TABLE_NAME, to_jsonb(NEW)); END IF; \
         RETURN NULL; END $$;\n",
    );
    for table in tables {
        let _ = writeln!(
            sql,
            "CREATE TRIGGER lossproof_history AFTER INSERT OR UPDATE OR DELETE ON {table} \
             FOR EACH ROW EXECUTE FUNCTION lossproof_record_version();"
        );
    }
    sql
}

/// Create `slot`, a logical replication slot of lossproof's own
/// (`test_decoding`), from which [`commit_order`] reads the order in which
/// the source committed its transactions. Created before the transactions
/// to follow (a transaction committed before it is at position 0).
///
/// # Errors
/// When the slot cannot be created.
pub async fn start_commit_order(client: &tokio_postgres::Client, slot: &str) -> Result<(), Error> {
    client
        .execute(
            "SELECT pg_create_logical_replication_slot($1, 'test_decoding')",
            &[&slot],
        )
        .await
        .map_err(Error::source_query("create lossproof's commit-order slot"))?;
    Ok(())
}

/// One transaction of [`commit_order`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commit {
    pub xid: i64,
    /// The LSN of its commit record.
    pub lsn: u64,
    /// When it committed: ms since the Unix epoch, by the source's clock.
    pub at_ms: i64,
}

/// The transactions committed since [`start_commit_order`], in commit
/// order, as the source's own logical decoding sees them (the WAL's
/// order, which is the order readers of the source saw commits in). Reads
/// the slot to its end (what it has read is released: read it once).
///
/// # Errors
/// When the slot cannot be read.
pub async fn commit_order(
    client: &tokio_postgres::Client,
    slot: &str,
) -> Result<Vec<Commit>, Error> {
    // test_decoding's commit line with `include-timestamp`:
    // `COMMIT 1234 (at 2026-12-07 06:30:00.123456+00)`.
    let rows = client
        .query(
            "SELECT xid::text::bigint, (lsn - '0/0'::pg_lsn)::bigint, \
             (extract(epoch FROM substring(data FROM '\\(at (.+)\\)$')::timestamptz) * 1000)::bigint \
             FROM pg_logical_slot_get_changes($1, NULL, NULL, 'skip-empty-xacts', '1', \
             'include-timestamp', '1') \
             WHERE starts_with(data, 'COMMIT')",
            &[&slot],
        )
        .await
        .map_err(Error::source_query("read lossproof's commit-order slot"))?;
    Ok(rows
        .iter()
        .map(|r| Commit {
            xid: r.get(0),
            lsn: u64::try_from(r.get::<_, i64>(1)).unwrap_or(0),
            at_ms: r.get::<_, Option<i64>>(2).unwrap_or(0),
        })
        .collect())
}

/// The source's state after every transaction of `order` (ids in commit
/// order, [`commit_order`]), for `tables` (table `i` of the states is
/// `tables[i]`), from `lossproof_history`: every row version with the
/// transaction that wrote it. A version written by a transaction not in
/// `order` (committed before it started) is at position 0; positions are
/// the transactions of `order` that wrote a version of these tables.
/// The changes in `uncaptured` ((table, key, transaction): capture never
/// delivered them, [`super::capture::Capture::undelivered`]) are left
/// out: the states are the source's as the pipeline could have seen it.
/// `tables` have the names their columns had before `renames`: every
/// version is read under those names ([`Rename`]).
///
/// # Errors
/// When the history cannot be read.
#[allow(clippy::implicit_hasher)] // the reconciler's own set
pub async fn states(
    client: &tokio_postgres::Client,
    tables: &[SourceTable],
    renames: &[Rename],
    order: &[i64],
    uncaptured: &super::capture::Undelivered,
) -> Result<super::states::SourceStates, Error> {
    use super::states::{Pos, SourceStates, row_hash};
    let last_seq: Option<i64> = client
        .query_one("SELECT max(seq) FROM lossproof_history", &[])
        .await
        .map_err(Error::source_query("read lossproof_history"))?
        .get(0);
    let last_seq = last_seq.unwrap_or(0);
    // Every version of every table, each as (transaction, key, row's hash;
    // `None`: deleted) in the order written: one read of the history.
    let mut versions: Vec<Vec<(i64, String, Option<u128>)>> = Vec::with_capacity(tables.len());
    let mut written: HashSet<i64> = HashSet::new();
    for table in tables {
        let mut table_versions =
            self::versions(client, table, renames, Some(last_seq), |row| row_hash(&row)).await?;
        if !uncaptured.is_empty() {
            table_versions.retain(|(xid, key, _)| {
                !uncaptured.contains(&(table.name.clone(), key.clone(), *xid))
            });
        }
        written.extend(table_versions.iter().map(|(xid, _, _)| *xid));
        versions.push(table_versions);
    }
    let order: Vec<i64> = order
        .iter()
        .copied()
        .filter(|x| written.contains(x))
        .collect();
    let position: HashMap<i64, Pos> = order
        .iter()
        .enumerate()
        .map(|(i, x)| (*x, Pos::try_from(i + 1).unwrap_or(Pos::MAX)))
        .collect();
    let mut states = SourceStates::new(order);
    for (n, mut table_versions) in versions.into_iter().enumerate() {
        // Commit order first, then the order of writes within a transaction.
        let mut at: Vec<(Pos, usize)> = table_versions
            .iter()
            .enumerate()
            .map(|(i, (xid, _, _))| (position.get(xid).copied().unwrap_or(0), i))
            .collect();
        at.sort_unstable();
        for (pos, i) in at {
            let (_, key, row) = std::mem::take(&mut table_versions[i]);
            states.version(n, key, pos, row);
        }
    }
    Ok(states)
}

/// Every version of `table` in `lossproof_history` (up to `last_seq`, if
/// given), in the order written: (transaction, canonical key, `row` of the
/// canonical row; `None` when the change deleted the key). `table` has
/// the names its columns had before `renames` ([`Rename`]).
///
/// # Errors
/// When the history cannot be read, or does not read back as written.
pub async fn versions<T>(
    client: &tokio_postgres::Client,
    table: &SourceTable,
    renames: &[Rename],
    last_seq: Option<i64>,
    mut row: impl FnMut(String) -> T,
) -> Result<Vec<(i64, String, Option<T>)>, Error> {
    let last_seq = last_seq.unwrap_or(i64::MAX);
    let changes = client
        .query(
            "SELECT xid, op = 'd' FROM lossproof_history WHERE tbl = $1 AND seq <= $2 ORDER BY seq",
            &[&table.name, &last_seq],
        )
        .await
        .map_err(Error::source_query("read lossproof_history"))?;
    let present: HashSet<String> = client
        .query(
            "SELECT attname::text FROM pg_attribute \
             WHERE attrelid = $1::text::regclass AND attnum > 0 AND NOT attisdropped",
            &[&table.name],
        )
        .await
        .map_err(Error::source_query(format!(
            "the columns of {}",
            table.name
        )))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let from = format!(
        "{} AND h.seq <= {last_seq}) AS h ORDER BY lossproof_seq",
        history_from(table, renames, Some(&present))?
    );
    let mut rows: Vec<(String, T)> = Vec::with_capacity(changes.len());
    read(client, table, &from, |key, canonical| {
        rows.push((key, row(canonical)));
    })
    .await?;
    if rows.len() != changes.len() {
        return Err(Error::History(format!(
            "lossproof_history: {} rows of {} read with their transactions, {} as rows",
            changes.len(),
            table.name,
            rows.len()
        )));
    }
    Ok(changes
        .iter()
        .zip(rows)
        .map(|(c, (key, row))| {
            let (xid, deleted): (i64, bool) = (c.get(0), c.get(1));
            (xid, key, (!deleted).then_some(row))
        })
        .collect())
}

/// A column renamed on the source during a seed (`ALTER TABLE … RENAME
/// COLUMN`): `table`'s column `from` is `to` from then on. The history
/// trigger stores each version under the names the table had then
/// (`to_jsonb(NEW)`); [`states`] reads every version under the names the
/// checked tables had when the seed began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    pub table: String,
    pub from: String,
    pub to: String,
}

/// `FROM (SELECT <each column of table>, lossproof_seq FROM lossproof_history
/// … WHERE h.tbl = '<table>'` (unclosed: the caller adds conditions, then
/// `) AS h`): each version back as a row of the table. `table` has the
/// names its columns had before `renames` (in the order they were made);
/// a version stored under any later name is read back under the first.
/// A column not among the table's `present` columns (dropped since
/// `table` was described) is read with the type it had then
/// (`table.types`): its value in the versions written before the drop,
/// NULL in those after. `present`: `None` when every column of `table`
/// still exists.
fn history_from(
    table: &SourceTable,
    renames: &[Rename],
    present: Option<&HashSet<String>>,
) -> Result<String, Error> {
    let literal = |name: &str| format!("'{}'", name.replace('\'', "''"));
    // Each rename moves a version's value from the old name to the new
    // one, so every version ends under the table's current names, which
    // `jsonb_populate_record` of the current row type reads.
    let mut current: Vec<String> = table.columns.iter().map(|(n, _)| n.clone()).collect();
    let mut renaming = String::new();
    let mut row = "h.row".to_owned();
    for (i, rename) in renames.iter().filter(|r| r.table == table.name).enumerate() {
        let (from, to) = (literal(&rename.from), literal(&rename.to));
        let _ = write!(
            renaming,
            " CROSS JOIN LATERAL (SELECT CASE WHEN {row} ? {from} \
             THEN ({row} - {from}) || jsonb_build_object({to}, {row} -> {from}) \
             ELSE {row} END AS row) AS m{i}"
        );
        row = format!("m{i}.row");
        for name in &mut current {
            if *name == rename.from {
                name.clone_from(&rename.to);
            }
        }
    }
    // A json or jsonb array goes round jsonb_populate_record, which reads
    // an element that is itself a JSON array as another dimension: it is
    // rebuilt from its elements (a JSON null element as NULL).
    let mut json_arrays = String::new();
    // Columns dropped since: `jsonb_to_record`'s column definitions.
    let mut dropped: Vec<String> = Vec::new();
    let mut columns: Vec<String> = Vec::with_capacity(table.columns.len());
    for ((name, kind), now) in table.columns.iter().zip(&current) {
        let column = quote_ident(name);
        if *kind == Kind::Array(&Kind::Json) {
            // Read from the stored JSON itself: dropped or not.
            let key = literal(now);
            let _ = write!(json_arrays, " - {key}");
            columns.push(format!(
                "CASE jsonb_typeof({row} -> {key}) WHEN 'array' THEN ARRAY(\
                 SELECT nullif(e, 'null'::jsonb) \
                 FROM jsonb_array_elements({row} -> {key}) WITH ORDINALITY AS x (e, i) ORDER BY i) \
                 END AS {column}"
            ));
        } else if present.is_none_or(|present| present.contains(now)) {
            columns.push(format!("r.{} AS {column}", quote_ident(now)));
        } else {
            let sql_type = table.types.get(name).ok_or_else(|| {
                Error::History(format!(
                    "{}.{now} was dropped and its type is not known: its versions cannot be read back",
                    table.name
                ))
            })?;
            dropped.push(format!("{} {sql_type}", quote_ident(now)));
            columns.push(format!("d.{} AS {column}", quote_ident(now)));
        }
    }
    let dropped = if dropped.is_empty() {
        String::new()
    } else {
        format!(
            " CROSS JOIN LATERAL jsonb_to_record({row}) AS d ({})",
            dropped.join(", ")
        )
    };
    Ok(format!(
        "FROM (SELECT {}, h.seq AS lossproof_seq FROM lossproof_history AS h{renaming} \
         CROSS JOIN LATERAL jsonb_populate_record(NULL::{t}, {row}{json_arrays}) AS r{dropped} \
         WHERE h.tbl = '{t}'",
        columns.join(", "),
        t = table.name
    ))
}

/// `table`'s columns and primary key, as the source has them NOW (after any
/// `ALTER TABLE`).
pub async fn describe(client: &tokio_postgres::Client, table: &str) -> Result<SourceTable, Error> {
    let columns = client
        .query(
            "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), t.typtype::text, \
             coalesce(e.typtype::text, '') \
             FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
             LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A' \
             WHERE a.attrelid = $1::text::regclass AND a.attnum > 0 AND NOT a.attisdropped \
             ORDER BY a.attnum",
            &[&table],
        )
        .await
        .map_err(Error::source_query(format!("describe {table}")))?
        .iter()
        .map(|r| {
            let name: String = r.get(0);
            let sql_type: String = r.get(1);
            let type_type: String = r.get(2);
            let element_type: String = r.get(3);
            // An enum's values are its labels: text.
            let kind = match (type_type.as_str(), element_type.as_str()) {
                ("e", _) => Ok(Kind::Text),
                (_, "e") => Kind::Text.array(),
                _ => Kind::of_sql(&sql_type),
            };
            kind.map(|k| (name.clone(), k, sql_type))
                .map_err(|source| Error::Column {
                    table: table.to_owned(),
                    column: name,
                    source,
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let types = columns
        .iter()
        .map(|(name, _, sql_type)| (name.clone(), sql_type.clone()))
        .collect();
    let columns = columns
        .into_iter()
        .map(|(name, kind, _)| (name, kind))
        .collect();
    let key: Vec<String> = client
        .query(
            "SELECT a.attname::text FROM pg_index i \
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) \
             WHERE i.indrelid = $1::text::regclass AND i.indisprimary \
             ORDER BY array_position(i.indkey::int2[], a.attnum)",
            &[&table],
        )
        .await
        .map_err(Error::source_query(format!("primary key of {table}")))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if key.is_empty() {
        return Err(Error::NoPrimaryKey {
            table: table.to_owned(),
        });
    }
    Ok(SourceTable {
        name: table.to_owned(),
        key,
        columns,
        filter: None,
        bucket: None,
        types,
    })
}

/// `buckets` key ranges that split `table`'s rows (under its filter) into
/// shares of about equal size, in key order: the first key column's
/// quantiles, from a sample of about 200,000 rows when the table is larger.
/// Fewer ranges come back when the column has fewer distinct values.
pub async fn key_ranges(
    client: &tokio_postgres::Client,
    table: &SourceTable,
    buckets: usize,
) -> Result<Vec<KeyRange>, Error> {
    let (column, kind) = KeyRange::column_of(table)?;
    let mut bounds: Vec<String> = Vec::new();
    if buckets > 1 {
        let estimated: f32 = client
            .query_one(
                "SELECT reltuples FROM pg_class WHERE oid = $1::text::regclass",
                &[&table.name],
            )
            .await
            .map_err(Error::source_query(format!("size of {}", table.name)))?
            .get(0);
        let sample = if estimated > 1_000_000.0 {
            format!(
                " TABLESAMPLE BERNOULLI ({})",
                (100.0 * 200_000.0 / f64::from(estimated)).clamp(0.001, 100.0)
            )
        } else {
            String::new()
        };
        let fractions: Vec<String> = (1..buckets)
            .map(|i| format!("{}", i as f64 / buckets as f64))
            .collect();
        let sql = format!(
            "SELECT (percentile_disc(ARRAY[{}]::float8[]) WITHIN GROUP (ORDER BY {}))::text[] \
             FROM {} AS lp_t{sample}{}",
            fractions.join(", "),
            kind.order_expr(&format!("lp_t.{}", quote_ident(&column))),
            table.name,
            SourceTable {
                bucket: None,
                ..table.clone()
            }
            .where_clause(Dialect::Postgres, "lp_t")?,
        );
        let found: Option<Vec<Option<String>>> = client
            .query_one(&sql, &[])
            .await
            .map_err(Error::source_query(format!(
                "key quantiles of {}",
                table.name
            )))?
            .get(0);
        for bound in found.unwrap_or_default().into_iter().flatten() {
            if bounds.last() != Some(&bound) {
                bounds.push(bound);
            }
        }
    }
    // n bounds, n + 1 ranges: (.., b0), [b0, b1), …, [bn-1, ..) and NULLs.
    let mut ranges = Vec::with_capacity(bounds.len() + 1);
    let mut from = None;
    for bound in bounds {
        ranges.push(KeyRange {
            column: column.clone(),
            from: from.replace(bound.clone()),
            to: Some(bound),
            nulls: false,
        });
    }
    ranges.push(KeyRange {
        column,
        from,
        to: None,
        nulls: true,
    });
    Ok(ranges)
}

/// Every row of `table`: canonical key → canonical row.
pub async fn rows(
    client: &tokio_postgres::Client,
    table: &SourceTable,
) -> Result<BTreeMap<String, String>, Error> {
    let mut out = Vec::new();
    read(
        client,
        table,
        &format!(
            "FROM {} AS lp_t{}",
            table.name,
            table.where_clause(Dialect::Postgres, "lp_t")?
        ),
        |key, row| {
            out.push((key, row));
        },
    )
    .await?;
    // Built in bulk (one stable sort; rows come in nearly sorted runs), not
    // inserted one by one: a key read twice keeps its last row, as `insert` did.
    Ok(out.into_iter().collect())
}

/// Every version each key of `table` ever had, from `lossproof_history`;
/// `None` if the source has no history table.
pub async fn history(
    client: &tokio_postgres::Client,
    table: &SourceTable,
) -> Result<Option<History>, Error> {
    history_of(client, table, |_| true).await
}

/// [`history`], kept only for the keys `wanted` accepts (the keys a merge
/// left undecided: memory for those, not for every version of every key).
pub async fn history_of(
    client: &tokio_postgres::Client,
    table: &SourceTable,
    wanted: impl Fn(&str) -> bool,
) -> Result<Option<History>, Error> {
    let exists: Option<String> = client
        .query_one("SELECT to_regclass('lossproof_history')::text", &[])
        .await
        .map_err(Error::source_query("look for lossproof_history"))?
        .get(0);
    if exists.is_none() {
        return Ok(None);
    }
    let from = format!("{} AND h.op <> 'd') AS h", history_from(table, &[], None)?);
    let mut history = History::new();
    read(client, table, &from, |key, row| {
        if wanted(&key) {
            history.entry(key).or_default().insert(row);
        }
    })
    .await?;
    Ok(Some(history))
}

/// Stream `SELECT <key>, <columns> <from>` and hand each canonical (key, row)
/// to `each`.
async fn read(
    client: &tokio_postgres::Client,
    table: &SourceTable,
    from: &str,
    mut each: impl FnMut(String, String),
) -> Result<(), Error> {
    let mut reader = Reader::new(client, table, from).await?;
    while let Some(row) = reader.next().await? {
        let (key, row) = row.to_pair();
        each(key, row);
    }
    Ok(())
}

/// Every row of `table` in primary-key order ([`Kind::order_expr`], as
/// [`KeyOrder`] compares), in chunks of `chunk` rows sent to `to`. A read
/// that fails sends its error; a closed channel (the merge stopped) ends it.
pub async fn send_ordered(
    client: &tokio_postgres::Client,
    table: &SourceTable,
    chunk: usize,
    to: &tokio::sync::mpsc::Sender<Result<Vec<Keyed>, Error>>,
) {
    let read = async {
        // Qualified: a bare name in ORDER BY would sort by the output column
        // of that name, the column's canonical TEXT (`10001` after `100000`).
        let order: Vec<String> = table
            .key_columns()?
            .into_iter()
            .map(|(_, k, kind)| kind.order_expr(&format!("lp_t.{}", quote_ident(k))))
            .collect();
        let from = format!(
            "FROM {} AS lp_t{} ORDER BY {}",
            table.name,
            table.where_clause(Dialect::Postgres, "lp_t")?,
            order.join(", ")
        );
        let mut reader = Reader::new(client, table, &from).await?;
        let mut rows = Vec::with_capacity(chunk);
        while let Some(row) = reader.next().await? {
            rows.push(row);
            if rows.len() == chunk {
                let full = std::mem::replace(&mut rows, Vec::with_capacity(chunk));
                if to.send(Ok(full)).await.is_err() {
                    return Ok(());
                }
            }
        }
        if !rows.is_empty() {
            let _ = to.send(Ok(rows)).await;
        }
        Ok(())
    };
    if let Err(e) = read.await {
        let _ = to.send(Err(e)).await;
    }
}

/// The order of `table`'s primary key.
pub fn key_order(table: &SourceTable) -> Result<KeyOrder, Error> {
    let columns: Vec<(&str, Kind)> = table
        .key_columns()?
        .into_iter()
        .map(|(_, name, kind)| (name, kind))
        .collect();
    Ok(KeyOrder::new(&columns))
}

/// A streaming `SELECT` of a table's columns, each row written in
/// canonical form straight from its bytes ([`canonical::Layout::write`]).
///
/// Read as `COPY (SELECT …) TO STDOUT (FORMAT binary)`: the columns as
/// stored, in PostgreSQL's binary format (read by `Stored::write`, no
/// cast or text rendering on the server: half its work on a large read),
/// and each row's bytes read in place, where a query's rows would each be
/// parsed into a `Row` first (a third of the reader's time at 10M rows).
/// The statement is prepared first for its columns' types. Not
/// tokio-postgres's `BinaryCopyOutStream`: it reads the first row of each
/// message and ignores any bytes after it (rows would be lost, silently,
/// if a message ever held two), where this reader refuses them; and it
/// allocates each row's value ranges anew.
struct Reader<'t> {
    table: &'t SourceTable,
    rows: std::pin::Pin<Box<tokio_postgres::CopyOutStream>>,
    /// How each column's values are stored, from the type the server
    /// sends.
    stored: Vec<canonical::Stored>,
    /// Whether the COPY's header has been read (it comes with the first row).
    started: bool,
    layout: canonical::Layout<'t>,
    /// Where each column's value sits in the current row's message (`None`:
    /// NULL).
    at: Vec<Option<(usize, usize)>>,
}

impl<'t> Reader<'t> {
    async fn new(
        client: &tokio_postgres::Client,
        table: &'t SourceTable,
        from: &str,
    ) -> Result<Self, Error> {
        let exprs: Vec<String> = table.columns.iter().map(|(c, _)| quote_ident(c)).collect();
        let sql = format!("SELECT {} {from}", exprs.join(", "));
        let key_index: Vec<usize> = table.key_columns()?.iter().map(|(i, _, _)| *i).collect();
        let failed = || Error::source_query(format!("read {}", table.name));
        let stored = client
            .prepare(&sql)
            .await
            .map_err(failed())?
            .columns()
            .iter()
            .zip(&table.columns)
            .map(|(c, (name, kind))| {
                canonical::Stored::of_column(c.type_(), *kind).map_err(|source| Error::Column {
                    table: table.name.clone(),
                    column: name.clone(),
                    source,
                })
            })
            .collect::<Result<_, _>>()?;
        let rows = client
            .copy_out(&format!("COPY ({sql}) TO STDOUT (FORMAT binary)"))
            .await
            .map_err(failed())?;
        Ok(Self {
            table,
            rows: Box::pin(rows),
            stored,
            started: false,
            layout: canonical::Layout::new(
                table.columns.iter().map(|(c, _)| c.as_str()).collect(),
                key_index,
            ),
            at: vec![None; table.columns.len()],
        })
    }

    /// The next row; `None` at the end.
    async fn next(&mut self) -> Result<Option<Keyed>, Error> {
        loop {
            let message = self.rows.try_next().await.map_err(|source| Error::Source {
                what: format!("read {}", self.table.name),
                source,
            })?;
            let Some(message) = message else {
                return Ok(None);
            };
            let mut bytes: &[u8] = &message;
            if !self.started {
                bytes = copy_header(bytes).ok_or_else(|| self.malformed("its header"))?;
                self.started = true;
            }
            match take(&mut bytes, 2).map(|b| i16::from_be_bytes([b[0], b[1]])) {
                // The trailer: the stream ends after it.
                Some(-1) => continue,
                Some(n) if usize::try_from(n).ok() == Some(self.stored.len()) => {}
                _ => return Err(self.malformed("a row's column count")),
            }
            for (i, (name, _)) in self.table.columns.iter().enumerate() {
                self.at[i] = match take(&mut bytes, 4)
                    .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                {
                    Some(-1) => None,
                    Some(n) => {
                        let start = message.len() - bytes.len();
                        usize::try_from(n)
                            .ok()
                            .and_then(|n| take(&mut bytes, n))
                            .ok_or_else(|| self.malformed(name))?;
                        Some((start, message.len() - bytes.len()))
                    }
                    None => return Err(self.malformed(name)),
                };
            }
            // PostgreSQL sends one row per message.
            if !bytes.is_empty() {
                return Err(self.malformed("a row's end"));
            }
            let Self {
                table,
                stored,
                layout,
                at,
                ..
            } = self;
            let row = layout.write(|i, out| {
                let value = at[i].map(|(start, end)| &message[start..end]);
                stored[i].write(value, out).map_err(|source| Error::Column {
                    table: table.name.clone(),
                    column: table.columns[i].0.clone(),
                    source,
                })
            })?;
            return Ok(Some(row));
        }
    }

    fn malformed(&self, what: &str) -> Error {
        Error::Judge(format!(
            "read {}: the binary COPY's {what} is not as PostgreSQL documents it",
            self.table.name
        ))
    }
}

/// The bytes after a binary COPY's header (signature, flags, extension).
fn copy_header(mut bytes: &[u8]) -> Option<&[u8]> {
    const SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";
    if take(&mut bytes, SIGNATURE.len())? != SIGNATURE {
        return None;
    }
    take(&mut bytes, 4)?;
    let extension = take(&mut bytes, 4)?;
    let extension = u32::from_be_bytes([extension[0], extension[1], extension[2], extension[3]]);
    take(&mut bytes, usize::try_from(extension).ok()?)?;
    Some(bytes)
}

/// The first `n` bytes of `bytes`, which then starts after them.
fn take<'b>(bytes: &mut &'b [u8], n: usize) -> Option<&'b [u8]> {
    if bytes.len() < n {
        return None;
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Some(head)
}

/// `"name"` with embedded quotes doubled.
#[must_use]
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::{Dialect, KeyRange, SourceTable};
    use crate::reconcile::canonical::Kind;

    fn table(key_kind: Kind) -> SourceTable {
        SourceTable {
            name: "t".into(),
            key: vec!["k".into(), "line".into()],
            columns: vec![
                ("k".into(), key_kind),
                ("line".into(), Kind::Int),
                ("v".into(), Kind::Decimal),
            ],
            filter: Some("v > 0".into()),
            bucket: None,
            types: std::collections::BTreeMap::new(),
        }
    }

    #[test]
    fn a_key_range_reads_alike_on_both_sides() {
        let range = KeyRange {
            column: "k".into(),
            from: Some("10".into()),
            to: Some("20".into()),
            nulls: false,
        };
        let mut t = table(Kind::Int);
        t.bucket = Some(range.clone());
        assert_eq!(
            t.where_clause(Dialect::Postgres, "lp_t").unwrap(),
            r#" WHERE (v > 0) AND (lp_t."k" >= 10 AND lp_t."k" < 20)"#
        );
        assert_eq!(
            t.where_clause(Dialect::DataFusion, "lp_f").unwrap(),
            r#" WHERE (v > 0) AND (lp_f."k" >= 10 AND lp_f."k" < 20)"#
        );
        // Text by bytes on the source (COLLATE "C", as the merge orders
        // it), plain on the lake (Arrow compares bytes); quotes escaped.
        let mut t = table(Kind::Text);
        t.filter = None;
        t.bucket = Some(KeyRange {
            from: Some("o'k".into()),
            to: None,
            nulls: true,
            ..range
        });
        assert_eq!(
            t.where_clause(Dialect::Postgres, "lp_t").unwrap(),
            r#" WHERE (lp_t."k"::text COLLATE "C" >= 'o''k' OR lp_t."k" IS NULL)"#
        );
        assert_eq!(
            t.where_clause(Dialect::DataFusion, "lp_f").unwrap(),
            r#" WHERE (lp_f."k" >= 'o''k' OR lp_f."k" IS NULL)"#
        );
        t.bucket = None;
        assert_eq!(t.where_clause(Dialect::Postgres, "lp_t").unwrap(), "");
        assert!(!t.narrowed());
    }

    #[test]
    fn only_integer_and_text_keys_split_into_ranges() {
        assert!(KeyRange::column_of(&table(Kind::Int)).is_ok());
        assert!(KeyRange::column_of(&table(Kind::Text)).is_ok());
        let err = KeyRange::column_of(&table(Kind::Timestamptz))
            .unwrap_err()
            .to_string();
        assert!(err.contains("t.k is the first primary-key column"), "{err}");
    }
}
