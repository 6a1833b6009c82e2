//! Assertion shorthands: `expect …` lines and the SQL they stand for.
//! The SQL runs over the reconciler's tables (`diff`, `faults`, …).

use lossproof_lang::vocabulary::ShorthandSig;

pub(crate) const SHORTHANDS: &[ShorthandSig] = &[
    ShorthandSig {
        pattern: "consumer {consumer:consumer} clean",
        sql: "SELECT count(*) = 0 FROM diff WHERE consumer = '{consumer}'",
        summary: "The consumer's lake matches the source exactly: no diff rows.",
    },
    ShorthandSig {
        pattern: "consumer {consumer:consumer} damaged",
        sql: "SELECT count(*) > 0 FROM diff WHERE consumer = '{consumer}'",
        summary: "The consumer's lake differs from the source in at least one row.",
    },
    ShorthandSig {
        pattern: "consumer {consumer:consumer} at most {count:count} wrong rows",
        sql: "SELECT count(*) <= {count} FROM diff WHERE consumer = '{consumer}'",
        summary: "The consumer's lake has at most N diff rows.",
    },
    ShorthandSig {
        pattern: "consumer {consumer:consumer} fresh within {bound:duration} {share:percent} of the time",
        sql: "SELECT count(*) > 0 AND sum(CASE WHEN lag_ms <= {bound} THEN 1 ELSE 0 END) * 100.0 >= {share} * count(*) FROM freshness WHERE consumer = '{consumer}' AND method = 'probe'",
        summary: "A reader of the consumer's lake was at most the bound behind the source for at least that share of the seed's load phases (the freshness probe's lag, sampled every 100 ms; docs/run.md).",
    },
    ShorthandSig {
        pattern: "consumer {consumer:consumer} fresh within {bound:duration}",
        sql: "SELECT count(*) > 0 AND max(lag_ms) <= {bound} FROM freshness WHERE consumer = '{consumer}' AND method = 'probe'",
        summary: "A reader of the consumer's lake was never more than the bound behind the source during the seed's load phases (the freshness probe's lag, sampled every 100 ms; docs/run.md).",
    },
    ShorthandSig {
        pattern: "consumer {consumer:consumer} consistent",
        sql: "SELECT count(*) = 1 AND max(checked) > 0 AND max(inconsistent) = 0 AND max(unchecked) = 0 AND max(CASE WHEN followed_to_end THEN 1 ELSE 0 END) = 1 FROM snapshot_summary WHERE consumer = '{consumer}'",
        summary: "Every snapshot the consumer published was a state the source had after one of its transactions, no key going back in time: each was checked (none expired unread, the follower read to the end) and at least one was (docs/run.md, \"Snapshots\").",
    },
    ShorthandSig {
        pattern: "every fault fired",
        sql: "SELECT count(*) = 0 FROM faults WHERE NOT fired",
        summary: "Every planned fault occurrence really fired (none was skipped, e.g. because its target was already down).",
    },
];
