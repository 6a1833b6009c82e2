//! Every fault a scenario can strike: registered name, how it is written,
//! and what it does. Adding a fault = one entry here (and, with the runtime,
//! one implementation file registered under the same name).

use lossproof_lang::vocabulary::FaultSig;

pub const FAULTS: &[FaultSig] = &[
    FaultSig {
        name: "kill",
        pattern: "kill {target:process}",
        summary: "SIGKILL the process; lossproof's supervisor starts it again at once, as systemd or Kubernetes would.",
    },
    FaultSig {
        name: "stop",
        pattern: "stop {target:process}",
        summary: "SIGTERM the process (a graceful stop); it stays down until `restart`.",
    },
    FaultSig {
        name: "pause",
        pattern: "pause {target:target}",
        summary: "SIGSTOP a process (it freezes, holding its connections), or pause the connector through the Connect REST API.",
    },
    FaultSig {
        name: "resume",
        pattern: "resume {target:target}",
        summary: "SIGCONT a paused process, or resume a paused connector.",
    },
    FaultSig {
        name: "restart",
        pattern: "restart {target:target}",
        summary: "Stop the process gracefully and start it again (or start it if stopped); for `connector`, restart the connector and its tasks through REST.",
    },
    FaultSig {
        name: "widen-column",
        pattern: "alter table {table:table} widen {column:widenable_column}",
        summary: "ALTER TABLE … ALTER COLUMN … TYPE to the next wider type (integer -> bigint, numeric(10,2) -> numeric(14,2)).",
    },
    FaultSig {
        name: "add-column",
        pattern: "alter table {table:table} add column {column:new_column}",
        summary: "ALTER TABLE … ADD COLUMN (text, nullable); later rows fill it.",
    },
    FaultSig {
        name: "drop-column",
        pattern: "alter table {table:table} drop column {column:column}",
        summary: "ALTER TABLE … DROP COLUMN.",
    },
    FaultSig {
        name: "rename-column",
        pattern: "alter table {table:table} rename column {column:column} to {new_name:new_column}",
        summary: "ALTER TABLE … RENAME COLUMN.",
    },
    FaultSig {
        name: "redeliver",
        pattern: "redeliver from start [{times:count} times]",
        summary: "Rewind every consumer's position to the beginning of the topics, so the whole stream is delivered again (once, or N times).",
    },
    FaultSig {
        name: "duplicate",
        pattern: "duplicate {share:percent}",
        summary: "Re-send a share of the change events, as a producer retry after a lost acknowledgement would.",
    },
    FaultSig {
        name: "recreate-connector",
        pattern: "recreate connector",
        summary: "Delete the Debezium connector and create it again under the same name (its replication slot is kept).",
    },
    FaultSig {
        name: "drop-slot",
        pattern: "drop slot",
        summary: "Drop the connector's replication slot in the source PostgreSQL.",
    },
    FaultSig {
        name: "delay-network",
        pattern: "delay network to {target:link} {delay:duration} [jitter {jitter:duration}] [for {length:duration}]",
        summary: "Hold every byte to and from the target DELAY (± JITTER, drawn from the seed) in each direction, through the fault proxy, for the given time or to the end of the block.",
    },
    FaultSig {
        name: "limit-network",
        pattern: "limit network to {target:link} {rate:count} kilobytes per second [for {length:duration}]",
        summary: "Cap the link to the target at N kB/s in each direction (all its connections together), for the given time or to the end of the block.",
    },
    FaultSig {
        name: "cut-network",
        pattern: "cut network to {target:link} for {length:duration}",
        summary: "Refuse every new connection to the target and stall the open ones (nothing read or written) for the given time.",
    },
    FaultSig {
        name: "reset-network",
        pattern: "reset network to {target:link}",
        summary: "Reset every open connection to the target at once (RST to both ends); clients must reconnect.",
    },
    FaultSig {
        name: "blackhole-network",
        pattern: "blackhole network to {target:link} for {length:duration}",
        summary: "Accept every byte to and from the target and deliver none, with the connections left open, for the given time.",
    },
    FaultSig {
        name: "slow-close",
        pattern: "delay close to {target:link} {delay:duration} [for {length:duration}]",
        summary: "Pass on each connection close (FIN) to or from the target DELAY late, for the given time or to the end of the block.",
    },
    FaultSig {
        name: "inject-junk",
        pattern: "inject junk into topic {table:topic} [{count:count} messages]",
        summary: "Produce undecodable and schema-violating records into the table's topic (1 unless a count is given).",
    },
    FaultSig {
        name: "compact-table",
        pattern: "compact table {table:table}",
        summary: "Run the compaction job on the table in every consumer's lake, racing the consumers' commits.",
    },
    FaultSig {
        name: "expire-snapshots",
        pattern: "expire snapshots",
        summary: "Expire old Iceberg snapshots in every lake and delete the files no snapshot references.",
    },
    FaultSig {
        name: "run-nightly",
        pattern: "run nightly",
        summary: "Run the nightly workflow on the correct consumer's lake: compact, reconcile, then rebuild the dbt marts, as Step Functions on moto server; the marts are rebuilt only after a clean reconcile. Its outcome (SUCCEEDED, or FAILED at a state with the error) is in the faults table.",
    },
    FaultSig {
        name: "fill-broker",
        pattern: "fill broker [for {length:duration}]",
        summary: "Make the broker's storage refuse every write, as a full disk does (reads still work), for the given time or to the end of the block.",
    },
];
