//! Comparing one table's source rows with one consumer's lake rows, by
//! primary key, into diff rows of a kind: the kinds, and the in-memory
//! comparison (both sides held whole) that the streaming merge
//! (`merge.rs`) is held to and falls back to.
//!
//! | kind | the lake … |
//! |---|---|
//! | `missing` | lacks a key the source has |
//! | `extra` | has a key the source never had (not in the source's history either) |
//! | `stale` | holds an OLDER version of the row: a value the source's history had for that key |
//! | `wrong` | holds a value the source never had for that key |
//! | `resurrected` | has a key the source deleted (its history had it) |
//! | `duplicate` | has the key more than once |
//! | `in-flight` | differs, but its newest change is one the source's snapshot does not see yet: not damage (only when reconciling a live source, `live.rs`) |
//!
//! One diff row per key at most, so wrong rows can never exceed rows
//! compared (= keys in the source or the lake).
//!
//! `stale` vs `wrong` needs the source's history: every version each key
//! ever had, written by the workload's triggers into `lossproof_history`
//! (see `source.rs`). Without history (`None`), a differing row is `wrong`
//! and a key only the lake has is `extra`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum DiffKind {
    Missing,
    Extra,
    Stale,
    Wrong,
    Resurrected,
    Duplicate,
    #[serde(rename = "in-flight")]
    InFlight,
}

impl DiffKind {
    pub const ALL: [Self; 7] = [
        Self::Missing,
        Self::Extra,
        Self::Stale,
        Self::Wrong,
        Self::Resurrected,
        Self::Duplicate,
        Self::InFlight,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Extra => "extra",
            Self::Stale => "stale",
            Self::Wrong => "wrong",
            Self::Resurrected => "resurrected",
            Self::Duplicate => "duplicate",
            Self::InFlight => "in-flight",
        }
    }

    /// Its column in the `summary` table (`in_flight`: SQL names need no quotes).
    #[must_use]
    pub fn column(self) -> &'static str {
        match self {
            Self::InFlight => "in_flight",
            other => other.as_str(),
        }
    }

    /// Whether a row of this kind is damage (every kind but `in-flight`).
    #[must_use]
    pub fn is_damage(self) -> bool {
        self != Self::InFlight
    }

    /// The kind [`DiffKind::as_str`] names.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for DiffKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One discrepancy.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DiffRow {
    pub table: String,
    /// Canonical primary key (`order_id=7`).
    pub key: String,
    pub consumer: String,
    pub kind: DiffKind,
    /// The source's canonical row, if the source has the key.
    pub source: Option<String>,
    /// The lake's canonical row (for `duplicate`: every version, sorted, ` ‖ `-separated).
    pub lake: Option<String>,
}

/// Every version each key ever had in the source (canonical rows).
pub type History = HashMap<String, HashSet<String>>;

/// Counts of one (consumer, table) comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Keys in the source or in the lake.
    pub compared: u64,
    pub source_rows: u64,
    pub lake_rows: u64,
    /// Damaged keys: diff rows, `in-flight` ones excepted.
    pub wrong: u64,
    pub by_kind: BTreeMap<DiffKind, u64>,
}

impl Counts {
    /// Count one row of `kind` less (a row moved out of the diff, or to
    /// another kind).
    pub fn take_one(&mut self, kind: DiffKind) {
        if let Some(n) = self.by_kind.get_mut(&kind) {
            *n = n.saturating_sub(1);
        }
        self.by_kind.retain(|_, n| *n > 0);
        if kind.is_damage() {
            self.wrong = self.wrong.saturating_sub(1);
        }
    }
}

/// Counts of several shares of one comparison (key ranges), summed.
impl std::ops::AddAssign<&Counts> for Counts {
    fn add_assign(&mut self, part: &Counts) {
        self.compared += part.compared;
        self.source_rows += part.source_rows;
        self.lake_rows += part.lake_rows;
        self.wrong += part.wrong;
        for (kind, n) in &part.by_kind {
            *self.by_kind.entry(*kind).or_default() += n;
        }
    }
}

/// The versions of one key a lake holds more than once, as a `duplicate`
/// row's `lake` text: sorted (the order a lake is read in is not its
/// own), ` ‖ `-separated.
#[must_use]
pub fn versions<'a>(rows: impl Iterator<Item = &'a str>) -> String {
    let mut rows: Vec<&str> = rows.collect();
    rows.sort_unstable();
    rows.join(" ‖ ")
}

