//! `workload orders preload N`: the `orders` tables bulk-loaded with `COPY`
//! before capture starts, so the connector's initial snapshot carries them:
//! the snapshot-then-stream path every real pipeline starts with, at size.
//!
//! `N` orders, `ceil(N / 10)` customers (order `i` belongs to customer
//! `i mod customers`), one item per order (its amount is the item's
//! quantity times its unit price, as for every order the workload writes).
//! Their ids start at [`PRELOAD_BASE`], far above any id the workload's
//! generators draw; preloaded order `i` belongs to connection
//! `i mod connections`, whose generator then updates and deletes it like
//! its own ([`super::generator::Generator::with_preload`]). Every value is
//! drawn from the run's seed (a ChaCha stream of its own).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use futures_util::SinkExt as _;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore as _, SeedableRng as _};

use super::op::money;
use crate::error::{Error, Result};

/// The first preloaded id (customers and orders alike).
pub const PRELOAD_BASE: i64 = 1_000_000_000_000;

/// The ChaCha stream the preload draws from (the generators use one per
/// connection, from 0).
const STREAM: u64 = u64::MAX;

/// Rows per `COPY` chunk sent.
const CHUNK_ROWS: u64 = 10_000;

/// What a preload wrote, and how long it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preloaded {
    pub customers: u64,
    pub orders: u64,
    pub items: u64,
    pub elapsed: Duration,
}

/// Wait until the connector's initial snapshot of a preload is in Kafka:
/// `topics` (customers, orders, order_items, as
/// `lossproof_consumers::topics` names them) hold a record per preloaded
/// row (nothing else writes to them before the load starts). Checked every
/// 250 ms until `deadline`, then refused with how far the snapshot got.
pub async fn wait_in_topics(
    kafka: &lossproof_runtime::profile::Kafka,
    topics: &[String],
    preloaded: &Preloaded,
    deadline: Instant,
) -> Result<()> {
    let expected = [preloaded.customers, preloaded.orders, preloaded.items];
    for (topic, rows) in topics.iter().zip(expected) {
        loop {
            let end: i64 = lossproof_runtime::reconcile::gate::ends(kafka, topic)
                .await?
                .iter()
                .map(|(_, end)| end)
                .sum();
            if u64::try_from(end).unwrap_or(0) >= rows {
                break;
            }
            if Instant::now() > deadline {
                return Err(Error::Refused(format!(
                    "the connector's snapshot did not reach {topic} in time: {end} of {rows} rows"
                )));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    Ok(())
}

/// How many customers `orders` preloaded orders belong to.
#[must_use]
pub fn customers_for(orders: u64) -> u64 {
    orders.div_ceil(10)
}

/// Bulk-load `orders` orders (and their customers and items) into the
/// source's `orders` tables, drawn from `seed`.
pub async fn preload(
    source: &tokio_postgres::Client,
    orders: u64,
    seed: u64,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Preloaded> {
    let started = Instant::now();
    let customers = customers_for(orders);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(STREAM);
    let mut below = |n: u64| ((u128::from(rng.next_u64()) * u128::from(n.max(1))) >> 64) as u64;
    copy(
        source,
        "COPY customers (customer_id, name, email, tier, created_at) FROM STDIN",
        customers,
        |k, line| {
            let id = PRELOAD_BASE + i64::try_from(k).unwrap_or(i64::MAX);
            let _ = writeln!(
                line,
                "{id}\tPreloaded {k}\tpreloaded.{id}@example.test\t{}\t2026-01-01 00:00:00+00",
                1 + below(5)
            );
        },
    )
    .await?;
    progress(&format!("preload: {customers} customers"));
    copy(
        source,
        "COPY orders (order_id, customer_id, status, amount, quantity, note, created_at, updated_at) FROM STDIN",
        orders,
        |i, line| {
            let id = PRELOAD_BASE + i64::try_from(i).unwrap_or(i64::MAX);
            let customer = PRELOAD_BASE + i64::try_from(i % customers).unwrap_or(0);
            let (quantity, price) = item_of(seed, i);
            let amount = money(i64::try_from(quantity * price).unwrap_or(0));
            let status = ["new", "paid"][usize::try_from(below(2)).unwrap_or(0)];
            let _ = writeln!(
                line,
                "{id}\t{customer}\t{status}\t{amount}\t{quantity}\tpreloaded\t2026-01-01 00:00:00+00\t2026-01-01 00:00:00+00"
            );
        },
    )
    .await?;
    progress(&format!("preload: {orders} orders"));
    copy(
        source,
        "COPY order_items (order_id, line_no, sku, quantity, unit_price) FROM STDIN",
        orders,
        |i, line| {
            let id = PRELOAD_BASE + i64::try_from(i).unwrap_or(i64::MAX);
            let (quantity, price) = item_of(seed, i);
            let _ = writeln!(
                line,
                "{id}\t1\tSKU-{:05}\t{quantity}\t{}",
                i % 100_000,
                money(i64::try_from(price).unwrap_or(0))
            );
        },
    )
    .await?;
    source
        .batch_execute("ANALYZE customers, orders, order_items")
        .await
        .map_err(Error::pg("analyze the preloaded tables"))?;
    Ok(Preloaded {
        customers,
        orders,
        items: orders,
        elapsed: started.elapsed(),
    })
}

/// Order `i`'s one item: (quantity, unit price in cents), drawn from the
/// seed and `i` alone (SplitMix64), so the order's amount and its item
/// agree without holding every draw.
fn item_of(seed: u64, i: u64) -> (u64, u64) {
    let mut z = seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (1 + z % 9, 50 + (z >> 8) % 50_000)
}

/// `COPY … FROM STDIN` of `rows` lines, each written by `line(i, buffer)`,
/// sent in chunks.
async fn copy(
    source: &tokio_postgres::Client,
    statement: &str,
    rows: u64,
    mut line: impl FnMut(u64, &mut String),
) -> Result<()> {
    let sink = source
        .copy_in::<_, std::io::Cursor<Vec<u8>>>(statement)
        .await
        .map_err(Error::pg(statement.to_owned()))?;
    let mut sink = std::pin::pin!(sink);
    let mut buffer = String::new();
    for i in 0..rows {
        line(i, &mut buffer);
        if (i + 1) % CHUNK_ROWS == 0 {
            let chunk = std::mem::take(&mut buffer).into_bytes();
            sink.send(std::io::Cursor::new(chunk))
                .await
                .map_err(Error::pg(statement.to_owned()))?;
        }
    }
    if !buffer.is_empty() {
        sink.send(std::io::Cursor::new(buffer.into_bytes()))
            .await
            .map_err(Error::pg(statement.to_owned()))?;
    }
    sink.as_mut()
        .finish()
        .await
        .map_err(Error::pg(statement.to_owned()))?;
    Ok(())
}
