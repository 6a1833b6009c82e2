//! The reference consumers' words (docs/consumers.md, FINDINGS: careless
//! vs correct). Each row has one implementation of
//! `lossproof_consumers::Consumer` (its program, the options it takes,
//! where it keeps its offsets); a test keeps the two lists in step.

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
