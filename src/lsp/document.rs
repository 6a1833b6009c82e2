//! One open document and its latest analysis.

use std::borrow::Cow;

use lossproof_lang::ast::{Item, TableDecl};
use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_lang::{Analysis, Analyzer, FsLoader, Parser, Vocabulary};
use lossproof_vocabulary::Stdlib;
use tower_lsp_server::ls_types::Uri;

pub(super) struct Document {
    pub version: i32,
    /// What `lossproof check` would report for the text; holds the text as source 0.
    pub analysis: Analysis,
}

impl Document {
    /// Check `text` through the one check `lossproof check` runs, named by the document's path
    /// so that relative includes and its consumers' programs resolve as they do on the command
    /// line.
    pub(super) fn new(uri: &Uri, text: &str, version: i32) -> Self {
        let name = name(uri);
        // The check plans the assertion SQL on an async runtime of its own, so on a thread of
        // its own: this runs inside the server's runtime.
        let analysis = std::thread::scope(|scope| {
            scope
                .spawn(|| crate::scenario::check_text(std::path::Path::new(&name), text, None))
                .join()
        })
        .unwrap_or_else(|_| Analyzer::new(&Stdlib, &FsLoader).analyze(&name, text));
        Self { version, analysis }
    }

    pub(super) fn text(&self) -> &str {
        &self.analysis.sources[0].text
    }

    /// The workload the document runs: the tables it declares (in the
    /// document itself), else its `workload` line's, else the default.
    pub(super) fn workload(&self) -> Cow<'static, WorkloadSig> {
        let items = &self.analysis.file.items;
        let named = items.iter().find_map(|item| match item {
            Item::Workload { name, .. } => Some(name.value.as_str()),
            _ => None,
        });
        let declared: Vec<&TableDecl> = items
            .iter()
            .filter_map(|item| match item {
                Item::Table(table) => Some(table),
                _ => None,
            })
            .collect();
        if !declared.is_empty() {
            // What reads: a half-written table still offers its columns.
            let mut diagnostics = Vec::new();
            let tables = lossproof_lang::tables::tables(&declared, &mut diagnostics);
            let name = named.unwrap_or(lossproof_lang::analyzer::DECLARED_WORKLOAD);
            return Cow::Owned(lossproof_vocabulary::workloads::declared(name, tables));
        }
        let workloads = Stdlib.workloads();
        named
            .and_then(|name| workloads.iter().find(|w| w.name == name))
            .map_or_else(|| Cow::Borrowed(&workloads[0]), Cow::Borrowed)
    }

    /// The names of the tables the document declares, in order (even
    /// while a declaration is half written).
    pub(super) fn declared_tables(&self) -> Vec<String> {
        self.analysis
            .file
            .items
            .iter()
            .filter_map(|item| match item {
                Item::Table(table) => Some(table.name.value.clone()),
                _ => None,
            })
            .collect()
    }

    /// Every fragment the document defines or includes, in order, each once.
    pub(super) fn fragments(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        let included = self.analysis.sources.iter().enumerate().skip(1);
        let included = included.map(|(i, source)| Parser::parse(&source.text, i).file);
        for file in std::iter::once(self.analysis.file.clone()).chain(included) {
            for item in file.items {
                if let Item::Fragment { name, .. } = item
                    && !names.contains(&name.value)
                {
                    names.push(name.value);
                }
            }
        }
        names
    }
}

/// The name the analyser gets for a document: its path for a `file:` URI, else the URI.
pub(super) fn name(uri: &Uri) -> String {
    if uri.scheme().as_str().eq_ignore_ascii_case("file")
        && let Some(path) = uri.to_file_path()
    {
        return path.display().to_string();
    }
    uri.as_str().to_owned()
}
