//! Every use in a plan of something lossproof can parse but not yet run,
//! with the reason: a fault whose row says so ([`crate::Fault::not_yet`]),
//! a setting value beyond what the stack was tested with. `lossproof run`
//! refuses a scenario that uses one before anything starts, and `lossproof
//! check --strict` reports them with their places.

use lossproof_lang::Plan;
use lossproof_lang::plan::SettingValue;
use lossproof_lang::span::Span;

/// The largest `set partitions N` the stack runs today.
pub const MAX_PARTITIONS: u64 = 16;

/// One use of something that cannot run yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    /// Where (a setting has no span in the plan).
    pub span: Option<Span>,
    pub what: String,
    pub why: &'static str,
}

/// Every use in `plan` of something that cannot run yet, in plan order.
#[must_use]
pub fn uses(plan: &Plan) -> Vec<Use> {
    let mut out = Vec::new();
    for action in &plan.actions {
        if let Some(why) = crate::fault(&action.fault).and_then(|f| f.not_yet) {
            out.push(Use {
                span: Some(action.span),
                what: format!("fault `{}`", action.text),
                why,
            });
        }
    }
    if let Some(SettingValue::Count(n)) = plan.settings.get("partitions")
        && *n > MAX_PARTITIONS
    {
        out.push(Use {
            span: None,
            what: format!("`set partitions {n}`"),
            why: "tested up to 16 partitions per topic",
        });
    }
    out
}
