//! One open document and its latest analysis.

use std::borrow::Cow;

use lossproof_lang::ast::{Item, TableDecl};
use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_lang::{Analysis, Analyzer, FsLoader, Parser, Vocabulary};
use lossproof_stdlib::Stdlib;
use tower_lsp_server::ls_types::Uri;

pub struct Document {
    pub version: i32,
    /// What `lossproof check` would report for the text; holds the text as source 0.
    pub analysis: Analysis,
}

impl Document {
    /// Analyse `text` through the one analyser `lossproof check` uses, named by the document's
    /// path so that relative includes resolve as they do on the command line.
    pub fn new(uri: &Uri, text: &str, version: i32) -> Self {
        let mut analysis = Analyzer::new(&Stdlib, &FsLoader).analyze(&name(uri), text);
        // The assertion SQL is planned as `check` plans it (DataFusion on a
        // runtime of its own, so on a thread of its own: this runs inside
        // the server's runtime).
        std::thread::scope(|scope| {
            scope
                .spawn(|| crate::scenario::plan_assertions(&mut analysis))
                .join()
                .ok();
        });
        Self { version, analysis }
    }

    pub fn text(&self) -> &str {
        &self.analysis.sources[0].text
    }

    /// The workload the document runs: the tables it declares (in the
    /// document itself), else its `workload` line's, else the default.
    pub fn workload(&self) -> Cow<'static, WorkloadSig> {
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
            return Cow::Owned(lossproof_stdlib::workloads::declared(name, tables));
        }
        let workloads = Stdlib.workloads();
        named
            .and_then(|name| workloads.iter().find(|w| w.name == name))
            .map_or_else(|| Cow::Borrowed(&workloads[0]), Cow::Borrowed)
    }

    /// The names of the tables the document declares, in order (even
    /// while a declaration is half written).
    pub fn declared_tables(&self) -> Vec<String> {
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
    pub fn fragments(&self) -> Vec<String> {
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
pub fn name(uri: &Uri) -> String {
    if uri.scheme().as_str().eq_ignore_ascii_case("file")
        && let Some(path) = uri.to_file_path()
    {
        return path.display().to_string();
    }
    uri.as_str().to_owned()
}
