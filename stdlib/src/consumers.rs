//! The two reference consumers (see docs and FINDINGS: careless vs correct).

use lossproof_lang::vocabulary::ConsumerSig;

pub const CONSUMERS: &[ConsumerSig] = &[
    ConsumerSig {
        name: "careless",
        summary: "Auto-commits offsets on a timer, applies in arrival order, writes each batch as a delete commit then an append commit, fixed schema, logs errors and carries on.",
    },
    ConsumerSig {
        name: "correct",
        summary: "Offsets in the same Iceberg commit as the rows, merges by key and LSN, keeps tombstones, widens its schema, dead-letters junk, re-applies after losing a commit race.",
    },
];
