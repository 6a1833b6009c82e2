//! Rendering diagnostics with miette, in colour for people and without
//! colour at a fixed width for snapshot tests.

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode};

use crate::analyzer::Source;
use crate::diagnostic::Diagnostic;

/// How to draw diagnostics.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
    pub width: usize,
}

impl Style {
    /// What snapshot tests use: no colour, 100 columns.
    pub const PLAIN: Style = Style {
        color: false,
        width: 100,
    };
}

/// Render every diagnostic, in order.
///
/// # Panics
/// Never in practice: rendering writes into a `String`.
#[must_use]
pub fn render(sources: &[Source], diagnostics: &[Diagnostic], style: Style) -> String {
    let theme = if style.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(style.width)
        .with_links(false);
    let mut out = String::new();
    for diagnostic in diagnostics {
        let shown = Shown::new(sources, diagnostic);
        handler
            .render_report(&mut out, &shown)
            .expect("rendering into a String cannot fail");
    }
    out
}

/// `file:line:col` of a byte offset, 1-based.
#[must_use]
pub fn location(sources: &[Source], span: crate::span::Span) -> String {
    let source = &sources[span.source];
    let (line, col) = line_col(&source.text, span.start);
    format!("{}:{line}:{col}", source.name)
}

/// 1-based line and column (in characters) of a byte offset.
#[must_use]
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

/// A diagnostic paired with its source, in the form miette draws.
struct Shown<'a> {
    diagnostic: &'a Diagnostic,
    source: NamedSource<String>,
    labels: Vec<LabeledSpan>,
    help: Option<String>,
}

impl<'a> Shown<'a> {
    fn new(sources: &[Source], diagnostic: &'a Diagnostic) -> Self {
        let home = &sources[diagnostic.span.source];
        let mut labels = vec![LabeledSpan::new_primary_with_span(
            Some(diagnostic.label.clone()).filter(|l| !l.is_empty()),
            diagnostic.span,
        )];
        let mut elsewhere = Vec::new();
        for (span, label) in &diagnostic.related {
            if span.source == diagnostic.span.source {
                labels.push(LabeledSpan::new_with_span(Some(label.clone()), *span));
            } else {
                elsewhere.push(format!("{label}: {}", location(sources, *span)));
            }
        }
        let help = match (&diagnostic.help, elsewhere.is_empty()) {
            (help, true) => help.clone(),
            (Some(help), false) => Some(format!("{help}\n{}", elsewhere.join("\n"))),
            (None, false) => Some(elsewhere.join("\n")),
        };
        Shown {
            diagnostic,
            source: NamedSource::new(home.name.clone(), home.text.clone()),
            labels,
            help,
        }
    }
}

impl std::fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.diagnostic, f)
    }
}

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.diagnostic.message)
    }
}

impl std::error::Error for Shown<'_> {}

impl miette::Diagnostic for Shown<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        Some(Box::new(self.diagnostic.code.as_str()))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(miette::Severity::Error)
    }

    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(self.labels.iter().cloned()))
    }
}
