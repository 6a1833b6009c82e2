//! The components faults can strike, one row each: how the language
//! checks it ([`TargetSig`]) and whether it is a process of the stack that
//! every seed under way shares.

use lossproof_lang::vocabulary::TargetSig;

/// One target of the vocabulary.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub sig: TargetSig,
    /// A process of the stack every seed shares (`connect`, `broker`,
    /// `postgres`, `registry`), as opposed to one seed's own consumers,
    /// compactor or connector: `--jobs` refuses a fault on it, and on an
    /// external stack lossproof did not start it, so sends it no signal.
    pub shared: bool,
}

pub const TARGETS: &[Target] = &[
    Target {
        sig: TargetSig {
            name: "consumer",
            process: true,
            takes_consumer: true,
            link: false,
            summary: "Every consumer under test, or one by name (`consumer careless`).",
        },
        shared: false,
    },
    Target {
        sig: TargetSig {
            name: "connect",
            process: true,
            takes_consumer: false,
            link: false,
            summary: "The Kafka Connect worker process that runs Debezium.",
        },
        shared: true,
    },
    Target {
        sig: TargetSig {
            name: "connector",
            process: false,
            takes_consumer: false,
            link: false,
            summary: "The Debezium connector, through the Connect REST API.",
        },
        shared: false,
    },
    Target {
        sig: TargetSig {
            name: "broker",
            process: true,
            takes_consumer: false,
            link: true,
            summary: "The Kafka-protocol broker.",
        },
        shared: true,
    },
    Target {
        sig: TargetSig {
            name: "postgres",
            process: true,
            takes_consumer: false,
            link: true,
            summary: "The source PostgreSQL server (its network link: Debezium's connections to it).",
        },
        shared: true,
    },
    Target {
        sig: TargetSig {
            name: "registry",
            process: true,
            takes_consumer: false,
            link: true,
            summary: "The schema registry.",
        },
        shared: true,
    },
    Target {
        sig: TargetSig {
            name: "compactor",
            process: true,
            takes_consumer: false,
            link: false,
            summary: "The lake's compaction job: a process compacting every table of each consumer's lake every `compaction_every`, run in a scenario that names it.",
        },
        shared: false,
    },
];
