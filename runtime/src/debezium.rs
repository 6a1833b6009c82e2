//! The Debezium `PostgreSQL` connector of one run: names that carry the run
//! id, create/stop/delete through Connect, its replication slot, and the
//! drained check.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::connect::ConnectClient;
use crate::endpoints::Endpoints;
use crate::error::{Error, Result};

/// Everything named after one run, so a reset can never resume into a slot
/// or topics of another run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureNames {
    pub connector: String,
    pub slot: String,
    pub publication: String,
    pub topic_prefix: String,
    /// The source database whose tables are captured: the stack's shared
    /// `SOURCE_DATABASE`, or one of the run's own ([`Self::in_own_database`]).
    pub database: String,
}

impl CaptureNames {
    /// Names for run `run_id` (letters, digits and `_` only).
    #[must_use]
    pub fn for_run(run_id: &str) -> Self {
        let id: String = run_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        Self {
            connector: format!("lp-{id}"),
            slot: format!("lp_{id}"),
            publication: format!("lp_{id}_pub"),
            topic_prefix: format!("lp_{id}"),
            database: crate::stack::SOURCE_DATABASE.to_owned(),
        }
    }

    /// The same names, capturing tables in a database of the run's own
    /// (`lp_<run>`, named like the slot): what isolates seeds that run at
    /// the same time on one stack (`lossproof run --jobs N`).
    #[must_use]
    pub fn in_own_database(mut self) -> Self {
        self.database.clone_from(&self.slot);
        self
    }

    /// The topic Debezium writes a source table's changes to.
    #[must_use]
    pub fn topic(&self, schema: &str, table: &str) -> String {
        format!("{}.{schema}.{table}", self.topic_prefix)
    }

    /// The transaction topic: each source transaction's BEGIN and END (with
    /// its event count per table), in commit order, one partition
    /// (`provide.transaction.metadata`).
    #[must_use]
    pub fn transaction_topic(&self) -> String {
        format!("{}.transaction", self.topic_prefix)
    }
}

/// Debezium's heartbeat topic of the capture with topic prefix `prefix`
/// (`topic.heartbeat.prefix`, left at its default, then the prefix).
#[must_use]
pub fn heartbeat_topic(prefix: &str) -> String {
    format!("__debezium-heartbeat.{prefix}")
}

/// Whether topic or registry subject `name` belongs to the capture with
/// topic prefix `prefix`: its tables' and transaction topics
/// (`<prefix>.…`) and its heartbeat topic ([`heartbeat_topic`]), with
/// their subjects (`<topic>-key`, `<topic>-value`).
#[must_use]
pub fn owned_by(prefix: &str, name: &str) -> bool {
    let heartbeat = heartbeat_topic(prefix);
    name.strip_prefix(prefix)
        .is_some_and(|rest| rest.starts_with('.'))
        || name
            .strip_prefix(heartbeat.as_str())
            .is_some_and(|rest| rest.is_empty() || rest == "-key" || rest == "-value")
}

/// How events are encoded on the topics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Avro through the embedded registry; decimals kept precise.
    Avro,
    /// Schemaless JSON; decimals as strings.
    Json,
}

/// The connector's configuration.
///
/// # Panics
/// Never: both parts are JSON objects built here.
#[must_use]
pub fn config(
    names: &CaptureNames,
    endpoints: &Endpoints,
    database: &str,
    tables: &[&str],
    encoding: Encoding,
) -> Value {
    let mut config = json!({
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        // As Connect's workers reach the source: through the fault proxy's
        // `postgres` link on the local stack (docs/network.md).
        "database.hostname": endpoints.source.connect_host,
        "database.port": endpoints.source.connect_port.to_string(),
        "database.user": endpoints.source.user,
        "database.password": endpoints.source.password.as_ref().map_or("", |p| p.expose()),
        "database.dbname": database,
        "plugin.name": "pgoutput",
        "slot.name": names.slot,
        "publication.name": names.publication,
        "publication.autocreate.mode": "filtered",
        "table.include.list": tables.iter().copied().chain([HEARTBEAT_TABLE]).collect::<Vec<_>>().join(","),
        "topic.prefix": names.topic_prefix,
        // BEGIN and END of every source transaction on
        // `<prefix>.transaction`, and each change event's transaction id and
        // place in it: what lets a consumer commit only at transaction
        // boundaries (the correct consumer does; docs/consumers.md).
        "provide.transaction.metadata": "true",
        // Heartbeats (a write to the heartbeat table, captured) move the
        // slot's confirmed LSN even when the workload's tables are quiet:
        // the drained check depends on it.
        "heartbeat.interval.ms": "1000",
        "heartbeat.action.query": HEARTBEAT_QUERY,
        "poll.interval.ms": "50",
        // Intervals as ISO 8601 strings, exact: the default (`numeric`)
        // folds months into microseconds at 30.4375 days each.
        "interval.handling.mode": "string",
        "producer.override.batch.size": "1048576",
        "producer.override.linger.ms": "50",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1",
    });
    let registry = &endpoints.registry;
    let extra = match encoding {
        Encoding::Avro => {
            let mut avro = json!({
                "key.converter": "io.confluent.connect.avro.AvroConverter",
                "value.converter": "io.confluent.connect.avro.AvroConverter",
                "key.converter.schema.registry.url": registry.url,
                "value.converter.schema.registry.url": registry.url,
                "decimal.handling.mode": "precise",
            });
            if let Some(user) = &registry.user {
                let info = format!(
                    "{user}:{}",
                    registry.password.as_ref().map_or("", |p| p.expose())
                );
                for side in ["key", "value"] {
                    avro[format!("{side}.converter.basic.auth.credentials.source")] =
                        json!("USER_INFO");
                    avro[format!("{side}.converter.basic.auth.user.info")] = json!(info);
                }
            }
            avro
        }
        Encoding::Json => json!({ "decimal.handling.mode": "string" }),
    };
    for (k, v) in extra.as_object().expect("object") {
        config[k] = v.clone();
    }
    config
}

