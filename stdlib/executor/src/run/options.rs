//! [`Options`]: how a run executes its seeds, and [`Locations`]: where a
//! plan's statements are written.

use std::path::PathBuf;

use lossproof_lang::Plan;

use super::Interrupt;

/// How a run executes its seeds.
#[derive(Debug, Clone)]
pub struct Options {
    pub state: PathBuf,
    /// The external profile the run is on (`run --profile`), passed on to
    /// the consumers and the compactor.
    pub profile: Option<PathBuf>,
    /// The `lossproof` binary (runs the consumers).
    pub program: PathBuf,
    /// The scenario file's folder: declared consumers' commands run there.
    pub scenario_dir: PathBuf,
    /// Consumers under test.
    pub consumers: Vec<String>,
    /// Prefix of every seed's run id (letters and digits).
    pub run_id: String,
    /// Keep a failed seed's lake, source database and topics, and write its diff.
    pub keep: bool,
    /// Turns to `Some("SIGINT")`/`Some("SIGTERM")` when the run is told to
    /// stop: the seed under way stops, is cleaned up and is INVALID.
    pub interrupt: Interrupt,
    /// `file:line:col` of each of the plan's actions and assertions (by
    /// index), for the live log, the record, JUnit and HTML.
    pub locations: Locations,
}

impl Options {
    /// Seed `seed`'s run id, `<run id>s<seed>`: what every name of the seed
    /// carries.
    #[must_use]
    pub fn run_of(&self, seed: u64) -> String {
        format!("{}s{seed}", self.run_id)
    }
}

/// Where the plan's actions and assertions are written in the `.lp` files.
#[derive(Debug, Clone, Default)]
pub struct Locations {
    pub actions: Vec<String>,
    pub assertions: Vec<String>,
    /// Of each declared consumer (`plan.declared`, by index).
    pub declared: Vec<String>,
}

impl Locations {
    /// Render every span of `plan` with the analysed `sources`.
    #[must_use]
    pub fn of(plan: &Plan, sources: &[lossproof_lang::analyzer::Source]) -> Self {
        let at = |span| lossproof_lang::render::location(sources, span);
        Self {
            actions: plan.actions.iter().map(|a| at(a.span)).collect(),
            assertions: plan.assertions.iter().map(|a| at(a.span)).collect(),
            declared: plan.declared.iter().map(|d| at(d.span)).collect(),
        }
    }

    pub(crate) fn action(&self, index: usize) -> String {
        self.actions.get(index).cloned().unwrap_or_default()
    }
}
