//! The streaming comparison: the source and the lake each read in
//! primary-key order, merged in one pass, in memory bounded by the reads'
//! buffers and the diff (never by the table's size).
//!
//! Both reads sort by the key columns the same way ([`KeyOrder`]): the
//! source with `ORDER BY` on the server (text by bytes, `COLLATE "C"`), the
//! lake with DataFusion's `ORDER BY … NULLS LAST` (which the lake's scan
//! answers from its files' key ranges where it can). Each side's order is checked
//! as it is merged: a side that is not in that order (a key column the lake
//! stores as text where the source has integers, a timestamp past year
//! 9999) is [`Merge::Unordered`], and the caller compares that table the
//! in-memory way ([`super::diff::compare`]) instead. The diff is the same
//! either way (`tests` below hold the two to it on every kind).
//!
//! A differing row's `stale` (vs `wrong`) and a lake-only key's
//! `resurrected` (vs `extra`) need the source's history; the merge leaves
//! them `wrong` and `extra`, and [`classify`] settles them with the history
//! of just those keys.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::canonical::{Keyed, Kind};
use super::diff::{self, Counts, DiffKind, DiffRow, History};
use super::error::Error;

/// How two keys of one table compare, column by column.
#[derive(Debug, Clone)]
pub struct KeyOrder {
    kinds: Vec<Kind>,
    /// `name=` of a one-column key.
    prefix: usize,
    /// The key is one integer column.
    int_key: bool,
}

impl KeyOrder {
    /// The order of a key made of columns `(name, kind)`, in key order.
    #[must_use]
    pub fn new(columns: &[(&str, Kind)]) -> Self {
        Self {
            kinds: columns.iter().map(|(_, k)| *k).collect(),
            prefix: columns.first().map_or(0, |(n, _)| n.len() + 1),
            int_key: matches!(columns, [(_, Kind::Int)]),
        }
    }

    /// A one-column integer key's two values, if both are plain decimals
    /// that fit an `i64` (the usual primary key: read once per row, then
    /// compared without [`Kind::cmp_canonical`]'s checks).
    fn ints(&self, a: &Keyed, b: &Keyed) -> Option<(i64, i64)> {
        if !self.int_key {
            return None;
        }
        a.int().zip(b.int())
    }

    fn value<'k>(&self, keyed: &'k Keyed, column: usize) -> &'k str {
        match keyed.spans.get(column) {
            Some((start, end)) => keyed
                .key()
                .get(*start as usize..*end as usize)
                .unwrap_or(""),
            None => keyed.key().get(self.prefix..).unwrap_or(""),
        }
    }

    #[must_use]
    pub fn cmp(&self, a: &Keyed, b: &Keyed) -> Ordering {
        if let Some((x, y)) = self.ints(a, b) {
            return x.cmp(&y);
        }
        if a.key() == b.key() {
            return Ordering::Equal;
        }
        for (column, kind) in self.kinds.iter().enumerate() {
            match kind.cmp_canonical(self.value(a, column), self.value(b, column)) {
                Ordering::Equal => {}
                other => return other,
            }
        }
        Ordering::Equal
    }
}

/// Why a merge stopped.
#[derive(Debug)]
pub enum Merge {
    /// A side was not in key order: compare this table in memory instead.
    Unordered {
        side: &'static str,
        /// The key that came after `after`.
        key: String,
        after: String,
    },
    /// A read failed.
    Failed(Error),
}

impl From<Error> for Merge {
    fn from(e: Error) -> Self {
        Self::Failed(e)
    }
}

/// What the merge found: the diff before history ([`classify`]) and the counts.
#[derive(Debug, Default)]
pub struct Merged {
    pub diff: Vec<DiffRow>,
    pub counts: Counts,
}

/// One side's rows, one ahead, each checked to come after the one before.
struct Cursor<I> {
    rows: I,
    head: Option<Keyed>,
    /// The head has the key of the row taken before it.
    repeats: bool,
    side: &'static str,
}

impl<I: Iterator<Item = Result<Keyed, Error>>> Cursor<I> {
    fn new(mut rows: I, side: &'static str) -> Result<Self, Merge> {
        let head = rows.next().transpose()?;
        Ok(Self {
            rows,
            head,
            repeats: false,
            side,
        })
    }

