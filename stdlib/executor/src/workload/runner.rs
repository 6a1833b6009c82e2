//! Running a workload against the source PostgreSQL: several
//! concurrent connections, each replaying its own deterministic stream at
//! its share of the rate, for a given time. Several load phases of one seed
//! continue the same streams ([`Streams`]): the second phase goes on where
//! the first stopped, so its inserts never reuse a key.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lossproof_lang::plan::WorkloadPlan;
use lossproof_lang::vocabulary::TableSig;
use lossproof_runtime::AbortOnDrop;
use lossproof_runtime::profile::Source;
use serde::Serialize;
use tokio_postgres::Client;

use super::generator::{FNV_OFFSET, Generator, fnv1a};
use super::op::{NewOrder, Op, money};
use super::tables::{RowOp, TableGenerator};

/// The workload's epoch: operation times are offsets from it.
const EPOCH: &str = "'2026-01-01 00:00:00+00'::timestamptz";

/// What a workload run did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkloadReport {
    /// Operations attempted (intended), by kind.
    pub by_kind: BTreeMap<String, u64>,
    pub ops: u64,
    /// Operations the database refused (e.g. while it was being killed).
    pub failed: u64,
    /// FNV-1a over every attempted operation's canonical text, connection by
    /// connection: equal for equal intended sequences.
    pub digest: String,
    /// The same over each connection's first [`PREFIX_OPS`] operations
    /// (or all it attempted, if fewer): equal for two runs of the seed even
    /// when timing let one attempt a few more operations than the other.
    pub prefix_digest: String,
    /// The source's WAL position after the last write.
    pub final_lsn: u64,
    /// Operations the database accepted in each second of the run.
    pub ops_per_second: Vec<u64>,
    pub elapsed_ms: u64,
}

/// Operations per connection the prefix digest covers.
pub const PREFIX_OPS: u64 = 200;

struct ConnectionResult {
    by_kind: BTreeMap<String, u64>,
    ops: u64,
    failed: u64,
    digest: u64,
    /// The digest after the first [`PREFIX_OPS`] operations.
    prefix_digest: Option<u64>,
    per_second: Vec<u64>,
}

fn mix(plan: &WorkloadPlan) -> [f64; 4] {
    ["insert", "update", "delete", "cascade"].map(|k| plan.mix.get(k).copied().unwrap_or(0.0))
}

/// Run `plan` with `seed` against database `database` on `source`
/// for `duration` (one load phase; [`Streams`] for several).
///
/// # Panics
/// If a connection task panics, or connecting fails for a reason other
/// than PostgreSQL's (both are bugs).
pub async fn run(
    plan: &WorkloadPlan,
    seed: u64,
    source: &Source,
    database: &str,
    duration: Duration,
) -> Result<WorkloadReport, tokio_postgres::Error> {
    Streams::new(plan, seed)
        .run(plan, source, database, duration)
        .await
}

/// The workload's per-connection streams of one seed, continued from one
/// load phase to the next.
pub struct Streams {
    /// Each connection's generator and how many operations it produced.
    connections: Vec<(Stream, u64)>,
}

/// One connection's generator: the `orders` workload's own, or the one
/// every declared schema gets.
pub enum Stream {
    Orders(Generator),
    Tables(TableGenerator, Arc<Vec<TableSig>>),
}

/// One operation of either generator.
enum Step {
    Orders(Op),
    Tables(RowOp),
}

impl Stream {
    fn initial(&mut self) -> Step {
        match self {
            Stream::Orders(g) => Step::Orders(g.initial_customer()),
            Stream::Tables(g, _) => Step::Tables(g.initial_row()),
        }
    }

    fn next_op(&mut self) -> Step {
        match self {
            Stream::Orders(g) => Step::Orders(g.next_op()),
            Stream::Tables(g, _) => Step::Tables(g.next_op()),
        }
    }
}

