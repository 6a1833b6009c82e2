//! Whether a lake state is a state the source had (docs/run.md,
//! "Snapshots").
//!
//! The source's history is a sequence of positions: 0 is the source before
//! the first followed transaction, `n` the source right after the `n`th
//! committed transaction (in commit order). Each key's lake row is right
//! for a set of positions: the positions at which the source held exactly
//! that row (or, for a key the lake lacks, held none). A lake state is a
//! state the source had exactly when one position is right for every key.
//!
//! [`Checker`] keeps that incrementally: for every position, how many keys
//! are wrong at it (a segment tree with range additions); a key the lake
//! changes moves its own count from its old positions to its new ones. So
//! a state's check costs the keys its snapshot changed times log(positions),
//! never the table. The state matches the latest position no key is wrong
//! at; when there is none, it is closest to the latest position with the
//! fewest wrong keys, and those keys are listed, each with its kind.

use std::collections::{BTreeSet, HashMap};

/// A position in the source's commit order.
pub type Pos = u32;

/// What a lake state shows for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    Absent,
    /// One row: its canonical form's [`row_hash`].
    Row(u128),
    /// Several rows for the key: a state no source had.
    Rows(usize),
}

/// Every version of every key of the checked tables, by position.
#[derive(Debug, Default)]
pub struct SourceStates {
    /// The last position: the source after its last followed transaction.
    pub last: Pos,
    /// The transaction at each position (`txids[p - 1]` for `p >= 1`).
    pub txids: Vec<i64>,
    /// Each (table, key)'s id.
    ids: HashMap<(usize, String), usize>,
    /// By id: the table, the key, and its versions in position order (one
    /// per position, `None`: no row), the row it had at position 0 first
    /// when it had one.
    keys: Vec<(usize, String, Versions)>,
}

/// One key's versions: (position, row's hash; `None`: no row), in position
/// order.
type Versions = Vec<(Pos, Option<u128>)>;

/// A canonical row ([`super::canonical`]) as 128 bits: what both sides keep
/// of a row (the source's every version and the lake's every row, in
/// memory for the seed; 16 bytes where the row is ~100), compared for
/// equality only. Two SipHash-1-3 passes with different keys.
#[must_use]
pub fn row_hash(row: &str) -> u128 {
    use std::hash::{Hash as _, Hasher as _};
    let mut low = std::hash::DefaultHasher::new();
    row.hash(&mut low);
    let mut high = std::hash::DefaultHasher::new();
    0x6c70_u16.hash(&mut high);
    row.hash(&mut high);
    (u128::from(high.finish()) << 64) | u128::from(low.finish())
}

impl SourceStates {
    /// The source after `txids.len()` transactions, in commit order.
    #[must_use]
    pub fn new(txids: Vec<i64>) -> Self {
        Self {
            last: Pos::try_from(txids.len()).unwrap_or(Pos::MAX),
            txids,
            ..Self::default()
        }
    }

    /// Key `key` of table `table` became `row` (`None`: deleted) at
    /// position `pos`. Versions of one key come in position order; a later
    /// one at the same position replaces the earlier (the transaction's
    /// last write is what it committed).
    pub fn version(&mut self, table: usize, key: String, pos: Pos, row: Option<u128>) {
        let id = self.id(table, key);
        let versions = &mut self.keys[id].2;
        match versions.last_mut() {
            Some((at, last)) if *at == pos => *last = row,
            _ => versions.push((pos, row)),
        }
    }

    /// The transaction id at position `pos` (`None` for 0).
    #[must_use]
    pub fn txid(&self, pos: Pos) -> Option<i64> {
        (pos as usize)
            .checked_sub(1)
            .and_then(|i| self.txids.get(i))
            .copied()
    }