    /// The head, after pulling the next row and checking it is not before it.
    fn take(&mut self, order: &KeyOrder) -> Result<Option<Keyed>, Merge> {
        let next = self.rows.next().transpose()?;
        let head = std::mem::replace(&mut self.head, next);
        self.repeats = false;
        if let (Some(current), Some(next)) = (&head, &self.head) {
            match order.cmp(current, next) {
                Ordering::Greater => {
                    return Err(Merge::Unordered {
                        side: self.side,
                        key: next.key().to_owned(),
                        after: current.key().to_owned(),
                    });
                }
                Ordering::Equal => self.repeats = true,
                Ordering::Less => {}
            }
        }
        Ok(head)
    }
}

/// Which side a row handed to `keep` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Source,
    Lake,
}

/// Merge `source` (one row per key) with `lake` (keys possibly repeated),
/// both in `order`; every row read is shown to `keep` (to keep the row
/// tables) and dropped.
pub fn merge(
    table: &str,
    consumer: &str,
    order: &KeyOrder,
    source: impl Iterator<Item = Result<Keyed, Error>>,
    lake: impl Iterator<Item = Result<Keyed, Error>>,
    mut keep: impl FnMut(Side, &Keyed),
) -> Result<Merged, Merge> {
    let mut source = Cursor::new(source, "source")?;
    let mut lake = Cursor::new(lake, "lake")?;
    let mut out = Merged::default();
    let mut push = |key: String, kind, source: Option<String>, lake: Option<String>| {
        out.diff.push(DiffRow {
            table: table.to_owned(),
            key,
            consumer: consumer.to_owned(),
            kind,
            source,
            lake,
        });
    };
    let (mut source_rows, mut lake_rows, mut lake_only) = (0u64, 0u64, 0u64);
    // The lake's rows of the current key (one buffer for the whole merge).
    let mut group = Vec::new();
    loop {
        let ord = match (&source.head, &lake.head) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(s), Some(l)) => order.cmp(s, l),
        };
        let row = if ord == Ordering::Greater {
            None
        } else {
            source.take(order)?
        };
        group.clear();
        if ord != Ordering::Less {
            group.extend(lake.take(order)?);
            while lake.repeats {
                group.extend(lake.take(order)?);
            }
        }
        if let Some(row) = &row {
            keep(Side::Source, row);
            source_rows += 1;
        }
        for l in &group {
            keep(Side::Lake, l);
        }
        lake_rows += group.len() as u64;
        match (row, group.as_slice()) {
            (Some(s), []) => {
                let (key, row) = s.to_pair();
                push(key, DiffKind::Missing, Some(row), None);
            }
            (Some(s), [l]) if s.row() == l.row() => {}
            (Some(s), [l]) => {
                let (key, row) = s.to_pair();
                push(key, DiffKind::Wrong, Some(row), Some(l.row().to_owned()));
            }
            (Some(s), many) => {
                let (key, row) = s.to_pair();
                push(key, DiffKind::Duplicate, Some(row), Some(joined(many)));
            }
            (None, []) => {}
            (None, [l]) => {
                lake_only += 1;
                let (key, row) = l.to_pair();
                push(key, DiffKind::Extra, None, Some(row));
            }
            (None, many) => {
                lake_only += 1;
                let key = many[0].key().to_owned();
                push(key, DiffKind::Duplicate, None, Some(joined(many)));
            }
        }
    }
    out.counts = Counts {
        compared: source_rows + lake_only,
        source_rows,
        lake_rows,
        wrong: 0,
        by_kind: BTreeMap::new(),
    };
    Ok(out)
}

/// Every version of one key the lake holds ([`diff::versions`]).
fn joined(group: &[Keyed]) -> String {
    diff::versions(group.iter().map(Keyed::row))
}

/// The keys whose kind the source's history decides: a `wrong` row may be
/// `stale`, an `extra` key `resurrected`.
pub fn undecided(merged: &Merged) -> impl Iterator<Item = &str> {
    merged
        .diff
        .iter()
        .filter(|d| matches!(d.kind, DiffKind::Wrong | DiffKind::Extra))
        .map(|d| d.key.as_str())
}