impl Step {
    fn kind(&self) -> &'static str {
        match self {
            Step::Orders(op) => op.kind(),
            Step::Tables(op) => op.kind(),
        }
    }

    fn text(&self) -> String {
        match self {
            Step::Orders(op) => op.to_string(),
            Step::Tables(op) => op.to_string(),
        }
    }
}

impl Streams {
    #[must_use]
    pub fn new(plan: &WorkloadPlan, seed: u64) -> Self {
        let connections = plan.connections.max(1);
        let tables = Arc::new(plan.tables.clone());
        let stream = |c| {
            if tables.is_empty() {
                Stream::Orders(
                    Generator::new(seed, c, connections, mix(plan)).with_preload(plan.preload),
                )
            } else {
                let g = TableGenerator::new(tables.clone(), seed, c, connections, mix(plan));
                Stream::Tables(g, tables.clone())
            }
        };
        Self {
            connections: (0..connections).map(|c| (stream(c), 0)).collect(),
        }
    }

    /// One load phase of `duration`, continuing every stream.
    ///
    /// # Panics
    /// If a connection task panics, or connecting fails for a reason other
    /// than PostgreSQL's (both are bugs).
    pub async fn run(
        &mut self,
        plan: &WorkloadPlan,
        source: &Source,
        database: &str,
        duration: Duration,
    ) -> Result<WorkloadReport, tokio_postgres::Error> {
        let started = Instant::now();
        let deadline = started + duration;
        let connections = plan.connections.max(1);
        let period = Duration::from_secs_f64(connections as f64 / plan.rate_per_s.max(0.001));
        let initial = plan.customers.div_ceil(connections);
        let mut tasks = Vec::new();
        for (generator, done) in std::mem::take(&mut self.connections) {
            let database = database.to_owned();
            let source = source.clone();
            tasks.push(AbortOnDrop(tokio::spawn(async move {
                connection_loop(
                    generator,
                    done,
                    &source,
                    database,
                    initial,
                    period,
                    (started, deadline),
                )
                .await
            })));
        }
        let mut report = WorkloadReport {
            by_kind: BTreeMap::new(),
            ops: 0,
            failed: 0,
            digest: String::new(),
            prefix_digest: String::new(),
            final_lsn: 0,
            elapsed_ms: 0,
            ops_per_second: Vec::new(),
        };
        let (mut digest, mut prefix) = (FNV_OFFSET, FNV_OFFSET);
        for mut task in tasks {
            let (generator, done, result) =
                (&mut task.0).await.expect("workload connection task")?;
            self.connections.push((generator, done));
            for (kind, n) in result.by_kind {
                *report.by_kind.entry(kind).or_default() += n;
            }
            report.ops += result.ops;
            report.failed += result.failed;
            if report.ops_per_second.len() < result.per_second.len() {
                report.ops_per_second.resize(result.per_second.len(), 0);
            }
            for (total, n) in report.ops_per_second.iter_mut().zip(&result.per_second) {
                *total += n;
            }
            digest = fnv1a(digest, &result.digest.to_le_bytes());
            let first = result.prefix_digest.unwrap_or(result.digest);
            prefix = fnv1a(prefix, &first.to_le_bytes());
        }
        report.digest = format!("{digest:016x}");
        report.prefix_digest = format!("{prefix:016x}");
        let client = source.connect(database).await.map_err(as_pg)?;
        report.final_lsn = lossproof_runtime::debezium::current_lsn(&client)
            .await
            .map_err(as_pg)?;
        report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(report)
    }
}

fn as_pg(error: lossproof_runtime::Error) -> tokio_postgres::Error {
    match error {
        lossproof_runtime::Error::Postgres(e) => e,
        other => panic!("connecting to the source failed outside PostgreSQL: {other}"),
    }
}

