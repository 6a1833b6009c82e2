//! The `.lp` scenario language: grammar, syntax tree, analyser, `Plan`,
//! seeded timelines, diagnostics and formatter.
//!
//! Stages, each with one entry point:
//! text -> [`Parser::parse`] -> [`ast::File`] -> [`Analyzer::analyze`] ->
//! [`Plan`] -> [`Plan::timeline`] (with a seed) -> [`Timeline`].
//! [`format`] turns a syntax tree back into canonical text.
//!
//! Pure: no I/O beyond reading included source files, no async runtime.

pub mod analyzer;
pub mod ast;
pub mod code;
mod column_type;
pub mod declared;
pub mod diagnostic;
pub mod formatter;
pub mod loader;
mod matcher;
pub mod parser;
pub mod plan;
pub mod render;
pub mod span;
pub mod suggest;
pub mod tables;
pub mod timeline;
mod units;
pub mod vocabulary;

pub use analyzer::{Analysis, Analyzer, Source};
pub use code::Code;
pub use column_type::{ColumnType, TypeError};
pub use diagnostic::Diagnostic;
pub use formatter::format;
pub use loader::{FsLoader, Loader, NoIncludes};
pub use parser::{Parsed, Parser};
pub use plan::Plan;
pub use span::{Span, Spanned};
pub use timeline::{Occurrence, Timeline};
pub use vocabulary::Vocabulary;
