//! [`Consumer`]: a reference consumer as the executor drives it — its
//! program, the options it takes from a scenario, where it keeps its
//! offsets. A team's own consumer (`consumer NAME command "…"`) says the
//! same in its declaration (`lossproof_lang::plan::DeclaredConsumer`).

use std::ffi::OsString;

use lossproof_lang::Plan;
use lossproof_lang::plan::OffsetsAt;

/// One reference consumer: a row of `lossproof_vocabulary::CONSUMERS` and
/// a `lossproof consumer NAME` program.
pub trait Consumer: Sync {
    /// Its word in the vocabulary.
    fn name(&self) -> &'static str;

    /// `lossproof` arguments that start it for a scenario: `consumer NAME`
    /// and the options `plan`'s settings give it (the executor adds the
    /// seed's own: `--run`, `--state`, `--tables`, `--profile`,
    /// `--messages`).
    fn command(&self, plan: &Plan) -> Vec<OsString>;

    /// Where it keeps the Kafka offsets it reached: the drain gate checks
    /// the group's, and a lake table's too when it keeps them there.
    fn offsets(&self) -> OffsetsAt;

    /// SQL over its namespace giving, per key, the source transaction its
    /// lake holds (`table`, `key`, `tx`), when it keeps one: what lets a
    /// live source be reconciled against it.
    fn applied(&self, _namespace: &str) -> Option<String> {
        None
    }
}

/// Every reference consumer, in the vocabulary's order.
pub const ALL: &[&dyn Consumer] = &[&crate::careless::Careless, &crate::correct::Correct];

/// The reference consumer called `name`, if there is one.
#[must_use]
pub fn find(name: &str) -> Option<&'static dyn Consumer> {
    ALL.iter().copied().find(|c| c.name() == name)
}

/// `--batch N` from `set consumer_batch N`.
pub(crate) fn batch_option(plan: &Plan) -> Vec<OsString> {
    match plan.settings.get("consumer_batch") {
        Some(lossproof_lang::plan::SettingValue::Count(n)) => {
            vec!["--batch".into(), n.to_string().into()]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every consumer word of the vocabulary has one implementation, and
    /// every implementation a word.
    #[test]
    fn every_word_has_one_consumer() {
        let words: Vec<&str> = lossproof_vocabulary::CONSUMERS
            .iter()
            .map(|c| c.name)
            .collect();
        let implemented: Vec<&str> = ALL.iter().map(|c| c.name()).collect();
        assert_eq!(words, implemented);
    }
}
