//! The language's tests over the vocabulary, compiled into one binary:
//! every input's plan or diagnostics (snapshots), the scenario suite,
//! formatting, timelines, the property tests, and the documents and editor
//! files kept in step with the vocabulary. None needs a stack, DataFusion,
//! iceberg or librdkafka.

mod language;
mod properties;
mod support;
mod words;