    fn id(&mut self, table: usize, key: String) -> usize {
        let next = self.keys.len();
        match self.ids.entry((table, key)) {
            std::collections::hash_map::Entry::Occupied(e) => *e.get(),
            std::collections::hash_map::Entry::Vacant(e) => {
                self.keys.push((table, e.key().1.clone(), Vec::new()));
                e.insert(next);
                next
            }
        }
    }

    /// The segments of one key's history: (from, to exclusive, row),
    /// covering 0..=last.
    fn segments(&self, id: usize) -> Vec<(Pos, Pos, Option<u128>)> {
        let end = self.last + 1;
        let versions = self.keys.get(id).map_or(&[][..], |k| &k.2[..]);
        let mut out = Vec::with_capacity(versions.len() + 1);
        let mut from = 0;
        let mut row: Option<u128> = None;
        for (pos, next) in versions {
            if *pos > from {
                out.push((from, *pos, row));
            }
            from = *pos;
            row = *next;
        }
        out.push((from, end, row));
        out
    }
}

/// How a key is wrong in an inconsistent state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Its row is right for other transactions than the state's: part of a
    /// source transaction visible without the rest.
    Torn,
    /// Missing, though the source held it since the lake last showed it.
    Vanished,
    /// An older version than an earlier state of the same lake showed.
    Regressed,
    /// A row (or several rows) the source never had.
    Wrong,
}

impl Kind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Torn => "torn",
            Self::Vanished => "vanished",
            Self::Regressed => "regressed",
            Self::Wrong => "wrong",
        }
    }
}

/// One wrong key of an inconsistent state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongKey {
    pub table: usize,
    pub key: String,
    pub kind: Kind,
    /// The source transaction its row belongs to (torn: the transaction it
    /// shows without the rest, or the one it misses), if any.
    pub txid: Option<i64>,
}

/// At most this many of a state's wrong keys are classified (and listed);
/// their count is exact. Classifying is one look at each key's history, so
/// without a bound a state half of a million-row table off (a snapshot load
/// committed in parts, a table rewritten in two commits) cost a million
/// looks: measured, the check of one seed at a million rows ran for over
/// half an hour in `classify`.
pub const CLASSIFIED_MAX: usize = 10_000;

/// The check of one lake state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// A state the source had, and no key went back in time.
    pub consistent: bool,
    /// The position it matches (consistent) or is closest to.
    pub position: Pos,
    /// The wrong keys against that position (at most [`CLASSIFIED_MAX`] of
    /// them, found in a fixed order), plus the regressed ones.
    pub keys: Vec<WrongKey>,
    /// Wrong keys against that position beyond those in `keys`.
    pub unclassified: u64,
}

/// One key as the checked lake shows it.
#[derive(Debug, Clone)]
struct KeyState {
    shown: Shown,
    /// The positions `shown` is right at (from, to exclusive), merged.
    right: Vec<(Pos, Pos)>,
    /// The index of the newest segment any state showed (regressions).
    newest: Option<usize>,
    /// Where the segment of the last row the lake showed starts (for
    /// `vanished`).
    held_from: Option<Pos>,
}

/// A lake followed state by state against [`SourceStates`].
pub struct Checker<'s> {
    source: &'s SourceStates,
    tree: Tree,
    /// Keys wrong at every position (no segment tree update needed).
    /// Ordered sets here and below: which keys are classified when there
    /// are more than [`CLASSIFIED_MAX`] must not depend on hashing.
    wrong_everywhere: BTreeSet<usize>,
    /// Keys right on exactly one interval: by its start, by its end.
    starts: BTreeSet<(Pos, usize)>,
    ends: BTreeSet<(Pos, usize)>,
    /// Keys right on several intervals.
    scattered: BTreeSet<usize>,
    keys: HashMap<usize, KeyState>,
    /// Ids of keys the lake showed that the source never had.
    foreign: HashMap<(usize, String), usize>,
    foreign_keys: Vec<(usize, String)>,
}

