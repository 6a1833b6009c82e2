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
        pattern: "every fault fired",
        sql: "SELECT count(*) = 0 FROM faults WHERE NOT fired",
        summary: "Every planned fault occurrence really fired (none was skipped, e.g. because its target was already down).",
    },
];
