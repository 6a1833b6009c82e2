//! What the registry persists: every schema by id, every subject's versions,
//! the compatibility configuration and the next id to hand out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::CompatibilityLevel;

/// The format written today; a file with another one is refused, not guessed at.
pub(crate) const FORMAT: u32 = 1;

/// The registry's whole durable state (`registry.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct State {
    pub format: u32,
    /// The id the next new schema gets. Ids are never reused, even after a
    /// permanent delete: clients cache them.
    pub next_id: u32,
    /// The global compatibility level.
    pub compatibility: CompatibilityLevel,
    /// Schema text by global id (the text first registered with that id).
    pub schemas: BTreeMap<u32, String>,
    pub subjects: BTreeMap<String, SubjectState>,
}

impl Default for State {
    fn default() -> Self {
        Self {
            format: FORMAT,
            next_id: 1,
            compatibility: CompatibilityLevel::default(),
            schemas: BTreeMap::new(),
            subjects: BTreeMap::new(),
        }
    }
}

/// One subject: its versions in registration order and its own level, if set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SubjectState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<CompatibilityLevel>,
    #[serde(default)]
    pub versions: Vec<VersionEntry>,
}

/// One version of a subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct VersionEntry {
    pub version: u32,
    pub id: u32,
    /// Soft-deleted: hidden from reads and compatibility checks, still
    /// counted for numbering, removable with `permanent=true`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
}

impl SubjectState {
    /// Versions not soft-deleted, oldest first.
    pub(crate) fn live(&self) -> impl DoubleEndedIterator<Item = &VersionEntry> {
        self.versions.iter().filter(|v| !v.deleted)
    }

    /// Whether the subject has any version a client can see.
    pub(crate) fn is_live(&self) -> bool {
        self.live().next().is_some()
    }

    /// The number the next registered version gets.
    pub(crate) fn next_version(&self) -> u32 {
        self.versions.iter().map(|v| v.version).max().unwrap_or(0) + 1
    }
}