impl<'s> Checker<'s> {
    /// The lake before its first state: empty.
    #[must_use]
    pub fn new(source: &'s SourceStates) -> Self {
        let mut checker = Self {
            source,
            tree: Tree::new(source.last as usize + 1),
            wrong_everywhere: BTreeSet::new(),
            starts: BTreeSet::new(),
            ends: BTreeSet::new(),
            scattered: BTreeSet::new(),
            keys: HashMap::new(),
            foreign: HashMap::new(),
            foreign_keys: Vec::new(),
        };
        for id in 0..source.keys.len() {
            let state = checker.state_of(id, Shown::Absent);
            checker.add(id, &state.right, 1);
            checker.keys.insert(id, state);
        }
        checker
    }

    /// The next state: what it shows for each key its snapshot changed.
    pub fn check(&mut self, changes: impl IntoIterator<Item = (usize, String, Shown)>) -> Checked {
        let mut regressed = Vec::new();
        for (table, key, shown) in changes {
            let id = self.key_id(table, key);
            let old = self
                .keys
                .remove(&id)
                .unwrap_or_else(|| self.state_of(id, Shown::Absent));
            self.add(id, &old.right, -1);
            let mut new = self.state_of(id, shown);
            new.newest = old.newest;
            new.held_from = old.held_from;
            if let Shown::Row(_) = new.shown {
                let segment = self.segment_of(id, &new.right);
                if let (Some(seen), Some(now)) = (old.newest, segment)
                    && now < seen
                {
                    regressed.push(WrongKey {
                        table,
                        key: self.key_name(id).1.clone(),
                        kind: Kind::Regressed,
                        txid: None,
                    });
                }
                new.newest = new.newest.max(segment);
                new.held_from = new.right.first().map(|(from, _)| *from);
            }
            self.add(id, &new.right, 1);
            self.keys.insert(id, new);
        }
        let (position, in_tree) = self.tree.rightmost_min();
        let wrong = in_tree + i64::try_from(self.wrong_everywhere.len()).unwrap_or(i64::MAX);
        let position = Pos::try_from(position).unwrap_or(Pos::MAX);
        let mut keys = if wrong == 0 {
            Vec::new()
        } else {
            self.wrong_at(position, CLASSIFIED_MAX)
        };
        let unclassified = u64::try_from(wrong)
            .unwrap_or(0)
            .saturating_sub(keys.len() as u64);
        let consistent = wrong == 0 && regressed.is_empty();
        keys.extend(regressed);
        Checked {
            consistent,
            position,
            keys,
            unclassified,
        }
    }

    fn key_id(&mut self, table: usize, key: String) -> usize {
        if let Some(id) = self.source.ids.get(&(table, key.clone())) {
            return *id;
        }
        let next = self.source.keys.len() + self.foreign_keys.len();
        *self.foreign.entry((table, key)).or_insert_with_key(|k| {
            self.foreign_keys.push(k.clone());
            next
        })
    }

    fn key_name(&self, id: usize) -> (usize, &String) {
        if let Some((table, key, _)) = self.source.keys.get(id) {
            (*table, key)
        } else {
            let (table, key) = &self.foreign_keys[id - self.source.keys.len()];
            (*table, key)
        }
    }

    /// `shown` for key `id`, with the positions it is right at.
    fn state_of(&self, id: usize, shown: Shown) -> KeyState {
        let mut right: Vec<(Pos, Pos)> = Vec::new();
        let wanted = match &shown {
            Shown::Absent => Some(None),
            Shown::Row(row) => Some(Some(*row)),
            Shown::Rows(_) => None,
        };
        if let Some(wanted) = wanted {
            for (from, to, row) in self.source.segments(id) {
                if row != wanted {
                    continue;
                }
                match right.last_mut() {
                    Some((_, end)) if *end == from => *end = to,
                    _ => right.push((from, to)),
                }
            }
        }
        KeyState {
            shown,
            right,
            newest: None,
            held_from: None,
        }
    }

