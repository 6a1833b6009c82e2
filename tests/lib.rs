//! Every integration test, compiled into one binary (one link step).

mod careless;
mod cli;
mod correct;
mod docs;
mod lake;
mod lake_layer;
mod lsp;
mod network;
mod nightly;
mod own;
mod profile;
mod registry;
mod run;
mod schema;
mod snapshots;
mod stack;
mod support;
