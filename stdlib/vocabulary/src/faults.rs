//! Every fault a scenario can strike, one row each: its registered name,
//! how it is written, what it does, and what the executor and `check` need
//! to know of it ([`Fault`]'s fields; a row names only where it differs
//! from the defaults). Adding a fault = one row here, one function in
//! `stdlib/executor/src/fault/` and one line in its `REGISTRY`
//! (CONTRIBUTING.md, "Adding a fault").

use std::time::Duration;

use crate::fault::{Fault, Lasts, Needs};

pub const FAULTS: &[Fault] = &[
    Fault::new(
        "kill",
        "kill {target:process}",
        "SIGKILL the process; lossproof's supervisor starts it again at once, as systemd or Kubernetes would.",
    )
    .needs(Needs::TargetProcess),
    Fault::new(
        "stop",
        "stop {target:process}",
        "SIGTERM the process (a graceful stop); it stays down until `restart`.",
    )
    .needs(Needs::TargetProcess),
    Fault::new(
        "pause",
        "pause {target:target}",
        "SIGSTOP a process (it freezes, holding its connections), or pause the connector through the Connect REST API.",
    )
    .needs(Needs::TargetProcess),
    Fault::new(
        "resume",
        "resume {target:target}",
        "SIGCONT a paused process, or resume a paused connector.",
    )
    .needs(Needs::TargetProcess),
    Fault::new(
        "restart",
        "restart {target:target}",
        "Stop the process gracefully and start it again (or start it if stopped); for `connector`, restart the connector and its tasks through REST.",
    )
    .needs(Needs::TargetProcess),
    Fault::new(
        "widen-column",
        "alter table {table:table} widen {column:widenable_column}",
        "ALTER TABLE … ALTER COLUMN … TYPE to the next wider type (integer -> bigint, numeric(10,2) -> numeric(14,2)).",
    ),
    Fault::new(
        "add-column",
        "alter table {table:table} add column {column:new_column}",
        "ALTER TABLE … ADD COLUMN (text, nullable); later rows fill it.",
    ),
    Fault::new(
        "drop-column",
        "alter table {table:table} drop column {column:column}",
        "ALTER TABLE … DROP COLUMN.",
    ),
    Fault::new(
        "rename-column",
        "alter table {table:table} rename column {column:column} to {new_name:new_column}",
        "ALTER TABLE … RENAME COLUMN.",
    ),
    Fault::new(
        "redeliver",
        "redeliver from start [{times:count} times]",
        "Rewind every consumer's position to the beginning of the topics, so the whole stream is delivered again (once, or N times).",
    ),
    Fault::new(
        "duplicate",
        "duplicate {share:percent}",
        "Re-send a share of the records reaching the change topics, never its own copies, as a producer retry after a lost acknowledgement would; counts what it copied (the `faults` table).",
    )
    .lasts(Lasts::Phase),
    Fault::new(
        "recreate-connector",
        "recreate connector",
        "Delete the Debezium connector and create it again under the same name (its replication slot is kept).",
    ),
    Fault::new(
        "drop-slot",
        "drop slot",
        "Drop the connector's replication slot in the source PostgreSQL.",
    ),
    Fault::new(
        "delay-network",
        "delay network to {target:link} {delay:duration} [jitter {jitter:duration}] [for {length:duration}]",
        "Hold every byte to and from the target DELAY (± JITTER, drawn from the seed) in each direction, through the fault proxy, for the given time or to the end of the block.",
    )
    .needs(Needs::Proxy)
    .lasts(Lasts::ForLength),
    Fault::new(
        "limit-network",
        "limit network to {target:link} {rate:count} kilobytes per second [for {length:duration}]",
        "Cap the link to the target at N kB/s in each direction (all its connections together), for the given time or to the end of the block.",
    )
    .needs(Needs::Proxy)
    .lasts(Lasts::ForLength),
    Fault::new(
        "cut-network",
        "cut network to {target:link} for {length:duration}",
        "Refuse every new connection to the target and stall the open ones (nothing read or written) for the given time.",
    )
    .needs(Needs::Proxy)
    .lasts(Lasts::ForLength),
    Fault::new(
        "reset-network",
        "reset network to {target:link}",
        "Reset every open connection to the target at once (RST to both ends); clients must reconnect.",
    )
    .needs(Needs::Proxy),
    Fault::new(
        "blackhole-network",
        "blackhole network to {target:link} for {length:duration}",
        "Accept every byte to and from the target and deliver none, with the connections left open, for the given time.",
    )
    .needs(Needs::Proxy)
    .lasts(Lasts::ForLength),
    Fault::new(
        "slow-close",
        "delay close to {target:link} {delay:duration} [for {length:duration}]",
        "Pass on each connection close (FIN) to or from the target DELAY late, for the given time or to the end of the block.",
    )
    .needs(Needs::Proxy)
    .lasts(Lasts::ForLength),
    Fault::new(
        "inject-junk",
        "inject junk into topic {table:topic} [{count:count} messages]",
        "Produce undecodable and schema-violating records into the table's topic (1 unless a count is given); counts what it produced (the `faults` table).",
    ),
    Fault::new(
        "compact-table",
        "compact table {table:table}",
        "Run the compaction job on the table in every consumer's lake, racing the consumers' commits.",
    ),
    Fault::new(
        "expire-snapshots",
        "expire snapshots",
        "Expire old Iceberg snapshots in every lake and delete the files no snapshot references.",
    ),
    Fault::new(
        "run-nightly",
        "run nightly",
        "Run the nightly workflow on the correct consumer's lake: compact, reconcile, then rebuild the dbt marts, as Step Functions on moto server; the marts are rebuilt only after a clean reconcile. Its outcome (SUCCEEDED, or FAILED at a state with the error) is in the faults table.",
    )
    // The workflow itself ends two minutes sooner (executor fault/nightly.rs).
    .limit(Duration::from_mins(12)),
    Fault::new(
        "fill-broker",
        "fill broker [for {length:duration}]",
        "Make the broker's storage refuse every write, as a full disk does (reads still work), for the given time or to the end of the block.",
    )
    .needs(Needs::BrokerStorage)
    .lasts(Lasts::ForLength)
    .shared(),
];
