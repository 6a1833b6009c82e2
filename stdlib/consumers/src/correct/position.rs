//! The order the correct consumer applies changes in: per key, a change
//! wins only if its [`Position`] is above the one the lake holds for that
//! key. docs/consumers.md ("Ordering") explains the rule; the short form:
//!
//! - a streamed change with `source.sequence = [c, lsn]` is at `(c, lsn)`:
//!   `c`, the commit LSN of the transaction streamed before it, is constant
//!   within a transaction and never decreases along the stream, and `lsn`
//!   increases within one;
//! - a snapshot read at snapshot LSN `S` is at `(S, 0)`: it reflects every
//!   transaction committed before `S`, and every one streamed after it has a
//!   previous commit `c >= S`;
//! - the first transaction streamed after a snapshot has no `c` (Debezium
//!   sends `null`): it is at `(max(S, lsn), lsn)`, `S` being the partition's
//!   latest snapshot LSN at that point of the stream (its EPOCH, stored with
//!   the offsets). For one key, row locks put its change after the commit
//!   of any earlier change of that key, so `lsn` alone already beats every
//!   older streamed change; `S` lifts a transaction that straddled the
//!   snapshot (written before `S`, committed after) above the snapshot read.
//!
//! Raw `source.lsn` alone is not an order (transactions interleave), nor
//! are `txId` or `ts_ms`. Equal positions for one key mean the same change
//! delivered twice; a tie of different operations at one LSN (a key-changing
//! update emits delete + create) ranks delete < create < update.

use lossproof_runtime::change_event::{ChangeOp, RowChange};

/// Where a change stands in the source's commit order, for its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Position {
    /// The commit LSN this change is known to follow.
    pub after_commit: u64,
    /// The change's own WAL position.
    pub lsn: u64,
    /// Tie-break of operations at one LSN: delete 0 < create 1 < update 2 < read 3.
    pub rank: u8,
}

impl Position {
    /// The position of `change`, read at a point of its partition's stream
    /// whose latest snapshot LSN is `epoch` (0 if none was seen).
    #[must_use]
    pub fn of(change: &RowChange, epoch: u64) -> Self {
        let rank = match change.op {
            ChangeOp::Delete => 0,
            ChangeOp::Create => 1,
            ChangeOp::Update => 2,
            ChangeOp::Read => 3,
        };
        if change.op == ChangeOp::Read && change.snapshot {
            return Self {
                after_commit: change.lsn,
                lsn: 0,
                rank,
            };
        }
        match change.last_commit_lsn {
            Some(c) => Self {
                after_commit: c,
                lsn: change.lsn,
                rank,
            },
            None => Self {
                after_commit: epoch.max(change.lsn),
                lsn: change.lsn,
                rank,
            },
        }
    }

    /// The partition's epoch after `change`: a blocking-snapshot read moves
    /// it to the snapshot's LSN.
    #[must_use]
    pub fn next_epoch(change: &RowChange, epoch: u64) -> u64 {
        if change.op == ChangeOp::Read && change.snapshot {
            change.lsn
        } else {
            epoch
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lossproof_runtime::change_event::Row;

    fn change(op: ChangeOp, last_commit: Option<u64>, lsn: u64) -> RowChange {
        RowChange {
            op,
            table: "orders".into(),
            key: Row::new(),
            before: None,
            after: None,
            lsn,
            transaction: None,
            snapshot_first: false,
            snapshot_last: false,
            tx_id: None,
            last_commit_lsn: last_commit,
            snapshot: op == ChangeOp::Read,
            columns: Vec::new().into(),
        }
    }

    #[test]
    fn interleaved_transactions_order_by_commit_not_by_lsn() {
        // T1 writes k at 120 and commits at 150; T2 wrote other rows from
        // 100 and commits at 140 first. T3 (after T1) updates k at 160.
        let t1 = Position::of(&change(ChangeOp::Update, Some(140), 120), 0);
        let t3 = Position::of(&change(ChangeOp::Update, Some(150), 160), 0);
        assert!(t3 > t1);
        // Raw LSN would order a later transaction's earlier-written change first:
        let t2_late = Position::of(&change(ChangeOp::Update, Some(150), 110), 0);
        assert!(t2_late > t1, "a later commit wins whatever its own lsn");
    }

    #[test]
    fn a_straddling_transaction_beats_the_snapshot_it_straddled() {
        // T writes k at 90; the snapshot reads k at S = 100 (without T); T
        // commits at 110 and is the first transaction streamed: no `c`.
        let read = Position::of(&change(ChangeOp::Read, None, 100), 0);
        let epoch = Position::next_epoch(&change(ChangeOp::Read, None, 100), 0);
        assert_eq!(epoch, 100);
        let straddler = Position::of(&change(ChangeOp::Update, None, 90), epoch);
        assert!(straddler > read);
        // The next transaction carries c = T's commit (110).
        let next = Position::of(&change(ChangeOp::Update, Some(110), 130), epoch);
        assert!(next > straddler);
    }

    #[test]
    fn a_re_snapshot_beats_everything_streamed_before_it_and_loses_to_what_follows() {
        let old = Position::of(&change(ChangeOp::Update, Some(400), 420), 0);
        let reread = Position::of(&change(ChangeOp::Read, None, 500), 0);
        assert!(reread > old);
        let after = Position::of(&change(ChangeOp::Update, Some(510), 505), 500);
        assert!(after > reread);
        // An old change delivered again after the re-snapshot stays below it.
        assert!(Position::of(&change(ChangeOp::Create, Some(300), 310), 500) < reread);
    }

    #[test]
    fn the_same_change_twice_is_equal_and_ties_rank_delete_first() {
        let a = Position::of(&change(ChangeOp::Update, Some(7), 9), 0);
        assert_eq!(a, Position::of(&change(ChangeOp::Update, Some(7), 9), 0));
        assert!(
            Position::of(&change(ChangeOp::Delete, Some(7), 9), 0)
                < Position::of(&change(ChangeOp::Create, Some(7), 9), 0)
        );
    }

    #[test]
    fn an_epoch_not_seen_never_lifts_an_old_change() {
        // With no snapshot seen (empty table at snapshot time), a first
        // streamed transaction falls back to its lsn: still above every
        // change of its key that committed before it wrote.
        let deleted = Position::of(&change(ChangeOp::Delete, Some(50), 55), 0);
        let reinserted = Position::of(&change(ChangeOp::Create, None, 70), 0);
        assert!(reinserted > deleted);
    }
}
