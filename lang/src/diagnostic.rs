//! One problem found in a scenario, with where it is and how to fix it.

use serde::{Deserialize, Serialize};

use crate::code::Code;
use crate::span::Span;

/// A diagnostic: a stable code, a message, a primary span with its label,
/// optional help, and secondary labels (e.g. "block opened here"). Every
/// diagnostic is an error: a scenario that has one has no plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub code: Code,
    pub message: String,
    pub span: Span,
    pub label: String,
    pub help: Option<String>,
    pub related: Vec<(Span, String)>,
}

impl Diagnostic {
    #[must_use]
    pub fn new(code: Code, span: Span, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            span,
            label: String::new(),
            help: None,
            related: Vec::new(),
        }
    }

    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    #[must_use]
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    #[must_use]
    pub fn help_opt(mut self, help: Option<String>) -> Self {
        self.help = help;
        self
    }

    #[must_use]
    pub fn related(mut self, span: Span, label: impl Into<String>) -> Self {
        self.related.push((span, label.into()));
        self
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}