async fn connection_loop(
    mut generator: Stream,
    mut done: u64,
    source: &Source,
    database: String,
    initial_customers: u64,
    period: Duration,
    (started, deadline): (Instant, Instant),
) -> Result<(Stream, u64, ConnectionResult), tokio_postgres::Error> {
    let mut client = source.connect(&database).await.map_err(as_pg)?;
    let mut result = ConnectionResult {
        by_kind: BTreeMap::new(),
        ops: 0,
        failed: 0,
        digest: FNV_OFFSET,
        prefix_digest: None,
        per_second: Vec::new(),
    };
    let mut pacer = Pacer::new(period);
    loop {
        if Instant::now() >= deadline {
            break;
        }
        // The first operations create the initial customers, unpaced.
        let op = if done < initial_customers {
            generator.initial()
        } else {
            generator.next_op()
        };
        if done >= initial_customers {
            pacer.wait().await;
        }
        done += 1;
        result.digest = fnv1a(result.digest, op.text().as_bytes());
        result.ops += 1;
        if result.ops == PREFIX_OPS {
            result.prefix_digest = Some(result.digest);
        }
        *result.by_kind.entry(op.kind().to_owned()).or_default() += 1;
        let applied = match (&op, &generator) {
            (Step::Orders(op), _) => apply(&mut client, op).await,
            (Step::Tables(op), Stream::Tables(_, tables)) => apply_row(&client, op, tables).await,
            (Step::Tables(_), Stream::Orders(_)) => {
                unreachable!("a step comes from its own stream")
            }
        };
        if applied.is_ok() {
            let second = usize::try_from(started.elapsed().as_secs()).unwrap_or(usize::MAX);
            if result.per_second.len() <= second {
                result.per_second.resize(second + 1, 0);
            }
            result.per_second[second] += 1;
        }
        if applied.is_err() {
            result.failed += 1;
            if client.is_closed() {
                // The server went away (a fault): reconnect, bounded by the run.
                client = reconnect(source, &database, deadline).await?;
            }
        }
    }
    Ok((generator, done, result))
}

/// The most a connection falls behind its schedule and still catches up:
/// operations due longer ago than this are dropped, not sent in a burst.
const CATCH_UP: Duration = Duration::from_secs(1);

/// One connection's schedule: its operations are due one `period` apart,
/// counted from its first. A connection slowed for a moment (a slow
/// statement, a busy machine) sends what it owes back to back until it is
/// on time again, so a planned rate is reached whenever the source keeps up
/// on average; a pause longer than [`CATCH_UP`] (a fault that stops the
/// source) does not come back as a burst of everything it missed. Waiting
/// only for the next tick after each operation (tokio's `Delay`) loses every
/// stall for good: measured, 2 connections at 200/s in a debug build beside
/// a test build ran at 175/s with the source far from saturated.
struct Pacer {
    period: Duration,
    next: Option<Instant>,
}

impl Pacer {
    fn new(period: Duration) -> Self {
        Self { period, next: None }
    }

    /// When the next operation is due, seen at `now`; the one after it is
    /// then due a period later.
    fn due(&mut self, now: Instant) -> Instant {
        let due = match self.next {
            // The first operation goes at once.
            None => now,
            // Owed for longer than the catch-up window: from its start.
            Some(due) => now
                .checked_sub(CATCH_UP)
                .filter(|oldest| *oldest > due)
                .unwrap_or(due),
        };
        self.next = Some(due + self.period);
        due
    }

    /// Wait until the next operation is due.
    async fn wait(&mut self) {
        let due = self.due(Instant::now());
        tokio::time::sleep_until(due.into()).await;
    }
}