/// A one-row table the connector updates on every heartbeat
/// (`heartbeat.action.query`). Without a captured change, the slot's
/// confirmed LSN never passes WAL written by anything else (other tables,
/// `RUNNING_XACTS` records): a quiet source would never look drained.
pub const HEARTBEAT_TABLE: &str = "public.lossproof_heartbeat";

const HEARTBEAT_DDL: &str = "CREATE TABLE IF NOT EXISTS lossproof_heartbeat (id int PRIMARY KEY, beat timestamptz NOT NULL)";

const HEARTBEAT_QUERY: &str = "INSERT INTO lossproof_heartbeat (id, beat) VALUES (1, now()) \
     ON CONFLICT (id) DO UPDATE SET beat = EXCLUDED.beat";

/// Create (or update) the connector and wait until it and its task run.
/// Creates the heartbeat table in `source` first.
pub async fn start(
    connect: &ConnectClient,
    names: &CaptureNames,
    config: &Value,
    source: &tokio_postgres::Client,
    limit: Duration,
) -> Result<()> {
    source.batch_execute(HEARTBEAT_DDL).await?;
    connect.put_config(&names.connector, config).await?;
    connect.wait_running(&names.connector, limit).await
}

/// Delete the connector and drop its slot and publication (deleting a
/// connector never drops its slot: an orphan slot pins WAL forever).
///
/// Every step is tried even when one before it fails: a connector Connect
/// cannot delete right now (a worker rebalancing after a network fault
/// answers nothing for minutes) must not keep the slot, which holds the
/// source's WAL. The delete is retried for up to [`DELETE_WITHIN`]; the
/// first error is returned.
pub async fn remove(
    connect: &ConnectClient,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
) -> Result<()> {
    let deadline = Instant::now() + DELETE_WITHIN;
    let deleted = loop {
        match connect.delete(&names.connector).await {
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            done => break done,
        }
    };
    let dropped = drop_slot(source, &names.slot, Duration::from_secs(30)).await;
    let unpublished = source
        .batch_execute(&format!(
            "DROP PUBLICATION IF EXISTS \"{}\"",
            names.publication
        ))
        .await
        .map_err(Error::from);
    deleted.and(dropped).and(unpublished)
}

/// How long [`remove`] keeps asking Connect to delete a connector.
pub const DELETE_WITHIN: Duration = Duration::from_mins(1);