/// Settle `stale` and `resurrected` with `history` (of at least the
/// [`undecided`] keys), count the kinds, and put the diff in the order the
/// in-memory comparison gives: the source's keys by key, then the lake's
/// own.
#[must_use]
pub fn classify(mut merged: Merged, history: Option<&History>) -> (Vec<DiffRow>, Counts) {
    for row in &mut merged.diff {
        let versions = history.and_then(|h| h.get(&row.key));
        match (row.kind, versions) {
            (DiffKind::Wrong, Some(v)) if row.lake.as_ref().is_some_and(|l| v.contains(l)) => {
                row.kind = DiffKind::Stale;
            }
            (DiffKind::Extra, Some(_)) => row.kind = DiffKind::Resurrected,
            _ => {}
        }
    }
    merged
        .diff
        .sort_by(|a, b| (a.source.is_none(), &a.key).cmp(&(b.source.is_none(), &b.key)));
    let mut counts = merged.counts;
    counts.wrong = merged.diff.len() as u64;
    for row in &merged.diff {
        *counts.by_kind.entry(row.kind).or_default() += 1;
    }
    (merged.diff, counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::canonical::Layout;
    use crate::reconcile::diff::compare;

    /// Keyed rows of a table `(id int, v text)` from (id, v) pairs.
    fn keyed(rows: &[(i64, &str)]) -> Vec<Keyed> {
        let layout = Layout::new(vec!["id", "v"], vec![0]);
        rows.iter()
            .map(|(id, v)| {
                let values = [id.to_string(), format!("\"{v}\"")];
                Keyed::new(&layout, &values)
            })
            .collect()
    }

    fn order() -> KeyOrder {
        KeyOrder::new(&[("id", Kind::Int)])
    }

    /// The streaming merge and the in-memory comparison of the same rows.
    fn both(
        source: &[(i64, &str)],
        lake: &[(i64, &str)],
        history: Option<&History>,
    ) -> ((Vec<DiffRow>, Counts), (Vec<DiffRow>, Counts)) {
        let src = keyed(source);
        let mut lk = keyed(lake);
        let in_memory = compare(
            "t",
            "c",
            &src.iter().map(Keyed::to_pair).collect(),
            &lk.iter().map(Keyed::to_pair).collect::<Vec<_>>(),
            history,
        );
        lk.sort_by(|a, b| order().cmp(a, b));
        let merged = merge(
            "t",
            "c",
            &order(),
            src.into_iter().map(Ok),
            lk.into_iter().map(Ok),
            |_, _| {},
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        (classify(merged, history), in_memory)
    }

    #[test]
    fn the_merge_finds_what_the_in_memory_comparison_finds() {
        let mut history = History::new();
        for (k, v) in [("id=2", "id=2, v=\"old\""), ("id=9", "id=9, v=\"gone\"")] {
            history.entry(k.into()).or_default().insert(v.into());
        }
        let source = [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (10, "j"), (11, "k")];
        let lake = [
            // 1 missing
            (2, "old"), // stale
            (3, "x"),   // wrong
            (4, "d"),
            (4, "e"),    // duplicate
            (9, "gone"), // resurrected
            (7, "g"),    // extra
            (12, "l"),
            (12, "m"), // duplicate the source never had
            (10, "j"),
            (11, "k"),
        ];
        let (merged, in_memory) = both(&source, &lake, Some(&history));
        assert_eq!(merged, in_memory);
        let kinds: Vec<_> = merged.0.iter().map(|d| (d.key.as_str(), d.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("id=1", DiffKind::Missing),
                ("id=2", DiffKind::Stale),
                ("id=3", DiffKind::Wrong),
                ("id=4", DiffKind::Duplicate),
                ("id=12", DiffKind::Duplicate),
                ("id=7", DiffKind::Extra),
                ("id=9", DiffKind::Resurrected),
            ]
        );
        assert_eq!(merged.1.compared, 9);
        assert_eq!(merged.1.lake_rows, 10);
        // Without history: no stale, no resurrected.
        let (merged, in_memory) = both(&source, &lake, None);
        assert_eq!(merged, in_memory);
    }

    #[test]
    fn empty_sides_and_identical_sides() {
        let rows = [(1, "a"), (2, "b")];
        for (source, lake) in [
            (&rows[..], &[][..]),
            (&[][..], &rows[..]),
            (&rows[..], &rows[..]),
            (&[][..], &[][..]),
        ] {
            let (merged, in_memory) = both(source, lake, None);
            assert_eq!(merged, in_memory);
        }
    }

    #[test]
    fn a_side_out_of_order_is_reported_not_merged() {
        let src = keyed(&[(1, "a"), (10, "b"), (9, "c")]);
        let lake = keyed(&[(1, "a")]);
        let result = merge(
            "t",
            "c",
            &order(),
            src.into_iter().map(Ok),
            lake.into_iter().map(Ok),
            |_, _| {},
        );
        assert!(
            matches!(&result, Err(Merge::Unordered { side: "source", key, after }) if key == "id=9" && after == "id=10"),
            "{result:?}"
        );
    }

    #[test]
    fn keys_order_by_value_not_by_text() {
        let k = |kind: Kind, a: &str, b: &str| kind.cmp_canonical(a, b);
        assert_eq!(k(Kind::Int, "9", "10"), Ordering::Less);
        assert_eq!(k(Kind::Int, "-10", "-9"), Ordering::Less);
        assert_eq!(k(Kind::Decimal, "-2", "-1.5"), Ordering::Less);
        assert_eq!(k(Kind::Decimal, "0.25", "0.3"), Ordering::Less);
        assert_eq!(k(Kind::Decimal, "9.99", "10"), Ordering::Less);
        assert_eq!(k(Kind::Decimal, "-0.5", "0"), Ordering::Less);
        assert_eq!(k(Kind::Text, "\"ab\"", "\"ab \""), Ordering::Less);
        assert_eq!(k(Kind::Text, "\"a\\\"b\"", "\"a#\""), Ordering::Less); // '"' (0x22) < '#'
        assert_eq!(k(Kind::Text, "\"é\"", "\"z\""), Ordering::Greater); // bytes, not a locale
        assert_eq!(k(Kind::Float, "NaN", "inf"), Ordering::Greater);
        assert_eq!(k(Kind::Float, "-inf", "-1e300"), Ordering::Less);
        assert_eq!(
            k(Kind::Int, crate::reconcile::canonical::NULL, "1"),
            Ordering::Greater
        );
        // Integers compare as written (sign, length, digits) exactly as by
        // value, across signs, lengths and the extremes; text that is not
        // canonical (leading zeros) still by value.
        let values = [
            i128::from(i64::MIN),
            -1_000_000,
            -999_999,
            -10,
            -9,
            -1,
            0,
            1,
            9,
            10,
            99,
            100,
            123_456_789,
            i128::from(i64::MAX),
            i128::MAX,
        ];
        for a in values {
            for b in values {
                let got = k(Kind::Int, &a.to_string(), &b.to_string());
                assert_eq!(got, a.cmp(&b), "{a} vs {b}");
            }
        }
        assert_eq!(k(Kind::Int, "007", "10"), Ordering::Less);
        assert_eq!(k(Kind::Int, "-0", "1"), Ordering::Less);
        // A one-column integer key (compared as i64 where it fits) orders
        // the same way, NULL last.
        let layout = Layout::new(vec!["id"], vec![0]);
        let key = |v: &str| Keyed::new(&layout, &[v.to_owned()]);
        let null = crate::reconcile::canonical::NULL;
        let texts: Vec<String> = values
            .iter()
            .map(ToString::to_string)
            .chain(["007".into(), "-0".into(), null.into()])
            .collect();
        for a in &texts {
            for b in &texts {
                assert_eq!(
                    order().cmp(&key(a), &key(b)),
                    k(Kind::Int, a, b),
                    "{a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn composite_keys_compare_column_by_column() {
        let layout = Layout::new(vec!["b", "a", "v"], vec![1, 0]);
        let row = |a: i64, b: &str| {
            let values = [format!("\"{b}\""), a.to_string(), "1".to_owned()];
            Keyed::new(&layout, &values)
        };
        let order = KeyOrder::new(&[("a", Kind::Int), ("b", Kind::Text)]);
        assert_eq!(row(9, "z").key(), "a=9, b=\"z\"");
        assert_eq!(order.cmp(&row(9, "z"), &row(10, "a")), Ordering::Less);
        assert_eq!(order.cmp(&row(10, "b"), &row(10, "a")), Ordering::Greater);
        assert_eq!(order.cmp(&row(10, "a"), &row(10, "a")), Ordering::Equal);
    }
}
