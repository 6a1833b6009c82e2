//! The components faults can strike.

use lossproof_lang::vocabulary::TargetSig;

pub const TARGETS: &[TargetSig] = &[
    TargetSig {
        name: "consumer",
        process: true,
        takes_consumer: true,
        link: false,
        summary: "Every consumer under test, or one by name (`consumer careless`).",
    },
    TargetSig {
        name: "connect",
        process: true,
        takes_consumer: false,
        link: false,
        summary: "The Kafka Connect worker process that runs Debezium.",
    },
    TargetSig {
        name: "connector",
        process: false,
        takes_consumer: false,
        link: false,
        summary: "The Debezium connector, through the Connect REST API.",
    },
    TargetSig {
        name: "broker",
        process: true,
        takes_consumer: false,
        link: true,
        summary: "The Kafka-protocol broker.",
    },
    TargetSig {
        name: "postgres",
        process: true,
        takes_consumer: false,
        link: true,
        summary: "The source PostgreSQL server (its network link: Debezium's connections to it).",
    },
    TargetSig {
        name: "registry",
        process: true,
        takes_consumer: false,
        link: true,
        summary: "The schema registry.",
    },
    TargetSig {
        name: "compactor",
        process: true,
        takes_consumer: false,
        link: false,
        summary: "The lake's compaction job: a process compacting every table of each consumer's lake every `compaction_every`, run in a scenario that names it.",
    },
];
