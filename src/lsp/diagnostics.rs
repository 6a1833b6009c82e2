//! An [`Analysis`] (what `lossproof check` reports) as LSP diagnostics for the analysed
//! document.
//!
//! A diagnostic located in an included file (a syntax error in a fragment library, say) is
//! published on the open document, on the path of the `include` line that brought that file in
//! (directly or through nested includes), with `in PATH:LINE:COL` appended to its message and
//! the exact place in the included file as its first related location. Diagnostics are never
//! published to another file's URI: they stay with the document that caused them and disappear
//! with it.

use std::fmt::Write;
use std::path::Path;

use lossproof_lang::ast::Item;
use lossproof_lang::render::line_col;
use lossproof_lang::{Analysis, Diagnostic, Loader, Span, Vocabulary};
use lossproof_vocabulary::Stdlib;
use tower_lsp_server::ls_types::{
    self as lsp, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Uri,
};

use super::position::LineIndex;

/// Every diagnostic of `analysis`, in its order, for the document `uri` (source 0).
pub(super) fn to_lsp(analysis: &Analysis, uri: &Uri) -> Vec<lsp::Diagnostic> {
    let files = Files::new(analysis, uri);
    analysis
        .diagnostics
        .iter()
        .map(|diagnostic| files.convert(diagnostic))
        .collect()
}

/// The analysed sources, with what is needed to point into each.
struct Files<'a> {
    analysis: &'a Analysis,
    indexes: Vec<LineIndex<'a>>,
    uris: Vec<Option<Uri>>,
    /// For each top-level `include` of the document that loaded a file: the index of that
    /// file's source and the span of the include's path. Sorted by source.
    includes: Vec<(usize, Span)>,
}

impl<'a> Files<'a> {
    fn new(analysis: &'a Analysis, uri: &Uri) -> Self {
        let sources = &analysis.sources;
        let indexes = sources.iter().map(|s| LineIndex::new(&s.text)).collect();
        let uris = sources
            .iter()
            .enumerate()
            .map(|(i, source)| {
                if i == 0 {
                    Some(uri.clone())
                } else {
                    file_uri(&source.name)
                }
            })
            .collect();
        Self {
            analysis,
            indexes,
            uris,
            includes: top_level_includes(analysis),
        }
    }

    fn location(&self, span: Span) -> Option<Location> {
        let uri = self.uris.get(span.source)?.clone()?;
        Some(Location::new(
            uri,
            self.indexes[span.source].range(span.start, span.end),
        ))
    }

    /// The top-level include through which source `source` (> 0) was loaded.
    fn include_of(&self, source: usize) -> Option<Span> {
        let at = self.includes.partition_point(|&(s, _)| s <= source);
        at.checked_sub(1).map(|i| self.includes[i].1)
    }

    fn convert(&self, diagnostic: &Diagnostic) -> lsp::Diagnostic {
        let span = diagnostic.span;
        let mut message = diagnostic.message.clone();
        if let Some(help) = &diagnostic.help {
            message.push_str("\nhelp: ");
            message.push_str(help);
        }
        let mut related = Vec::new();
        let range = if span.source == 0 {
            self.indexes[0].range(span.start, span.end)
        } else {
            let source = &self.analysis.sources[span.source];
            let (line, col) = line_col(&source.text, span.start);
            let name = shown_name(&source.name, &self.analysis.sources[0].name);
            let _ = write!(message, "\nin {name}:{line}:{col}");
            if let Some(location) = self.location(span) {
                let label = if diagnostic.label.is_empty() {
                    &diagnostic.message
                } else {
                    &diagnostic.label
                };
                related.push(DiagnosticRelatedInformation {
                    location,
                    message: label.clone(),
                });
            }
            // Unreachable in practice: every included source has a top-level include.
            let at = self.include_of(span.source).unwrap_or_default();
            self.indexes[0].range(at.start, at.end)
        };
        for (span, label) in &diagnostic.related {
            if let Some(location) = self.location(*span) {
                // "included here" on the very range the diagnostic is shown at says nothing.
                if !(span.source == 0 && location.range == range) {
                    related.push(DiagnosticRelatedInformation {
                        location,
                        message: label.clone(),
                    });
                }
            }
        }
        lsp::Diagnostic {
            range,
            severity: Some(DiagnosticSeverity::ERROR),
            code: Some(NumberOrString::String(diagnostic.code.as_str().to_owned())),
            source: Some("lossproof".to_owned()),
            message,
            related_information: (!related.is_empty()).then_some(related),
            ..lsp::Diagnostic::default()
        }
    }
}

/// Where each top-level include's file landed in `analysis.sources`. Included files are loaded
/// depth first, in the order the document includes them, so every source after one top-level
/// include's file and before the next one's came in through it.
fn top_level_includes(analysis: &Analysis) -> Vec<(usize, Span)> {
    let from = &analysis.sources[0].name;
    let mut includes = Vec::new();
    for item in &analysis.file.items {
        let Item::Include { path, .. } = item else {
            continue;
        };
        // The name the analyser gave the file: the same lookup it made.
        let name = if Stdlib.builtin_file(&path.value).is_some() {
            path.value.clone()
        } else if let Ok((name, _)) = lossproof_lang::FsLoader.load(from, &path.value) {
            name
        } else {
            continue;
        };
        let found = analysis.sources.iter().skip(1).position(|s| s.name == name);
        if let Some(i) = found
            && !includes.iter().any(|&(s, _)| s == i + 1)
        {
            includes.push((i + 1, path.span));
        }
    }
    includes.sort_by_key(|&(source, _)| source);
    includes
}

/// The URI of an included file, when it is one on disk (not a file shipped inside lossproof).
fn file_uri(name: &str) -> Option<Uri> {
    if Stdlib.builtin_file(name).is_some() {
        return None;
    }
    let path = Path::new(name);
    if path.is_absolute() {
        Uri::from_file_path(path)
    } else {
        Uri::from_file_path(std::fs::canonicalize(path).ok()?)
    }
}

/// An included file's name as the message shows it: relative to the document's folder when it
/// is inside it.
fn shown_name(name: &str, document: &str) -> String {
    Path::new(document)
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .and_then(|dir| Path::new(name).strip_prefix(dir).ok())
        .map_or_else(|| name.to_owned(), |rest| rest.display().to_string())
}
