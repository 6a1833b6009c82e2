//! Every integration test, compiled into one binary (one link step).

mod cli;
mod docs;
mod language;
mod properties;
mod support;