    /// The index of the segment `right` starts in (for a row: its version).
    fn segment_of(&self, id: usize, right: &[(Pos, Pos)]) -> Option<usize> {
        let (from, _) = right.first()?;
        self.source
            .segments(id)
            .iter()
            .position(|(start, _, _)| start == from)
    }

    /// Count key `id` wrong (`by` 1) or no longer (`by` -1) everywhere but
    /// `right`, and index it by its intervals.
    fn add(&mut self, id: usize, right: &[(Pos, Pos)], by: i64) {
        let end = self.source.last + 1;
        let insert = by > 0;
        match right {
            [] => {
                if insert {
                    self.wrong_everywhere.insert(id);
                } else {
                    self.wrong_everywhere.remove(&id);
                }
                return;
            }
            [(0, to)] if *to == end => return,
            [(from, to)] => {
                if insert {
                    self.starts.insert((*from, id));
                    self.ends.insert((*to, id));
                } else {
                    self.starts.remove(&(*from, id));
                    self.ends.remove(&(*to, id));
                }
            }
            _ => {
                if insert {
                    self.scattered.insert(id);
                } else {
                    self.scattered.remove(&id);
                }
            }
        }
        let mut at = 0;
        for (from, to) in right {
            if *from > at {
                self.tree.add(at as usize, *from as usize, by);
            }
            at = *to;
        }
        if at < end {
            self.tree.add(at as usize, end as usize, by);
        }
    }

    /// The keys wrong at `position`, each with its kind: the first `limit`
    /// (a key is in exactly one of the sets below, so none twice).
    fn wrong_at(&self, position: Pos, limit: usize) -> Vec<WrongKey> {
        let mut ids: Vec<usize> = self
            .starts
            .range((position + 1, 0)..)
            .map(|(_, id)| *id)
            .chain(
                self.ends
                    .range(..=(position, usize::MAX))
                    .map(|(_, id)| *id),
            )
            .chain(self.wrong_everywhere.iter().copied())
            .chain(self.scattered.iter().copied().filter(|id| {
                !self.keys[id]
                    .right
                    .iter()
                    .any(|(from, to)| (*from..*to).contains(&position))
            }))
            .take(limit)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter()
            .map(|id| self.classify(id, position))
            .collect()
    }

    fn classify(&self, id: usize, position: Pos) -> WrongKey {
        let state = &self.keys[&id];
        let (table, key) = self.key_name(id);
        let segments = self.source.segments(id);
        let at = segments
            .iter()
            .find(|(from, to, _)| (*from..*to).contains(&position));
        let (kind, txid) = if state.shown == Shown::Absent
            && at.is_some_and(|(_, _, row)| row.is_some())
            && state.held_from.is_some_and(|held| {
                // No deletion in the source from the row the lake last
                // showed up to the state's position.
                segments
                    .iter()
                    .filter(|(from, _, _)| *from >= held && *from <= position)
                    .all(|(_, _, row)| row.is_some())
            }) {
            (Kind::Vanished, None)
        } else if state.right.is_empty() {
            (Kind::Wrong, None)
        } else {
            // Ahead: the nearest interval starting after the position (its
            // transaction is visible without the rest); behind: the nearest
            // ending at or before it (the transaction it misses).
            let ahead = state
                .right
                .iter()
                .filter(|(from, _)| *from > position)
                .map(|(from, _)| *from)
                .min();
            let behind = state
                .right
                .iter()
                .filter(|(_, to)| *to <= position)
                .map(|(_, to)| *to)
                .max();
            (
                Kind::Torn,
                ahead.or(behind).and_then(|p| self.source.txid(p)),
            )
        };
        WrongKey {
            table,
            key: key.clone(),
            kind,
            txid,
        }
    }
}

/// Range addition and the rightmost minimum over positions 0..n.
struct Tree {
    n: usize,
    min: Vec<i64>,
    lazy: Vec<i64>,
}