/// Compare `source` (key → row) with `lake` ((key, row) as stored, keys
/// possibly repeated).
#[must_use]
pub fn compare(
    table: &str,
    consumer: &str,
    source: &BTreeMap<String, String>,
    lake: &[(String, String)],
    history: Option<&History>,
) -> (Vec<DiffRow>, Counts) {
    // The lake sorted by key, then merged with the source (sorted too): one
    // pass, no map of the lake.
    let mut sorted: Vec<(&str, &str)> =
        lake.iter().map(|(k, r)| (k.as_str(), r.as_str())).collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut groups = sorted.chunk_by(|a, b| a.0 == b.0).peekable();
    let joined = |group: &[(&str, &str)]| versions(group.iter().map(|(_, r)| *r));
    // Keys only the lake has, in key order.
    let mut lake_only: Vec<&[(&str, &str)]> = Vec::new();
    let mut diff = Vec::new();
    let mut push = |key: &str, kind, source: Option<&String>, lake: Option<String>| {
        diff.push(DiffRow {
            table: table.to_owned(),
            key: key.to_owned(),
            consumer: consumer.to_owned(),
            kind,
            source: source.cloned(),
            lake,
        });
    };
    let had = |key: &str, row: Option<&str>| {
        history
            .and_then(|h| h.get(key))
            .is_some_and(|versions| row.is_none_or(|r| versions.contains(r)))
    };
    for (key, row) in source {
        while let Some(group) = groups.next_if(|g| g[0].0 < key.as_str()) {
            lake_only.push(group);
        }
        match groups.next_if(|g| g[0].0 == key.as_str()) {
            None | Some([]) => push(key, DiffKind::Missing, Some(row), None),
            Some([(_, one)]) if *one == row => {}
            Some([(_, one)]) => {
                let kind = if had(key, Some(one)) {
                    DiffKind::Stale
                } else {
                    DiffKind::Wrong
                };
                push(key, kind, Some(row), Some((*one).to_owned()));
            }
            Some(many) => push(key, DiffKind::Duplicate, Some(row), Some(joined(many))),
        }
    }
    lake_only.extend(groups);
    for group in &lake_only {
        let key = group[0].0;
        let kind = if group.len() > 1 {
            DiffKind::Duplicate
        } else if had(key, None) {
            DiffKind::Resurrected
        } else {
            DiffKind::Extra
        };
        push(key, kind, None, Some(joined(group)));
    }
    let mut counts = Counts {
        compared: (source.len() + lake_only.len()) as u64,
        source_rows: source.len() as u64,
        lake_rows: lake.len() as u64,
        wrong: diff.len() as u64,
        by_kind: BTreeMap::new(),
    };
    for row in &diff {
        *counts.by_kind.entry(row.kind).or_default() += 1;
    }
    (diff, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> BTreeMap<String, String> {
        [
            ("id=1", "a=1"),
            ("id=2", "a=2"),
            ("id=3", "a=3"),
            ("id=4", "a=4"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    fn history() -> History {
        let mut h = History::new();
        for (k, v) in [
            ("id=1", "a=1"),
            ("id=2", "a=0"), // an older version of key 2
            ("id=2", "a=2"),
            ("id=3", "a=3"),
            ("id=4", "a=4"),
            ("id=9", "a=9"), // key 9 existed, then was deleted
        ] {
            h.entry(k.to_owned()).or_default().insert(v.to_owned());
        }
        h
    }

    fn lake(rows: &[(&str, &str)]) -> Vec<(String, String)> {
        rows.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn kinds(diff: &[DiffRow]) -> Vec<(&str, DiffKind)> {
        diff.iter().map(|d| (d.key.as_str(), d.kind)).collect()
    }

    #[test]
    fn an_exact_lake_has_no_diff() {
        let lake = lake(&[
            ("id=4", "a=4"),
            ("id=1", "a=1"),
            ("id=3", "a=3"),
            ("id=2", "a=2"),
        ]);
        let (diff, counts) = compare("t", "c", &source(), &lake, Some(&history()));
        assert!(diff.is_empty(), "{diff:?}");
        assert_eq!(counts.compared, 4);
        assert_eq!(counts.wrong, 0);
    }

    #[test]
    fn every_kind_is_named() {
        let lake = lake(&[
            // id=1 missing
            ("id=2", "a=0"),  // stale: an older source version
            ("id=3", "a=33"), // wrong: never a source value
            ("id=4", "a=4"),
            ("id=4", "a=4"), // duplicate
            ("id=9", "a=9"), // resurrected: deleted in the source
            ("id=7", "a=7"), // extra: never in the source
        ]);
        let (diff, counts) = compare("t", "careless", &source(), &lake, Some(&history()));
        assert_eq!(
            kinds(&diff),
            [
                ("id=1", DiffKind::Missing),
                ("id=2", DiffKind::Stale),
                ("id=3", DiffKind::Wrong),
                ("id=4", DiffKind::Duplicate),
                ("id=7", DiffKind::Extra),
                ("id=9", DiffKind::Resurrected),
            ]
        );
        assert_eq!(diff[1].source.as_deref(), Some("a=2"));
        assert_eq!(diff[1].lake.as_deref(), Some("a=0"));
        assert_eq!(diff[3].lake.as_deref(), Some("a=4 ‖ a=4"));
        assert_eq!(counts.compared, 6);
        assert_eq!(counts.wrong, 6);
        assert!(counts.wrong <= counts.compared);
        assert_eq!(counts.by_kind[&DiffKind::Stale], 1);
    }

    #[test]
    fn without_history_stale_is_wrong_and_resurrected_is_extra() {
        let lake = lake(&[
            ("id=1", "a=1"),
            ("id=2", "a=0"),
            ("id=3", "a=3"),
            ("id=4", "a=4"),
            ("id=9", "a=9"),
        ]);
        let (diff, _) = compare("t", "c", &source(), &lake, None);
        assert_eq!(
            kinds(&diff),
            [("id=2", DiffKind::Wrong), ("id=9", DiffKind::Extra)]
        );
    }

    #[test]
    fn an_empty_lake_is_all_missing_and_never_more_wrong_than_compared() {
        let (diff, counts) = compare("t", "c", &source(), &[], None);
        assert_eq!(diff.len(), 4);
        assert!(diff.iter().all(|d| d.kind == DiffKind::Missing));
        assert_eq!((counts.wrong, counts.compared), (4, 4));
    }
}
