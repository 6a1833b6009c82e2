//! The language server: open documents, and the LSP requests it answers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use lossproof_lang::{Parser, format};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{
    CompletionOptions, CompletionParams, CompletionResponse, DidChangeTextDocumentParams,
    DidChangeWatchedFilesParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    DocumentFormattingParams, Hover, HoverParams, HoverProviderCapability, InitializeParams,
    InitializeResult, OneOf, ServerCapabilities, ServerInfo, TextDocumentSyncCapability,
    TextDocumentSyncKind, TextDocumentSyncOptions, TextEdit, Uri,
};
use tower_lsp_server::{Client, LanguageServer};

use super::document::Document;
use super::position::LineIndex;
use super::{completion, diagnostics, hover};

pub(super) struct Backend {
    client: Client,
    documents: Mutex<HashMap<Uri, Document>>,
    /// The client takes snippets in completions.
    snippets: AtomicBool,
}

impl Backend {
    pub(super) fn new(client: Client) -> Self {
        Self {
            client,
            documents: Mutex::new(HashMap::new()),
            snippets: AtomicBool::new(false),
        }
    }

    fn documents(&self) -> std::sync::MutexGuard<'_, HashMap<Uri, Document>> {
        // A panic while holding the lock leaves the map as it was: keep serving.
        self.documents
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Analyse a document's new text, keep it, and publish its diagnostics.
    async fn update(&self, uri: Uri, text: &str, version: i32) {
        let document = Document::new(&uri, text, version);
        let found = diagnostics::to_lsp(&document.analysis, &uri);
        self.documents().insert(uri.clone(), document);
        self.client
            .publish_diagnostics(uri, found, Some(version))
            .await;
    }

    /// Run `f` on an open document.
    fn with<T>(&self, uri: &Uri, f: impl FnOnce(&Document) -> T) -> Option<T> {
        self.documents().get(uri).map(f)
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let snippets = params
            .capabilities
            .text_document
            .and_then(|t| t.completion)
            .and_then(|c| c.completion_item)
            .and_then(|i| i.snippet_support)
            .unwrap_or(false);
        self.snippets.store(snippets, Ordering::Relaxed);
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::FULL),
                        ..TextDocumentSyncOptions::default()
                    },
                )),
                completion_provider: Some(CompletionOptions::default()),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                document_formatting_provider: Some(OneOf::Left(true)),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo {
                name: "lossproof".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }),
            ..InitializeResult::default()
        })
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let document = params.text_document;
        self.update(document.uri, &document.text, document.version)
            .await;
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        // Full sync: the last change holds the whole text.
        if let Some(change) = params.content_changes.into_iter().last() {
            let document = params.text_document;
            self.update(document.uri, &change.text, document.version)
                .await;
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        self.documents().remove(&uri);
        self.client.publish_diagnostics(uri, Vec::new(), None).await;
    }

    /// A `.lp` file changed on disk: it may be included by an open document, so check them
    /// all again.
    async fn did_change_watched_files(&self, _: DidChangeWatchedFilesParams) {
        let open: Vec<(Uri, String, i32)> = self
            .documents()
            .iter()
            .map(|(uri, d)| (uri.clone(), d.text().to_owned(), d.version))
            .collect();
        for (uri, text, version) in open {
            self.update(uri, &text, version).await;
        }
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        let at = params.text_document_position;
        let snippets = self.snippets.load(Ordering::Relaxed);
        Ok(self.with(&at.text_document.uri, |document| {
            let offset = LineIndex::new(document.text()).offset(at.position);
            CompletionResponse::Array(completion::complete(document, offset, snippets))
        }))
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let at = params.text_document_position_params;
        Ok(self
            .with(&at.text_document.uri, |document| {
                let offset = LineIndex::new(document.text()).offset(at.position);
                hover::hover(document, offset)
            })
            .flatten())
    }

    /// One edit replacing the whole text with its canonical form (what `lossproof fmt`
    /// writes); no edit when the text has syntax errors or is already canonical.
    async fn formatting(&self, params: DocumentFormattingParams) -> Result<Option<Vec<TextEdit>>> {
        Ok(self.with(&params.text_document.uri, |document| {
            let text = document.text();
            let parsed = Parser::parse(text, 0);
            if parsed.has_errors() {
                return Vec::new();
            }
            let formatted = format(&parsed.file, text);
            if formatted == text {
                return Vec::new();
            }
            vec![TextEdit::new(LineIndex::new(text).whole(), formatted)]
        }))
    }
}