impl Tree {
    fn new(n: usize) -> Self {
        let n = n.max(1);
        Self {
            n,
            min: vec![0; 4 * n],
            lazy: vec![0; 4 * n],
        }
    }

    /// Add `by` to positions from..to (exclusive).
    fn add(&mut self, from: usize, to: usize, by: i64) {
        if from < to {
            self.add_in(1, 0, self.n, from, to.min(self.n), by);
        }
    }

    fn add_in(&mut self, node: usize, lo: usize, hi: usize, from: usize, to: usize, by: i64) {
        if to <= lo || hi <= from {
            return;
        }
        if from <= lo && hi <= to {
            self.min[node] += by;
            self.lazy[node] += by;
            return;
        }
        let mid = usize::midpoint(lo, hi);
        self.add_in(2 * node, lo, mid, from, to, by);
        self.add_in(2 * node + 1, mid, hi, from, to, by);
        self.min[node] = self.lazy[node] + self.min[2 * node].min(self.min[2 * node + 1]);
    }

    /// The last position holding the minimum, and the minimum.
    fn rightmost_min(&self) -> (usize, i64) {
        let (mut node, mut lo, mut hi) = (1, 0, self.n);
        let best = self.min[1];
        let mut above = 0;
        while hi - lo > 1 {
            above += self.lazy[node];
            let mid = usize::midpoint(lo, hi);
            if above + self.min[2 * node + 1] == best {
                node = 2 * node + 1;
                lo = mid;
            } else {
                node *= 2;
                hi = mid;
            }
        }
        (lo, best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(s: &str) -> Shown {
        Shown::Row(row_hash(s))
    }

    /// Transactions 1..=3: t1 inserts a=1 and b=1 (one transaction, two
    /// keys), t2 updates a to 2, t3 deletes b.
    fn source() -> SourceStates {
        let mut s = SourceStates::new(vec![101, 102, 103]);
        s.version(0, "a".into(), 1, Some(row_hash("1")));
        s.version(0, "b".into(), 1, Some(row_hash("1")));
        s.version(0, "a".into(), 2, Some(row_hash("2")));
        s.version(0, "b".into(), 3, None);
        s
    }

    fn kinds(checked: &Checked) -> Vec<(&str, Kind, Option<i64>)> {
        checked
            .keys
            .iter()
            .map(|k| (k.key.as_str(), k.kind, k.txid))
            .collect()
    }

    #[test]
    fn states_the_source_had_are_consistent_at_their_position() {
        let source = source();
        let mut c = Checker::new(&source);
        let empty = c.check([]);
        assert!(empty.consistent);
        assert_eq!(empty.position, 0);
        let both = c.check([(0, "a".into(), row("1")), (0, "b".into(), row("1"))]);
        assert_eq!((both.consistent, both.position), (true, 1));
        let a2 = c.check([(0, "a".into(), row("2"))]);
        assert_eq!((a2.consistent, a2.position), (true, 2));
        let gone = c.check([(0, "b".into(), Shown::Absent)]);
        assert_eq!((gone.consistent, gone.position), (true, 3));
    }

    #[test]
    fn a_state_far_off_is_counted_exactly_and_classified_in_part() {
        // t1 inserts twice CLASSIFIED_MAX + 5 keys; the lake shows half of
        // them (as far from the source before t1 as after it: the tie goes
        // to the latest position).
        let half = CLASSIFIED_MAX + 5;
        let mut source = SourceStates::new(vec![101]);
        for key in 0..2 * half {
            source.version(0, format!("{key:05}"), 1, Some(row_hash("1")));
        }
        let check = || {
            let mut c = Checker::new(&source);
            c.check((0..half).map(|key| (0, format!("{key:05}"), row("1"))))
        };
        let far = check();
        assert!(!far.consistent);
        assert_eq!(far.position, 1);
        assert_eq!(far.keys.len(), CLASSIFIED_MAX);
        assert_eq!(far.unclassified, 5);
        assert!(far.keys.iter().all(|k| k.kind == Kind::Torn));
        // The same keys on every check of the same state.
        assert_eq!(check().keys, far.keys);
    }

    #[test]
    fn half_a_transaction_is_torn_with_that_transaction() {
        // t1 inserts a, b and c; the lake shows a and b only.
        let mut source = SourceStates::new(vec![101]);
        for key in ["a", "b", "c"] {
            source.version(0, key.into(), 1, Some(row_hash("1")));
        }
        let mut c = Checker::new(&source);
        let half = c.check([(0, "a".into(), row("1")), (0, "b".into(), row("1"))]);
        assert!(!half.consistent);
        assert_eq!(half.position, 1);
        assert_eq!(kinds(&half), vec![("c", Kind::Torn, Some(101))]);
        // A tie is broken towards the latest position: a = 1 and b absent
        // is the source after t3 with a one version behind (t2 missing).
        let source = self::source();
        let mut c = Checker::new(&source);
        let behind = c.check([(0, "a".into(), row("1"))]);
        assert_eq!(behind.position, 3);
        assert_eq!(kinds(&behind), vec![("a", Kind::Torn, Some(102))]);
    }

    #[test]
    fn a_key_deleted_then_written_again_vanished_in_between() {
        let source = source();
        let mut c = Checker::new(&source);
        c.check([(0, "a".into(), row("1")), (0, "b".into(), row("1"))]);
        let deleted = c.check([(0, "a".into(), Shown::Absent)]);
        assert!(!deleted.consistent);
        assert_eq!(kinds(&deleted), vec![("a", Kind::Vanished, None)]);
        let back = c.check([(0, "a".into(), row("2"))]);
        assert!(back.consistent);
    }

    #[test]
    fn a_key_held_since_before_the_first_transaction_vanishes_too() {
        // `p` was in the source before the followed transactions (a
        // preload): absent is right at no position.
        let mut source = source();
        source.version(0, "p".into(), 0, Some(row_hash("0")));
        let mut c = Checker::new(&source);
        c.check([(0, "p".into(), row("0"))]);
        let deleted = c.check([(0, "p".into(), Shown::Absent)]);
        assert_eq!(kinds(&deleted), vec![("p", Kind::Vanished, None)]);
    }

    #[test]
    fn an_older_version_after_a_newer_one_regressed() {
        let source = source();
        let mut c = Checker::new(&source);
        c.check([(0, "a".into(), row("2")), (0, "b".into(), row("1"))]);
        let back = c.check([(0, "a".into(), row("1"))]);
        // A state the source had (after t1), but a reader saw a go back.
        assert_eq!(back.position, 1);
        assert!(!back.consistent);
        assert_eq!(kinds(&back), vec![("a", Kind::Regressed, None)]);
    }

    #[test]
    fn rows_the_source_never_had_are_wrong() {
        let source = source();
        let mut c = Checker::new(&source);
        let odd = c.check([(0, "a".into(), row("9")), (0, "z".into(), row("1"))]);
        assert!(!odd.consistent);
        let mut found = kinds(&odd);
        found.sort_unstable();
        assert_eq!(
            found,
            vec![("a", Kind::Wrong, None), ("z", Kind::Wrong, None)]
        );
        let twice = c.check([
            (0, "a".into(), Shown::Rows(2)),
            (0, "z".into(), Shown::Absent),
        ]);
        assert_eq!(kinds(&twice), vec![("a", Kind::Wrong, None)]);
    }

    #[test]
    fn the_rightmost_minimum_is_found_after_range_additions() {
        let mut t = Tree::new(10);
        t.add(0, 10, 1);
        t.add(3, 6, -1);
        assert_eq!(t.rightmost_min(), (5, 0));
        t.add(5, 6, 2);
        assert_eq!(t.rightmost_min(), (4, 0));
        t.add(0, 10, 3);
        assert_eq!(t.rightmost_min(), (4, 3));
    }
}
