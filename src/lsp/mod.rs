//! `lossproof lsp`: a language server for `.lp` files over stdio (tower-lsp-server).
//!
//! - Diagnostics: exactly what `lossproof check` reports, from the same analyser, with the
//!   document's path as its name so relative includes resolve the same way; published on open
//!   and on every change (full text sync), cleared on close, and refreshed for every open
//!   document when the client reports a `.lp` file changed on disk (an included file may have).
//!   Included files are read from disk, not from unsaved editor buffers. A diagnostic located in
//!   an included file is shown on the `include` line that brought the file in (see
//!   [`diagnostics`]).
//! - Completion and hover: the stdlib's vocabulary and the grammar's keywords.
//! - Formatting: the canonical text `lossproof fmt` writes, as one edit.
//!
//! The server exits on the `exit` notification or when stdin ends.

mod backend;
mod completion;
mod context;
mod diagnostics;
mod document;
mod hover;
mod keywords;
mod position;

use tower_lsp_server::{LspService, Server};

/// Serve one client on stdin/stdout until it sends `exit` or closes stdin.
pub(crate) fn run() -> Result<bool, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| format!("cannot start the language server: {e}"))?;
    runtime.block_on(async {
        let (service, socket) = LspService::new(backend::Backend::new);
        // One message at a time: documents change in the order the client sent the changes,
        // and every request takes milliseconds.
        Server::new(tokio::io::stdin(), tokio::io::stdout(), socket)
            .concurrency_level(1)
            .serve(service)
            .await;
    });
    // Tokio reads stdin on a thread that cannot be interrupted: after `exit`, while the client
    // still holds stdin open, waiting for that thread would hang.
    runtime.shutdown_background();
    Ok(true)
}
