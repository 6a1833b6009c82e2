//! Every diagnostic code lossproof's language can emit, in one place.
//! `docs/diagnostics.md` documents each of them; a test keeps the two in step.

use serde::{Deserialize, Serialize};

use crate::diagnostic::Diagnostic;
use crate::span::Span;

macro_rules! codes {
    ($($variant:ident => $code:literal, $title:literal;)*) => {
        /// A stable diagnostic code. The string form (`lp::check::missing-unit`)
        /// never changes meaning once released.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum Code { $($variant,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)* }
            }

            /// A short description, for documentation and editors.
            #[must_use]
            pub fn title(self) -> &'static str {
                match self { $(Code::$variant => $title,)* }
            }
        }
    };
}

codes! {
    Syntax => "lp::parse::syntax", "the text does not follow the grammar";
    UnclosedBlock => "lp::parse::unclosed-block", "a `<` block has no matching `>`";
    UnclosedFence => "lp::parse::unclosed-fence", "a ``` SQL fence is never closed";
    UnclosedString => "lp::parse::unclosed-string", "a string has no closing quote";
    UnknownItem => "lp::check::unknown-item", "a line starts with a word that is neither a keyword nor a fault";
    ActionOutsidePhase => "lp::check::action-outside-phase", "a fault is written outside any phase";
    MissingUnit => "lp::check::missing-unit", "a number needs a unit";
    WrongUnit => "lp::check::wrong-unit", "a number has a unit that does not fit here";
    BadNumber => "lp::check::bad-number", "a number is out of range or not a whole number";
    UnknownFault => "lp::check::unknown-fault", "no fault in the stdlib starts with this word";
    FaultArguments => "lp::check::fault-arguments", "a fault's words do not match its signature";
    UnknownTarget => "lp::check::unknown-target", "an unknown target";
    TargetNotInScenario => "lp::check::target-not-in-scenario", "a target the scenario does not run";
    UnknownTable => "lp::check::unknown-table", "the workload has no such table";
    UnknownColumn => "lp::check::unknown-column", "the table has no such column";
    ColumnExists => "lp::check::column-exists", "the table already has this column";
    CannotWiden => "lp::check::cannot-widen", "the column's type has no wider type";
    UnknownWorkload => "lp::check::unknown-workload", "the stdlib has no such workload";
    WorkloadParam => "lp::check::workload-param", "an unknown or malformed workload parameter";
    MixTotal => "lp::check::mix-total", "the workload's operation mix does not add up to 100%";
    UnknownConsumer => "lp::check::unknown-consumer", "the stdlib has no such consumer";
    ConsumerDeclaration => "lp::check::consumer-declaration", "a `consumer … command` declaration is malformed";
    UnknownPlaceholder => "lp::check::unknown-placeholder", "a `{placeholder}` lossproof does not fill";
    CommandNotFound => "lp::check::command-not-found", "a declared consumer's program cannot be found";
    TableDeclaration => "lp::check::table-declaration", "a `table NAME < … >` declaration is malformed";
    UnknownSetting => "lp::check::unknown-setting", "the stdlib has no such setting";
    SettingValue => "lp::check::setting-value", "a setting's value has the wrong form";
    Duplicate => "lp::check::duplicate", "something that may appear once appears twice";
    ZeroDuration => "lp::check::zero-duration", "a phase or timeout of zero length";
    ZeroPeriod => "lp::check::zero-period", "`every 0s` would fire without end";
    NeverFires => "lp::check::never-fires", "a schedule that can never fire";
    JitterTooLarge => "lp::check::jitter-too-large", "jitter as large as the period it shakes";
    AfterBlockEnd => "lp::check::after-block-end", "something scheduled after its block ends";
    EmptyWindow => "lp::check::empty-window", "a `between` window that ends before it starts";
    ChanceRange => "lp::check::chance-range", "a chance outside 0%..100%";
    TooManyOccurrences => "lp::check::too-many-occurrences", "a schedule that fires more often than a run can";
    UnknownFragment => "lp::check::unknown-fragment", "`use` names no fragment";
    FragmentCycle => "lp::check::fragment-cycle", "a fragment uses itself";
    IncludeNotFound => "lp::check::include-not-found", "an included file cannot be read";
    IncludeCycle => "lp::check::include-cycle", "a file includes itself";
    IncludeContent => "lp::check::include-content", "an included file holds more than fragments";
    UnknownAssertion => "lp::check::unknown-assertion", "an `expect` line matches no assertion shorthand";
    SqlSyntax => "lp::check::sql-syntax", "an assertion's SQL does not parse";
    SqlNotReadOnly => "lp::check::sql-not-read-only", "an assertion's SQL is not a single read-only query";
    SqlDoesNotPlan => "lp::check::sql-does-not-plan", "an assertion's SQL names a table, column or function the reconciler's tables do not have";
    NoPhases => "lp::check::no-phases", "a scenario with nothing to run";
    CannotStrike => "lp::check::cannot-strike", "a fault the stack profile gives lossproof no way to strike";
}

impl Code {
    /// Start a diagnostic with this code at `span`.
    #[must_use]
    pub fn at(self, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(self, span, message)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
