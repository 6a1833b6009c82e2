//! Reconciling a source that is still being written, without stopping the
//! pipeline.
//!
//! 1. The source is read in ONE `REPEATABLE READ` transaction ([`Snapshot`]):
//!    every table and the history see the same instant. Its WAL position
//!    `lsn` is read in the statement that takes the snapshot, so every
//!    transaction the snapshot sees committed before it.
//! 2. The lake is read once it covers `lsn` ([`super::gate::wait_covered`]):
//!    the replication slot confirmed `lsn` (Debezium has put every change up
//!    to it in Kafka), then each consumer's lake stores offsets at or past
//!    the topics' ends of that moment. The lake then holds every change the
//!    snapshot sees, and perhaps newer ones.
//! 3. A key whose lake row differs is `in-flight` when the newest change
//!    the consumer applied to it came from a transaction the snapshot does
//!    not see — by transaction id, `pg_current_snapshot()` against
//!    Debezium's `source.txId`, which the consumer keeps per key
//!    ([`super::ConsumerLake::applied`]). Any other difference is damage,
//!    exactly as in a drained run: the lake had every change the snapshot
//!    sees, and nothing after them touched the key.
//!
//! Ids, not LSNs, decide what the snapshot sees: PostgreSQL's snapshots
//! are made of transaction ids, and a transaction that committed just
//! before the snapshot's LSN can still be invisible to it.

use std::collections::{HashMap, HashSet};

use arrow_array::Array as _;
use arrow_array::cast::AsArray as _;
use arrow_array::types::Int64Type;

use super::ConsumerLake;
use super::diff::{Counts, DiffKind, DiffRow};
use super::error::Error;
use super::source::SourceTable;
use crate::Lake;

/// The source's snapshot: its WAL position and which transactions it sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// `pg_current_wal_insert_lsn()` when the snapshot was taken: past the
    /// commit of every transaction it sees.
    pub lsn: u64,
    /// Transaction ids (32-bit, as Debezium's `source.txId` has them):
    /// every id from `xmax` on is unseen, and so is every id in `running`.
    xmax: u32,
    running: HashSet<u32>,
}

impl Snapshot {
    /// Start a `REPEATABLE READ READ ONLY` transaction on `client` and take
    /// its snapshot: every query on `client` until [`Snapshot::end`] reads it.
    pub async fn begin(client: &tokio_postgres::Client) -> Result<Self, Error> {
        client
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
            .map_err(Error::source_query("begin a repeatable-read transaction"))?;
        // The snapshot is taken as this statement starts; the LSN is read
        // after it, so it is past every commit the snapshot sees.
        let row = client
            .query_one(
                "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint, pg_current_snapshot()::text",
                &[],
            )
            .await
            .map_err(Error::source_query("take a snapshot"))?;
        let lsn = u64::try_from(row.get::<_, i64>(0)).unwrap_or(0);
        Self::parse(lsn, row.get(1))
    }

    /// End the transaction [`Snapshot::begin`] started (read-only: nothing
    /// to keep).
    pub async fn end(client: &tokio_postgres::Client) -> Result<(), Error> {
        client
            .batch_execute("ROLLBACK")
            .await
            .map_err(Error::source_query("end the snapshot's transaction"))
    }

