//! Every integration test, compiled into one binary (one link step).

mod cli;
mod docs;
mod lake;
mod language;
mod lsp;
mod properties;
mod registry;
mod stack;
mod support;
