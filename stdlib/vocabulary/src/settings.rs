//! Scenario-wide settings (`set NAME VALUE`).

use lossproof_lang::vocabulary::{SettingKind, SettingSig};

pub(crate) const SETTINGS: &[SettingSig] = &[
    SettingSig {
        name: "consumer_batch",
        kind: SettingKind::Count {
            min: 1,
            max: 100_000,
        },
        default: "500",
        summary: "Most change events a consumer applies in one batch.",
    },
    SettingSig {
        name: "autocommit_interval",
        kind: SettingKind::Duration,
        default: "5s",
        summary: "How often the careless consumer's Kafka client auto-commits its offsets.",
    },
    SettingSig {
        name: "replica_identity",
        kind: SettingKind::Choice(&["default", "full"]),
        default: "default",
        summary: "REPLICA IDENTITY of the source tables: `default` sends only the key in `before` and TOAST placeholders for unchanged large values; `full` sends whole rows.",
    },
    SettingSig {
        name: "compaction_every",
        kind: SettingKind::Duration,
        default: "5s",
        summary: "How long the compactor process waits between its rounds (each compacts every table of each consumer's lake). It runs only in a scenario that names the `compactor` target.",
    },
    SettingSig {
        name: "partitions",
        kind: SettingKind::Count { min: 1, max: 64 },
        default: "1",
        summary: "Partitions per change topic.",
    },
];