async fn reconnect(
    source: &Source,
    database: &str,
    deadline: Instant,
) -> Result<Client, tokio_postgres::Error> {
    let mut wait = Duration::from_millis(50);
    loop {
        match source.connect(database).await {
            Ok(client) => return Ok(client),
            Err(e) if Instant::now() >= deadline => return Err(as_pg(e)),
            Err(_) => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// Execute one operation on declared tables: one statement.
async fn apply_row(
    client: &Client,
    op: &RowOp,
    tables: &[TableSig],
) -> Result<(), tokio_postgres::Error> {
    let (sql, params) = op.sql(tables);
    let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
        .iter()
        .map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync))
        .collect();
    client.execute(&sql, &params).await.map(drop)
}

/// Execute one operation (multi-row inserts in one transaction).
async fn apply(client: &mut Client, op: &Op) -> Result<(), tokio_postgres::Error> {
    match op {
        Op::InsertCustomer { customer_id, name, email, tier, at_ms, orders } => {
            let tx = client.transaction().await?;
            tx.execute(
                &format!("INSERT INTO customers VALUES ($1, $2, $3, $4, {EPOCH} + $5::bigint * interval '1 millisecond')"),
                &[customer_id, name, email, tier, at_ms],
            )
            .await?;
            for order in orders {
                insert_order(&tx, *customer_id, order, *at_ms).await?;
            }
            tx.commit().await
        }
        Op::InsertOrder { customer_id, order, at_ms } => {
            let tx = client.transaction().await?;
            insert_order(&tx, *customer_id, order, *at_ms).await?;
            tx.commit().await
        }
        Op::UpdateOrder { order_id, status, amount, quantity, note, at_ms } => client
            .execute(
                &format!(
                    "UPDATE orders SET status = $2, amount = $3::text::numeric, quantity = $4, note = $5, \
                     updated_at = {EPOCH} + $6::bigint * interval '1 millisecond' WHERE order_id = $1"
                ),
                &[order_id, status, &money(*amount), quantity, note, at_ms],
            )
            .await
            .map(drop),
        Op::DeleteOrder { order_id } => {
            client.execute("DELETE FROM orders WHERE order_id = $1", &[order_id]).await.map(drop)
        }
        Op::DeleteCustomer { customer_id } => {
            client.execute("DELETE FROM customers WHERE customer_id = $1", &[customer_id]).await.map(drop)
        }
    }
}

async fn insert_order(
    tx: &tokio_postgres::Transaction<'_>,
    customer_id: i64,
    order: &NewOrder,
    at_ms: i64,
) -> Result<(), tokio_postgres::Error> {
    tx.execute(
        &format!(
            "INSERT INTO orders VALUES ($1, $2, $3, $4::text::numeric, $5, $6, \
             {EPOCH} + $7::bigint * interval '1 millisecond', {EPOCH} + $7::bigint * interval '1 millisecond')"
        ),
        &[&order.order_id, &customer_id, &order.status, &money(order.amount), &order.quantity, &order.note, &at_ms],
    )
    .await?;
    for item in &order.items {
        tx.execute(
            "INSERT INTO order_items VALUES ($1, $2, $3, $4, $5::text::numeric)",
            &[
                &order.order_id,
                &item.line_no,
                &item.sku,
                &item.quantity,
                &money(item.unit_price),
            ],
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{CATCH_UP, Pacer};
    use std::time::{Duration, Instant};

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_short_stall_is_caught_up_back_to_back() {
        let start = Instant::now();
        let mut pacer = Pacer::new(10 * MS);
        assert_eq!(pacer.due(start), start);
        assert_eq!(pacer.due(start + 2 * MS), start + 10 * MS, "on time: wait");
        // The second operation took 35 ms: the three due meanwhile go at once,
        // then the schedule is the original one again.
        let late = start + 45 * MS;
        assert_eq!(pacer.due(late), start + 20 * MS);
        assert_eq!(pacer.due(late), start + 30 * MS);
        assert_eq!(pacer.due(late), start + 40 * MS);
        assert_eq!(pacer.due(late), start + 50 * MS);
    }

    #[test]
    fn a_long_pause_owes_at_most_the_catch_up_window() {
        let start = Instant::now();
        let mut pacer = Pacer::new(10 * MS);
        pacer.due(start);
        // Ten seconds without an operation (the source was stopped): only the
        // last second's hundred operations are sent back to back.
        let back = start + Duration::from_secs(10);
        let mut burst = 0;
        while pacer.due(back) <= back {
            burst += 1;
        }
        let owed = CATCH_UP.as_millis() / 10;
        assert!(
            (owed..=owed + 1).contains(&(burst as u128)),
            "{burst} operations sent at once"
        );
    }
}