/// Drop a replication slot, waiting (bounded) for its walsender to let go.
pub async fn drop_slot(source: &tokio_postgres::Client, slot: &str, limit: Duration) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let row = source
            .query_opt(
                "SELECT active, active_pid FROM pg_replication_slots WHERE slot_name = $1",
                &[&slot],
            )
            .await?;
        let Some(row) = row else { return Ok(()) };
        let active: bool = row.get(0);
        if !active {
            source
                .execute("SELECT pg_drop_replication_slot($1)", &[&slot])
                .await?;
            return Ok(());
        }
        if Instant::now() >= deadline {
            // Still held (e.g. a dead worker's connection): end it.
            let pid: Option<i32> = row.get(1);
            source
                .execute("SELECT pg_terminate_backend($1)", &[&pid])
                .await?;
        }
        if Instant::now() >= deadline + Duration::from_secs(10) {
            return Err(Error::Timeout(
                limit.as_secs() + 10,
                format!("slot {slot} stays active"),
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The source's current WAL position, taken after the workload's last write.
pub async fn current_lsn(source: &tokio_postgres::Client) -> Result<u64> {
    let row = source
        .query_one("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint", &[])
        .await?;
    Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}

/// Why the stream is not (yet) drained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotDrained {
    NoSlot,
    ConnectorNotRunning(String),
    /// The connector or a task FAILED: it will not recover by itself, so
    /// waiting longer cannot help.
    ConnectorFailed(String),
    Behind {
        confirmed: u64,
        target: u64,
    },
}

impl std::fmt::Display for NotDrained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoSlot => f.write_str("the replication slot does not exist"),
            Self::ConnectorNotRunning(state) => write!(f, "the connector is not running ({state})"),
            Self::ConnectorFailed(state) => write!(
                f,
                "the connector FAILED and Connect does not restart it by itself ({state})"
            ),
            Self::Behind { confirmed, target } => write!(
                f,
                "the slot confirmed LSN {} but the source is at {} ({} bytes behind)",
                show_lsn(*confirmed),
                show_lsn(*target),
                target - confirmed
            ),
        }
    }
}

/// One look: connector and task RUNNING, and the slot's confirmed LSN at or
/// past `target`. (A dead connector looks exactly like a drained stream, so
/// both are required.)
pub async fn drained_now(
    connect: &ConnectClient,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    target: u64,
) -> Result<Result<(), NotDrained>> {
    match connect.status(&names.connector).await? {
        Some(status) if status.running() => {}
        Some(status) if status.failed() => {
            return Ok(Err(NotDrained::ConnectorFailed(format!(
                "{} {:?}",
                status.connector, status.tasks
            ))));
        }
        Some(status) => {
            return Ok(Err(NotDrained::ConnectorNotRunning(format!(
                "{} {:?}",
                status.connector, status.tasks
            ))));
        }
        None => {
            return Ok(Err(NotDrained::ConnectorNotRunning(
                "no such connector".into(),
            )));
        }
    }
    let row = source
        .query_opt(
            "SELECT (confirmed_flush_lsn - '0/0'::pg_lsn)::bigint FROM pg_replication_slots WHERE slot_name = $1",
            &[&names.slot],
        )
        .await?;
    let Some(row) = row else {
        return Ok(Err(NotDrained::NoSlot));
    };
    let confirmed = row
        .get::<_, Option<i64>>(0)
        .and_then(|v| u64::try_from(v).ok())
        .unwrap_or(0);
    if confirmed >= target {
        Ok(Ok(()))
    } else {
        Ok(Err(NotDrained::Behind { confirmed, target }))
    }
}

/// Wait (bounded) until drained; the error says why not.
pub async fn wait_drained(
    connect: &ConnectClient,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    target: u64,
    limit: Duration,
) -> Result<Result<(), NotDrained>> {
    let deadline = Instant::now() + limit;
    loop {
        let now = drained_now(connect, names, source, target).await?;
        let hopeless = matches!(now, Err(NotDrained::ConnectorFailed(_)));
        if now.is_ok() || hopeless || Instant::now() >= deadline {
            return Ok(now);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `0/16B3748` form.
#[must_use]
pub fn show_lsn(lsn: u64) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_owns_its_topics_and_heartbeat_not_a_longer_prefix() {
        for name in [
            "lp_runs1.public.orders",
            "lp_runs1.transaction",
            "lp_runs1.public.orders-value",
            "__debezium-heartbeat.lp_runs1",
            "__debezium-heartbeat.lp_runs1-key",
        ] {
            assert!(owned_by("lp_runs1", name), "{name}");
        }
        for name in [
            "lp_runs10.public.orders",
            "__debezium-heartbeat.lp_runs10",
            "__debezium-heartbeat.lp_runs1.x",
            "lp_runs1",
        ] {
            assert!(!owned_by("lp_runs1", name), "{name}");
        }
    }

    #[test]
    fn names_carry_the_run_id_and_are_valid_identifiers() {
        let names = CaptureNames::for_run("2026-11-30T01:02 seed 7");
        assert_eq!(names.slot, "lp_2026_11_30t01_02_seed_7");
        assert_eq!(names.connector, "lp-2026_11_30t01_02_seed_7");
        assert_eq!(
            names.topic("public", "orders"),
            "lp_2026_11_30t01_02_seed_7.public.orders"
        );
        assert!(
            names
                .slot
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        );
    }

    #[test]
    fn lsn_display() {
        assert_eq!(show_lsn(0x0000_0001_0000_00ff), "1/FF");
    }
}
