//! One line about each keyword of the grammar, for hovers and completions.

/// What `keyword` (one of `lossproof_lang::parser::KEYWORDS`) is for.
pub(super) fn describe(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "scenario" => "`scenario NAME`: the scenario's name (default: the file's name).",
        "workload" => {
            "`workload NAME [rate RATE] [connections N] [customers N] [mix OP N% …]`: the seeded load on the source."
        }
        "consumers" => "`consumers NAME, …`: the consumers under test (default: all of them).",
        "consumer" => {
            "`consumer NAME command \"PROGRAM ARGS\" [offsets in group|lake TABLE] [reads topics|source] [lake mirror|changelog]`: a consumer of your own, started and struck like lossproof's (docs/bring-your-own.md)."
        }
        "set" => "`set NAME VALUE`: a scenario-wide setting.",
        "table" => {
            "`table NAME < COLUMN TYPE … >`: a source table of the scenario's own workload, one column or constraint per line (docs/language.md)."
        }
        "include" => {
            "`include \"PATH\"`: a file of fragments, relative to this file (`stdlib/…` ships with lossproof)."
        }
        "fragment" => "`fragment NAME < … >`: named statements, timed where they are `use`d.",
        "use" => "`use NAME`: a fragment's statements, timed in this block.",
        "under" | "load" => "`under load DURATION < … >`: a phase with the workload running.",
        "quiet" => "`quiet DURATION [< … >]`: a phase without workload; faults inside still fire.",
        "drain" | "within" => {
            "`drain within DURATION`: wait until the stream is provably drained; if it is not by then, the seed is invalid."
        }
        "between" | "and" => {
            "`between START and END < … >`: a window inside a block; its statements are timed from START."
        }
        "at" => "`at DURATION`: fire once, at that offset from the start of the block.",
        "every" => "`every DURATION[±JITTER]`: fire periodically while inside the block.",
        "times" | "randomly" => {
            "`N times randomly`: fire N times at random moments within the block."
        }
        "with" | "chance" => "`with chance N%`: each occurrence fires only with that probability.",
        "assert" => {
            "`assert \"NAME\" [expect …] ```sql … ````: a read-only SQL query over the reconciler's tables that must hold."
        }
        "expect" => "`expect …`: an assertion shorthand, or what an `assert` query must return.",
        "true" => {
            "`expect true`: the query returns one row holding one true boolean (the default)."
        }
        "empty" => "`expect empty`: the query returns no rows.",
        _ => return None,
    })
}

/// What a word of a `table NAME < … >` line means.
pub(super) fn describe_table_word(word: &str) -> Option<&'static str> {
    Some(match word {
        "primary" | "key" => {
            "`primary key (A, …)` or a column's `primary key`: the key the reconciler compares rows by; every table needs one."
        }
        "foreign" | "references" => {
            "`foreign key (A, …) references TABLE [on delete cascade]` or a column's `references TABLE`: to TABLE's primary key, column for column."
        }
        "on" | "delete" | "cascade" => {
            "`on delete cascade`: deleting the parent deletes this row (the `cascade` operation deletes such parents)."
        }
        "not" | "null" => "`not null`: the generator never writes NULL here.",
        "large" => {
            "`large` (text only): 4,000 random characters, stored out of line (TOAST); most updates leave it untouched, so under REPLICA IDENTITY DEFAULT Debezium sends `__debezium_unavailable_value`."
        }
        "replica" | "identity" | "full" | "default" => {
            "`replica identity full|default`: this table's REPLICA IDENTITY, over `set replica_identity`."
        }
        _ => return None,
    })
}

/// What a clause word of a `consumer NAME command …` declaration means.
pub(super) fn describe_clause(word: &str) -> Option<&'static str> {
    Some(match word {
        "command" => {
            "`command \"PROGRAM ARGS\"`: what lossproof starts, in the scenario's folder, split like a shell would; `{run}`, `{consumer}`, `{namespace}`, `{group}` are filled per seed."
        }
        "offsets" | "in" | "group" => {
            "`offsets in group` (default): the drain gate checks the group's committed offsets; `offsets in lake TABLE`: the snapshot summaries of TABLE hold `lossproof.offset.<topic>.<partition>`."
        }
        "reads" | "topics" | "source" => {
            "`reads topics` (default): Debezium's change topics; `reads source`: the source itself, through a replication slot and publication lossproof names (`LOSSPROOF_SLOT`, `LOSSPROOF_PUBLICATION`)."
        }
        "lake" | "mirror" | "changelog" => {
            "`lake mirror` (default): a row per key; `lake changelog`: every change event (Debezium's envelope as JSON), scored by each key's latest row by `source.lsn`."
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_consumer_clause_word_is_described() {
        for word in lossproof_lang::declared::CLAUSE_WORDS {
            assert!(
                super::describe_clause(word).is_some(),
                "no description of `{word}`"
            );
        }
    }

    #[test]
    fn every_table_word_is_described() {
        for word in lossproof_lang::tables::TABLE_WORDS {
            assert!(
                super::describe_table_word(word).is_some(),
                "no description of `{word}`"
            );
        }
    }

    #[test]
    fn every_keyword_is_described() {
        for keyword in lossproof_lang::parser::KEYWORDS {
            assert!(
                super::describe(keyword).is_some(),
                "no description of `{keyword}`"
            );
        }
    }
}