    /// `pg_current_snapshot()`'s text, `xmin:xmax:xip,…` (64-bit ids).
    pub fn parse(lsn: u64, text: &str) -> Result<Self, Error> {
        let bad = || Error::Judge(format!("unreadable snapshot `{text}`"));
        let mut parts = text.split(':');
        let (Some(_xmin), Some(xmax), Some(xip), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        // A 64-bit id is the epoch above the 32-bit id Debezium reports.
        let id = |s: &str| s.parse::<u64>().map(|x| x as u32).map_err(|_| bad());
        Ok(Self {
            lsn,
            xmax: id(xmax)?,
            running: xip
                .split(',')
                .filter(|s| !s.is_empty())
                .map(id)
                .collect::<Result<_, _>>()?,
        })
    }

    /// Whether the snapshot sees what transaction `tx_id` (Debezium's
    /// `source.txId`) committed.
    #[must_use]
    pub fn sees(&self, tx_id: i64) -> bool {
        let xid = tx_id as u32;
        // Ids wrap around: `xid` precedes `xmax` if it is within 2^31 below.
        let before_xmax = xid.wrapping_sub(self.xmax).cast_signed() < 0;
        before_xmax && !self.running.contains(&xid)
    }
}

/// The reconciler's key (`a=1, b=x`) of a consumer's key (the values
/// joined by U+001F, as [`crate::lake::read::row_keys`] renders them).
fn key_of(spec: &SourceTable, consumer_key: &str) -> String {
    spec.key
        .iter()
        .zip(consumer_key.split('\u{1f}'))
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Turn `diff` rows whose key's newest applied change the snapshot does not
/// see into `in-flight` rows, and the counts with them. The consumer's
/// record is read now, in a session of its own: after the lake's rows
/// were, so it knows every change they reflect.
pub(crate) async fn mark_in_flight(
    lake: &Lake,
    consumer: &ConsumerLake,
    spec: &SourceTable,
    snapshot: &Snapshot,
    diff: &mut [DiffRow],
    counts: &mut Counts,
) -> Result<(), Error> {
    if diff.is_empty() {
        return Ok(());
    }
    let Some(sql) = &consumer.applied else {
        return Err(Error::Judge(format!(
            "{} keeps no record of the transaction behind each key: it cannot be reconciled against a live source",
            consumer.consumer
        )));
    };
    let differing: HashSet<&str> = diff.iter().map(|d| d.key.as_str()).collect();
    let ctx = lake.session(&[consumer.namespace.as_str()]).await?;
    let batches = ctx.sql(sql).await?.collect().await?;
    let mut newest: HashMap<String, Option<i64>> = HashMap::new();
    for batch in &batches {
        let column = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| {
                Error::Judge(format!(
                    "{}'s applied log has no column {name}",
                    consumer.consumer
                ))
            })
        };
        let tables = column("table")?.as_string_opt::<i32>();
        let keys = column("key")?.as_string_opt::<i32>();
        let txs = column("tx_id")?.as_primitive_opt::<Int64Type>();
        let (Some(tables), Some(keys), Some(txs)) = (tables, keys, txs) else {
            return Err(Error::Judge(format!(
                "{}'s applied log: expected table and key as text, tx_id as bigint",
                consumer.consumer
            )));
        };
        for i in 0..batch.num_rows() {
            if tables.value(i) != spec.name {
                continue;
            }
            let key = key_of(spec, keys.value(i));
            if differing.contains(key.as_str()) {
                newest.insert(key, txs.is_valid(i).then(|| txs.value(i)));
            }
        }
    }
    for row in diff.iter_mut() {
        let unseen = newest
            .get(&row.key)
            .copied()
            .flatten()
            .is_some_and(|tx| !snapshot.sees(tx));
        if unseen && row.kind != DiffKind::Duplicate {
            counts.take_one(row.kind);
            row.kind = DiffKind::InFlight;
            *counts.by_kind.entry(DiffKind::InFlight).or_default() += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_sees_ids_below_xmax_that_were_not_running() {
        let s = Snapshot::parse(7, "100:105:100,103").unwrap();
        assert_eq!(s.lsn, 7);
        assert!(s.sees(99));
        assert!(!s.sees(100), "running when the snapshot was taken");
        assert!(s.sees(101));
        assert!(!s.sees(103));
        assert!(s.sees(104));
        assert!(!s.sees(105), "xmax and later: not started yet");
        assert!(!s.sees(4000));
        // 64-bit ids with an epoch: Debezium's 32-bit id compares the same.
        let epoch = Snapshot::parse(0, "4294967396:4294967401:").unwrap();
        assert!(epoch.sees(100));
        assert!(!epoch.sees(105));
        // Around the wrap: ids just below 2^32 precede a small xmax.
        let wrapped = Snapshot::parse(0, "4294967290:4294967300:").unwrap();
        assert!(wrapped.sees(4_294_967_294));
        assert!(!wrapped.sees(4));
        assert!(Snapshot::parse(0, "1:2").is_err());
        assert!(Snapshot::parse(0, "a:b:").is_err());
    }

    #[test]
    fn consumer_keys_read_as_the_reconciler_writes_them() {
        let spec = SourceTable {
            name: "t".into(),
            key: vec!["a".into(), "b".into()],
            columns: Vec::new(),
            filter: None,
            bucket: None,
            types: std::collections::BTreeMap::new(),
        };
        assert_eq!(key_of(&spec, "1\u{1f}\"x\""), "a=1, b=\"x\"");
    }
}
