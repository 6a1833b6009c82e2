//! Commits at source transaction boundaries only (docs/consumers.md,
//! "Transactions"): the records of a source transaction are applied
//! together, in one catalog commit with every table's changes, however the
//! fetched batches fall.
//!
//! Debezium's transaction metadata (`provide.transaction.metadata`) gives
//! every change event its transaction's id and place in it, and the
//! transaction topic a BEGIN and an END (with the transaction's event count
//! per table) for every transaction, in commit order. The [`Gate`] holds
//! each partition's records from the first one of a transaction not yet
//! complete (its END read and every one of its events for the tables this
//! consumer writes received), and releases, in commit order, the complete
//! transactions' records, with the records between them that belong to no
//! transaction (snapshot reads, tombstones, undecodable records).
//!
//! Offsets: a partition's released records are a prefix of what was read,
//! so the offsets stored with a commit never pass a held record; and the
//! transaction topic's stored offset never passes the BEGIN of a
//! transaction not yet applied, so a restart reads again every transaction
//! it has not applied, BEGIN, events and END.
//!
//! A copy of an event of a transaction applied before a restart (a
//! duplicate delivery) has no BEGIN to wait for: it is recognised by its
//! `source.sequence[0]` (the commit LSN of the transaction before its own,
//! strictly increasing in commit order): at or below that of a transaction
//! released since, it belongs to one already applied, and passes (the apply
//! step finds it not newer).
//!
//! A connector stopped inside a transaction's events (deleted and created
//! again, its task restarted) resumes inside it, and Debezium then begins
//! the transaction again: a second BEGIN with the same id, its events
//! numbered from 1 again, and an END that counts only the events sent after
//! the resumption (measured: `recreate-connector.lp`, docs/consumers.md).
//! Counts and `total_order`s no longer tell the events apart, so such a
//! *resumed* transaction is complete once its END was read and every
//! partition was then read to the end it had when the END was read
//! ([`Gate::ends`]): the connector sends a transaction's events before its
//! END.
//!
//! A blocking snapshot's reads (the connector's initial snapshot) belong to
//! no transaction: they are the source at the snapshot's start, one state.
//! They are held until the read marked `last` arrived and every partition
//! was read to the end it had then ([`Gate::ends`]), in rounds until one
//! reads nothing of the snapshot past the previous round's ends (a
//! producer orders records per partition only): the whole snapshot in one
//! commit. Bounded: past [`MAX_HELD`] records held (a
//! preload of a million rows), the snapshot's reads are released as they
//! come, in parts ([`Gate::in_parts`]), which the consumer commits on a
//! branch readers do not see and publishes once the snapshot is complete
//! (docs/consumers.md); past it in a streamed transaction, the oldest
//! incomplete one is released as it is (logged).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use lossproof_runtime::change_event::TxMarker;

use super::state::Partition;

/// Records held at most before the oldest incomplete transaction is
/// released in parts.
pub const MAX_HELD: usize = 200_000;
/// Ids of released transactions remembered (for late copies of their
/// events), newest kept.
const REMEMBERED: usize = 100_000;

/// What the gate needs to know of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// A change event of a source transaction.
    Change {
        tx: &'a str,
        total_order: u64,
        /// `source.sequence[0]`, else (the first transaction after a
        /// snapshot has none) the event's own `source.lsn`: either is at or
        /// below the `sequence[0]` of every transaction committed after its
        /// own.
        last_commit_lsn: Option<u64>,
    },
    /// A record of the transaction topic.
    Marker(&'a TxMarker),
    /// A read of a blocking snapshot (its first read, its last; `lsn`:
    /// every read of one snapshot carries the same).
    Snapshot { first: bool, last: bool, lsn: u64 },
    /// Belongs to no transaction.
    Free,
}

/// A record the gate can hold.
pub trait Gated {
    fn partition(&self) -> &Partition;
    fn offset(&self) -> i64;
    fn part(&self) -> Part<'_>;
}

/// Where the gate is with a blocking snapshot's reads.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Snapshot {
    /// Reads are held (none seen yet, or not the last).
    Open,
    /// The last read arrived: the ends of every partition are wanted.
    LastSeen,
    /// Complete once every partition was read to its end here.
    Ends(HashMap<Partition, i64>),
    /// Released.
    Done,
}

/// One pending transaction.
#[derive(Debug, Default)]
struct Pending {
    begun: bool,
    /// A second BEGIN came: the connector resumed inside it (module doc).
    resumed: bool,
    /// For a resumed transaction: the end of every partition, taken after
    /// its END was read.
    ends: Option<HashMap<Partition, i64>>,
    /// Its END's counts per table this consumer writes.
    counts: Option<Vec<(String, u64)>>,
    /// The `total_order`s received, per table.
    seen: HashMap<String, HashSet<u64>>,
    last_commit_lsn: Option<u64>,
}

impl Pending {
    /// Whether every event of it was read (`read_to`: the next offset to
    /// read, per partition).
    fn complete(&self, read_to: &HashMap<Partition, i64>) -> bool {
        let counted = self.counts.as_ref().is_some_and(|counts| {
            counts
                .iter()
                .all(|(table, n)| self.seen.get(table).map_or(0, HashSet::len) as u64 >= *n)
        });
        counted
            && (!self.resumed
                || self
                    .ends
                    .as_ref()
                    .is_some_and(|ends| read_past(read_to, ends)))
    }

    /// A resumed transaction whose END was read waits for the ends of
    /// every partition.
    fn wants_ends(&self) -> bool {
        self.resumed && self.counts.is_some() && self.ends.is_none()
    }
}

/// Whether every partition in `ends` was read to its end there.
fn read_past(read_to: &HashMap<Partition, i64>, ends: &HashMap<Partition, i64>) -> bool {
    ends.iter()
        .all(|(p, end)| read_to.get(p).copied().unwrap_or(0) >= *end)
}

/// Holds records until their transaction is complete (see the module doc).
pub struct Gate<R> {
    transaction_topic: String,
    /// The table (`public.orders`) of each topic read.
    tables: HashMap<String, String>,
    queues: BTreeMap<Partition, VecDeque<R>>,
    pending: HashMap<String, Pending>,
    /// Released transactions, oldest first (bounded by [`REMEMBERED`]).
    released: HashSet<String>,
    released_order: VecDeque<String>,
    /// The highest `sequence[0]` of a released transaction.
    released_lsn: Option<u64>,
    held: usize,
    snapshot: Snapshot,
    /// A snapshot began after streamed transactions (a recreated
    /// connector's): the partitions where one of its reads was taken in
    /// since. A change read before that in its partition is from before the
    /// new snapshot, and its transaction may never end (see [`Gate::push`]).
    resnapshot: Option<std::collections::HashSet<Partition>>,
    /// Whether any transaction was seen (a snapshot after that is a new
    /// connector's).
    streamed: bool,
    /// The LSN of the snapshot being read, and of those released: a read of
    /// a released snapshot is a copy (sent again), not a new snapshot.
    reading: Option<u64>,
    copies: std::collections::HashSet<u64>,
    /// The next offset to read, per partition (what was pushed).
    read_to: HashMap<Partition, i64>,
    /// Transactions a new snapshot cut (their END will never come): held,
    /// then released with that snapshot, in its commit. The snapshot is the
    /// source after them, so a reader never sees them without it.
    cut: Vec<String>,
    /// What was released before it was complete, and why ([`MAX_HELD`], a
    /// new snapshot).
    pub forced: Vec<String>,
    /// Records held at most ([`MAX_HELD`] unless set).
    max_held: usize,
    /// The snapshot's reads are released as they come, before it is
    /// complete ([`Gate::in_parts`]).
    parts: bool,
    /// The highest offset of a read of the snapshot, per partition, and the
    /// ends of the previous round ([`Gate::snapshot_complete`]).
    snapshot_reads: HashMap<Partition, i64>,
    previous_ends: Option<HashMap<Partition, i64>>,
}

impl<R: Gated> Gate<R> {
    /// A gate for `topics` (`<prefix>.<schema>.<table>`) and their
    /// `transaction_topic` (`<prefix>.transaction`).
    #[must_use]
    pub fn new(transaction_topic: &str, topics: &[String]) -> Self {
        let prefix = transaction_topic
            .strip_suffix("transaction")
            .unwrap_or_default();
        Self {
            transaction_topic: transaction_topic.to_owned(),
            tables: topics
                .iter()
                .filter_map(|t| Some((t.clone(), t.strip_prefix(prefix)?.to_owned())))
                .collect(),
            queues: BTreeMap::new(),
            pending: HashMap::new(),
            released: HashSet::new(),
            released_order: VecDeque::new(),
            released_lsn: None,
            held: 0,
            snapshot: Snapshot::Open,
            resnapshot: None,
            streamed: false,
            reading: None,
            copies: std::collections::HashSet::new(),
            read_to: HashMap::new(),
            cut: Vec::new(),
            forced: Vec::new(),
            max_held: MAX_HELD,
            parts: false,
            snapshot_reads: HashMap::new(),
            previous_ends: None,
        }
    }

    /// Hold at most `max_held` records (tests: a snapshot in parts without
    /// a million rows).
    #[must_use]
    pub fn holding_at_most(mut self, max_held: usize) -> Self {
        self.max_held = max_held.max(1);
        self
    }

    /// Whether what [`Gate::ready`] released last holds reads of a snapshot
    /// too large to hold whole that is not complete yet: a state no reader
    /// should see, to be committed where readers of the lake do not look
    /// until a later release completes it.
    #[must_use]
    pub fn in_parts(&self) -> bool {
        self.parts
    }

    /// The gate of a consumer resuming at `offsets` (the next offset of each
    /// partition it reads from there).
    #[must_use]
    pub fn resuming_at(mut self, offsets: &HashMap<Partition, i64>) -> Self {
        self.read_to.clone_from(offsets);
        self
    }

    /// Whether the gate needs the end of every partition at this moment
    /// ([`Gate::ends`]): the snapshot's last read arrived, or the END of a
    /// resumed transaction.
    #[must_use]
    pub fn wants_ends(&self) -> bool {
        self.snapshot == Snapshot::LastSeen || self.pending.values().any(Pending::wants_ends)
    }

    /// The end (next offset) of every partition read, taken after what
    /// [`Gate::wants_ends`] waited for was read: every read of the snapshot,
    /// every event of the resumed transaction, is before it.
    pub fn ends(&mut self, ends: &HashMap<Partition, i64>) {
        if self.snapshot == Snapshot::LastSeen {
            self.snapshot = Snapshot::Ends(ends.clone());
        }
        for pending in self.pending.values_mut().filter(|p| p.wants_ends()) {
            pending.ends = Some(ends.clone());
        }
    }

    fn complete(&self, id: &str) -> bool {
        self.pending
            .get(id)
            .is_some_and(|p| p.complete(&self.read_to))
    }

    fn snapshot_complete(&mut self) -> bool {
        if let Snapshot::Ends(ends) = &self.snapshot
            && read_past(&self.read_to, ends)
        {
            // Ends taken once the connector's snapshot was over can still
            // miss some of its reads: Kafka orders a producer's records per
            // partition only, and the connector's producer sends a large
            // backlog partition by partition, so a BEGIN written after the
            // snapshot was seen with 68,000 of its reads not yet in their
            // partition (`at-size.lp`, 2026-12-08). So the ends are taken
            // again once reached, until a round read no read of the
            // snapshot past the previous ends.
            let late = self.previous_ends.as_ref().is_none_or(|previous| {
                self.snapshot_reads
                    .iter()
                    .any(|(p, offset)| *offset >= previous.get(p).copied().unwrap_or(0))
            });
            if late {
                self.previous_ends = Some(ends.clone());
                self.snapshot = Snapshot::LastSeen;
                return false;
            }
            self.snapshot = Snapshot::Done;
            self.previous_ends = None;
            self.snapshot_reads.clear();
            self.resnapshot = None;
            // Its reads sent again later (a redelivery) are copies.
            self.copies.extend(self.reading.take());
        }
        self.snapshot == Snapshot::Done
    }

    /// Records held now.
    #[must_use]
    pub fn held(&self) -> usize {
        self.held
    }

    /// What the gate waits for (for the consumer's log): each partition's
    /// first held record, the snapshot's state.
    #[must_use]
    pub fn waiting_for(&self) -> String {
        let fronts: Vec<String> = self
            .queues
            .iter()
            .filter_map(|(p, q)| {
                let front = q.front()?;
                let what = match front.part() {
                    Part::Change { tx, .. } => {
                        let state = self.pending.get(tx).map_or("unknown".to_owned(), |p| {
                            format!(
                                "begun {}, end {}, seen {:?}",
                                p.begun,
                                p.counts.is_some(),
                                p.seen
                                    .iter()
                                    .map(|(t, s)| (t.clone(), s.len()))
                                    .collect::<Vec<_>>()
                            )
                        });
                        format!("transaction {tx} ({state})")
                    }
                    Part::Marker(TxMarker::Begin { id, .. }) => format!("BEGIN {id}"),
                    Part::Marker(TxMarker::End { id, .. }) => format!("END {id}"),
                    Part::Snapshot { .. } => "a snapshot read".to_owned(),
                    Part::Free => "a record of no transaction".to_owned(),
                };
                Some(format!(
                    "{}[{}] at {}: {what} ({} held)",
                    p.0,
                    p.1,
                    front.offset(),
                    q.len()
                ))
            })
            .collect();
        format!("snapshot {:?}; {}", self.snapshot, fronts.join("; "))
    }

    /// Take in records as read (each partition's in offset order).
    pub fn push(&mut self, records: impl IntoIterator<Item = R>) {
        for record in records {
            // The connector writes transactions again only once its snapshot
            // is over: a BEGIN or END after the snapshot's LSN ends it (its
            // read marked `last` may be in a table this consumer does not
            // read: the connector's heartbeat table).
            if let (
                Part::Marker(TxMarker::Begin { lsn, .. } | TxMarker::End { lsn, .. }),
                Some(reading),
            ) = (record.part(), self.reading)
                && lsn.is_some_and(|lsn| lsn > reading)
                && self.snapshot == Snapshot::Open
            {
                self.snapshot = Snapshot::LastSeen;
            }
            match record.part() {
                Part::Marker(TxMarker::Begin { id, .. }) => {
                    if !self.released.contains(id) {
                        let pending = self.pending.entry(id.clone()).or_default();
                        pending.resumed |= pending.begun;
                        pending.begun = true;
                    }
                }
                Part::Marker(TxMarker::End { id, counts, .. }) => {
                    let read: HashSet<&String> = self.tables.values().collect();
                    self.pending.entry(id.clone()).or_default().counts = Some(
                        counts
                            .iter()
                            .filter(|(table, _)| read.contains(table))
                            .cloned()
                            .collect(),
                    );
                }
                Part::Change {
                    tx,
                    total_order,
                    last_commit_lsn,
                } => {
                    self.streamed = true;
                    if self
                        .resnapshot
                        .as_ref()
                        .is_some_and(|after| !after.contains(record.partition()))
                        && !self.released.contains(tx)
                    {
                        // Streamed before a new snapshot began: a connector
                        // deleted mid-transaction never wrote its END.
                        self.cut_by_snapshot(tx);
                    }
                    if !self.released.contains(tx) {
                        let table = self
                            .tables
                            .get(&record.partition().0)
                            .cloned()
                            .unwrap_or_default();
                        let pending = self.pending.entry(tx.to_owned()).or_default();
                        pending.seen.entry(table).or_default().insert(total_order);
                        pending.last_commit_lsn = last_commit_lsn;
                    }
                }
                Part::Snapshot { lsn, .. } if self.copies.contains(&lsn) => {}
                Part::Snapshot { first, last, lsn } => {
                    self.reading = Some(lsn);
                    let read = self
                        .snapshot_reads
                        .entry(record.partition().clone())
                        .or_insert(0);
                    *read = (*read).max(record.offset());
                    if first && (self.snapshot != Snapshot::Open || self.streamed) {
                        // Another snapshot (a recreated connector's): every
                        // transaction pending now was cut by it.
                        self.snapshot = Snapshot::Open;
                        self.previous_ends = None;
                        self.resnapshot = Some(std::collections::HashSet::new());
                        let cut: Vec<String> = self
                            .pending
                            .iter()
                            .filter(|(_, p)| !p.complete(&self.read_to))
                            .map(|(id, _)| id.clone())
                            .collect();
                        for id in cut {
                            self.cut_by_snapshot(&id);
                        }
                    }
                    if let Some(after) = &mut self.resnapshot {
                        after.insert(record.partition().clone());
                    }
                    if last && self.snapshot == Snapshot::Open {
                        self.snapshot = Snapshot::LastSeen;
                    }
                }
                Part::Free => {}
            }
            let next = self.read_to.entry(record.partition().clone()).or_insert(0);
            *next = (*next).max(record.offset() + 1);
            self.held += 1;
            self.queues
                .entry(record.partition().clone())
                .or_default()
                .push_back(record);
        }
    }

    /// The records that can be applied now, each partition's in order;
    /// what is left waits for its transaction.
    pub fn ready(&mut self) -> Vec<R> {
        if self.parts && self.snapshot_complete() {
            self.parts = false;
        }
        if self.held > self.max_held {
            self.force_oldest();
        }
        if !self.cut.is_empty() && self.snapshot_complete() {
            for id in std::mem::take(&mut self.cut) {
                self.release(&id);
            }
        }
        let mut out = Vec::new();
        // The transaction topic first: releasing an END releases its
        // transaction's events.
        let mut partitions: Vec<Partition> = self.queues.keys().cloned().collect();
        partitions.sort_by_key(|p| p.0 != self.transaction_topic);
        for partition in &partitions {
            while let Some(front) = self.queues.get(partition).and_then(VecDeque::front) {
                let go = match front.part() {
                    Part::Free => true,
                    Part::Snapshot { lsn, .. } => {
                        self.copies.contains(&lsn) || self.parts || self.snapshot_complete()
                    }
                    Part::Marker(TxMarker::Begin { id, .. }) => {
                        self.released.contains(id) || self.complete(id)
                    }
                    Part::Marker(TxMarker::End { id, .. }) => {
                        let id = id.clone();
                        if self.complete(&id) {
                            self.release(&id);
                        }
                        self.released.contains(&id)
                    }
                    Part::Change {
                        tx,
                        last_commit_lsn,
                        ..
                    } => {
                        let copy = !self
                            .pending
                            .get(tx)
                            .is_some_and(|p| p.begun || p.counts.is_some())
                            && last_commit_lsn
                                .zip(self.released_lsn)
                                .is_some_and(|(lsn, released)| lsn <= released);
                        if copy {
                            // A late copy of an applied transaction's event.
                            self.pending.remove(tx);
                        }
                        copy || self.released.contains(tx)
                    }
                };
                if !go {
                    break;
                }
                if let Some(record) = self.queues.get_mut(partition).and_then(VecDeque::pop_front) {
                    self.held -= 1;
                    out.push(record);
                }
            }
        }
        self.queues.retain(|_, q| !q.is_empty());
        out
    }

    /// Transaction `id` was cut by a new snapshot: it goes with that
    /// snapshot (at once if the snapshot was released already).
    fn cut_by_snapshot(&mut self, id: &str) {
        if self.released.contains(id) || self.cut.iter().any(|c| c == id) {
            return;
        }
        if self.snapshot == Snapshot::Done {
            self.release(id);
            self.forced.push(format!(
                "{id}: cut by a new snapshot (its END never came): applied as it is"
            ));
        } else {
            self.cut.push(id.to_owned());
            self.forced.push(format!(
                "{id}: cut by a new snapshot (its END never came): applied in the snapshot's commit"
            ));
        }
    }

    fn release(&mut self, id: &str) {
        if let Some(pending) = self.pending.remove(id) {
            self.released_lsn = self.released_lsn.max(pending.last_commit_lsn);
        }
        if self.released.insert(id.to_owned()) {
            self.released_order.push_back(id.to_owned());
            if self.released_order.len() > REMEMBERED
                && let Some(old) = self.released_order.pop_front()
            {
                self.released.remove(&old);
            }
        }
    }

    /// Release the snapshot's reads as they come ([`Gate::in_parts`]), or
    /// the transaction of the oldest held record on the transaction topic
    /// as it is (too large to hold whole).
    fn force_oldest(&mut self) {
        if self.snapshot != Snapshot::Done
            && !self.parts
            && self
                .queues
                .values()
                .any(|q| q.iter().any(|r| matches!(r.part(), Part::Snapshot { .. })))
        {
            self.parts = true;
            self.forced.push(format!(
                "the snapshot: more than {} records held: committed in parts, published once complete",
                self.max_held
            ));
            return;
        }
        let oldest = self
            .queues
            .iter()
            .filter(|(p, _)| p.0 == self.transaction_topic)
            .flat_map(|(_, q)| q.iter())
            .find_map(|r| match r.part() {
                Part::Marker(TxMarker::Begin { id, .. } | TxMarker::End { id, .. }) => {
                    Some(id.clone())
                }
                _ => None,
            });
        if let Some(id) = oldest {
            self.release(&id);
            self.forced.push(format!(
                "{id}: more than {} records held: applied in parts",
                self.max_held
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    enum R {
        /// A change event: table, transaction, total order, sequence[0],
        /// offset.
        Change(&'static str, &'static str, u64, u64, i64),
        Marker(TxMarker),
        Free(&'static str),
        /// A snapshot read: first?, last?, offset.
        Snap(bool, bool, i64),
    }

    impl Gated for (Partition, R) {
        fn partition(&self) -> &Partition {
            &self.0
        }
        fn offset(&self) -> i64 {
            match self.1 {
                R::Snap(_, _, offset) | R::Change(.., offset) => offset,
                _ => 0,
            }
        }
        fn part(&self) -> Part<'_> {
            match &self.1 {
                R::Change(_, tx, order, lsn, _) => Part::Change {
                    tx,
                    total_order: *order,
                    last_commit_lsn: Some(*lsn),
                },
                R::Marker(m) => Part::Marker(m),
                R::Free(_) => Part::Free,
                R::Snap(first, last, _) => Part::Snapshot {
                    first: *first,
                    last: *last,
                    lsn: 1,
                },
            }
        }
    }

    fn topic(name: &str) -> Partition {
        (format!("p.public.{name}"), 0)
    }

    fn change(table: &'static str, tx: &'static str, order: u64, lsn: u64) -> (Partition, R) {
        change_at(table, tx, order, lsn, 0)
    }

    fn change_at(
        table: &'static str,
        tx: &'static str,
        order: u64,
        lsn: u64,
        offset: i64,
    ) -> (Partition, R) {
        (topic(table), R::Change(table, tx, order, lsn, offset))
    }

    fn begin(tx: &str) -> (Partition, R) {
        (
            ("p.transaction".to_owned(), 0),
            R::Marker(TxMarker::Begin {
                id: tx.to_owned(),
                lsn: None,
            }),
        )
    }

    fn end(tx: &str, counts: &[(&str, u64)]) -> (Partition, R) {
        (
            ("p.transaction".to_owned(), 0),
            R::Marker(TxMarker::End {
                id: tx.to_owned(),
                lsn: None,
                counts: counts
                    .iter()
                    .map(|(t, n)| (format!("public.{t}"), *n))
                    .collect(),
            }),
        )
    }

    fn gate() -> Gate<(Partition, R)> {
        Gate::new(
            "p.transaction",
            &["p.public.orders".into(), "p.public.items".into()],
        )
    }

    fn changes(out: &[(Partition, R)]) -> Vec<(&'static str, &'static str, u64)> {
        out.iter()
            .filter_map(|(_, r)| match r {
                R::Change(t, tx, o, ..) => Some((*t, *tx, *o)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_transaction_waits_for_its_end_and_every_event() {
        let mut g = gate();
        // T1 writes an order and two items; the batch holds the order and
        // one item only.
        g.push([
            begin("t1"),
            change("orders", "t1", 1, 10),
            change("items", "t1", 2, 10),
        ]);
        assert!(changes(&g.ready()).is_empty());
        g.push([end("t1", &[("orders", 1), ("items", 2)])]);
        assert!(changes(&g.ready()).is_empty(), "one item missing");
        g.push([change("items", "t1", 3, 10)]);
        let out = g.ready();
        // Each partition's records in order (partitions one after another).
        assert_eq!(
            changes(&out),
            vec![("items", "t1", 2), ("items", "t1", 3), ("orders", "t1", 1)]
        );
        assert_eq!(out.len(), 5, "BEGIN and END released too");
        assert_eq!(g.held(), 0);
    }

    #[test]
    fn a_transaction_a_resumed_connector_began_again_waits_for_every_partition() {
        // The connector was stopped after t1's order and first two items
        // (total order 1-3); the new one begins t1 again and numbers the
        // last two items 1 and 2, its END counting those two only
        // (recreate-connector.lp, seed 11).
        let mut g = gate();
        g.push([
            begin("t1"),
            change_at("orders", "t1", 1, 10, 0),
            change_at("items", "t1", 2, 10, 0),
            change_at("items", "t1", 3, 10, 1),
            begin("t1"),
            end("t1", &[("items", 2)]),
        ]);
        assert!(
            changes(&g.ready()).is_empty(),
            "two items were read, but not the two the END counts"
        );
        assert!(g.wants_ends());
        g.ends(&HashMap::from([
            (("p.transaction".to_owned(), 0), 1),
            (topic("orders"), 1),
            (topic("items"), 4),
        ]));
        assert!(!g.wants_ends());
        g.push([change_at("items", "t1", 1, 10, 2)]);
        assert!(changes(&g.ready()).is_empty(), "one item still unread");
        g.push([change_at("items", "t1", 2, 10, 3)]);
        assert_eq!(
            changes(&g.ready()).len(),
            5,
            "the whole transaction at once"
        );
        assert_eq!(g.held(), 0);
    }

    #[test]
    fn a_later_transaction_waits_behind_an_incomplete_one_in_its_partition() {
        let mut g = gate();
        g.push([
            begin("t1"),
            change("orders", "t1", 1, 10),
            change("items", "t1", 2, 10),
            end("t1", &[("orders", 1), ("items", 2)]),
            begin("t2"),
            change("orders", "t2", 1, 20),
            end("t2", &[("orders", 1)]),
        ]);
        // t2 is complete, but comes after t1 in commit order.
        assert!(changes(&g.ready()).is_empty());
        g.push([change("items", "t1", 3, 10)]);
        assert_eq!(changes(&g.ready()).len(), 4);
    }

    #[test]
    fn records_of_no_transaction_pass_unless_behind_a_held_one() {
        let mut g = gate();
        g.push([(topic("orders"), R::Free("snapshot read"))]);
        assert_eq!(g.ready().len(), 1);
        g.push([
            change("orders", "t1", 1, 10),
            (topic("orders"), R::Free("junk")),
        ]);
        assert!(g.ready().is_empty());
        g.push([begin("t1"), end("t1", &[("orders", 1)])]);
        assert_eq!(g.ready().len(), 4);
    }

    #[test]
    fn tables_not_read_are_not_waited_for() {
        let mut g = gate();
        g.push([
            begin("t1"),
            change("orders", "t1", 1, 10),
            end("t1", &[("orders", 1), ("heartbeat", 1)]),
        ]);
        assert_eq!(changes(&g.ready()).len(), 1);
    }

    #[test]
    fn duplicates_count_once_and_late_copies_pass() {
        let mut g = gate();
        g.push([
            begin("t1"),
            change("orders", "t1", 1, 10),
            change("orders", "t1", 1, 10),
            end("t1", &[("orders", 2)]),
        ]);
        assert!(g.ready().iter().all(|(p, _)| p.0 == "p.transaction"));
        g.push([change("orders", "t1", 2, 10)]);
        assert_eq!(changes(&g.ready()).len(), 3);
        // A copy of t1's event after t1 was applied: it passes.
        g.push([change("orders", "t1", 1, 10)]);
        assert_eq!(changes(&g.ready()).len(), 1);
    }

    #[test]
    fn after_a_restart_copies_of_applied_transactions_pass_by_their_position() {
        // Nothing remembered: t0 (sequence 5) was applied before the
        // restart; t1 (sequence 10) is read again from its BEGIN.
        let mut g = gate();
        g.push([change("orders", "t0", 1, 5)]);
        assert!(g.ready().is_empty(), "not known yet to be old");
        g.push([
            begin("t1"),
            change("items", "t1", 1, 10),
            end("t1", &[("items", 1)]),
        ]);
        let out = g.ready();
        assert_eq!(changes(&out), vec![("items", "t1", 1), ("orders", "t0", 1)]);
        // A transaction after the last released one still waits.
        g.push([change("orders", "t2", 1, 20)]);
        assert!(g.ready().is_empty());
    }

    #[test]
    fn a_snapshot_is_released_whole_once_every_partition_was_read_to_its_end() {
        let mut g = gate();
        g.push([
            (topic("orders"), R::Snap(true, false, 0)),
            (topic("items"), R::Snap(false, true, 0)),
            begin("t1"),
            change("items", "t1", 1, 10),
            end("t1", &[("items", 1)]),
        ]);
        assert!(
            changes(&g.ready()).is_empty(),
            "t1 waits behind the snapshot"
        );
        assert!(g.wants_ends());
        g.ends(&HashMap::from([(topic("orders"), 2), (topic("items"), 1)]));
        assert!(!g.wants_ends());
        assert!(g.ready().iter().all(|(p, _)| p.0 == "p.transaction"));
        // The second read of orders, written before the last one.
        g.push([(topic("orders"), R::Snap(false, false, 1))]);
        assert!(
            g.ready().is_empty(),
            "the ends reached: taken again before the snapshot is complete"
        );
        assert!(g.wants_ends());
        g.ends(&HashMap::from([(topic("orders"), 2), (topic("items"), 1)]));
        let out = g.ready();
        assert_eq!(
            out.iter().filter(|(_, r)| matches!(r, R::Snap(..))).count(),
            3
        );
        assert_eq!(changes(&out), vec![("items", "t1", 1)]);
    }

    #[test]
    fn a_snapshot_read_past_the_ends_takes_another_round() {
        // The BEGIN after the snapshot arrived before some of its reads (a
        // producer sends partitions in any order).
        let mut g = gate();
        let snap = |offset| (topic("orders"), R::Snap(offset == 0, false, offset));
        g.push([
            snap(0),
            (
                ("p.transaction".to_owned(), 0),
                R::Marker(TxMarker::Begin {
                    id: "h".to_owned(),
                    lsn: Some(5),
                }),
            ),
        ]);
        let ends = |orders| HashMap::from([(topic("orders"), orders), (partition_tx(), 1)]);
        g.ends(&ends(1));
        assert!(g.ready().is_empty());
        assert!(g.wants_ends(), "first ends reached: a second round");
        g.ends(&ends(3));
        g.push([snap(1), snap(2)]);
        assert!(g.ready().is_empty(), "reads came past the first ends");
        assert!(g.wants_ends());
        g.ends(&ends(3));
        assert_eq!(
            g.ready()
                .iter()
                .filter(|(_, r)| matches!(r, R::Snap(..)))
                .count(),
            3,
            "a round with no read past the previous ends: complete"
        );
    }

    fn partition_tx() -> Partition {
        ("p.transaction".to_owned(), 0)
    }

    #[test]
    fn a_snapshot_too_large_to_hold_is_released_in_parts_until_complete() {
        let mut g = gate().holding_at_most(2);
        let snap = |first, last, offset| (topic("orders"), R::Snap(first, last, offset));
        g.push([snap(true, false, 0), snap(false, false, 1)]);
        assert!(g.ready().is_empty(), "two held: not past the bound yet");
        assert!(!g.in_parts());
        g.push([snap(false, false, 2)]);
        assert_eq!(g.ready().len(), 3, "past the bound: released as they are");
        assert!(g.in_parts(), "a part: the snapshot is not complete");
        assert_eq!(g.forced.len(), 1);
        g.push([snap(false, false, 3)]);
        assert_eq!(g.ready().len(), 1);
        assert!(g.in_parts());
        // The last read; then a transaction streamed after the snapshot.
        g.push([
            snap(false, true, 4),
            begin("t1"),
            change_at("items", "t1", 1, 10, 0),
            end("t1", &[("items", 1)]),
        ]);
        let out = g.ready();
        assert_eq!(out.len(), 4, "the last read, and t1 after it");
        assert_eq!(changes(&out), vec![("items", "t1", 1)]);
        assert!(g.in_parts(), "every partition not yet read to its end");
        assert!(g.wants_ends());
        let ends = HashMap::from([(topic("orders"), 5), (topic("items"), 1)]);
        g.ends(&ends);
        assert!(g.ready().is_empty());
        assert!(g.in_parts(), "the ends are taken again first");
        g.ends(&ends);
        assert!(g.ready().is_empty());
        assert!(!g.in_parts(), "complete: the parts are to be published");
        assert_eq!(g.held(), 0);
    }

    #[test]
    fn a_new_snapshot_takes_the_transactions_it_cut_into_its_commit() {
        let mut g = gate();
        // t1, streamed by a connector deleted before it wrote t1's END.
        g.push([begin("t1"), change("orders", "t1", 1, 10)]);
        assert!(changes(&g.ready()).is_empty());
        // The new connector's snapshot begins in orders; t1's item, read
        // before any snapshot read of items, is from before it.
        g.push([(topic("orders"), R::Snap(true, false, 5))]);
        g.push([change("items", "t1", 2, 10)]);
        assert!(
            changes(&g.ready()).is_empty(),
            "t1 waits for the snapshot, which is the source after it"
        );
        assert!(
            g.forced.iter().any(|f| f.starts_with("t1: cut")),
            "{:?}",
            g.forced
        );
        g.push([(topic("items"), R::Snap(false, true, 6))]);
        assert!(g.ready().iter().all(|(_, r)| !matches!(r, R::Snap(..))));
        let ends = HashMap::from([(topic("orders"), 6), (topic("items"), 7)]);
        g.ends(&ends);
        assert!(g.ready().is_empty(), "the ends are taken again first");
        g.ends(&ends);
        // One release: t1's changes, then the snapshot's reads after them.
        let out = g.ready();
        assert_eq!(changes(&out), vec![("items", "t1", 2), ("orders", "t1", 1)]);
        assert_eq!(
            out.iter().filter(|(_, r)| matches!(r, R::Snap(..))).count(),
            2
        );
    }

    #[test]
    fn a_transaction_after_the_snapshot_ends_it() {
        // Its read marked last went to a table not read (the heartbeat's):
        // a BEGIN past the snapshot's LSN says it is over.
        let mut g = gate();
        g.push([(topic("orders"), R::Snap(true, false, 0))]);
        assert!(g.ready().is_empty());
        assert!(!g.wants_ends());
        g.push([(
            ("p.transaction".to_owned(), 0),
            R::Marker(TxMarker::Begin {
                id: "h".to_owned(),
                lsn: Some(5),
            }),
        )]);
        assert!(g.wants_ends());
    }

    #[test]
    fn a_transaction_too_large_to_hold_is_released_in_parts() {
        let mut g = gate();
        g.push([begin("big")]);
        g.push((0..=MAX_HELD as u64).map(|i| change("orders", "big", i + 1, 10)));
        let out = g.ready();
        assert_eq!(
            g.forced,
            vec![format!(
                "big: more than {MAX_HELD} records held: applied in parts"
            )]
        );
        assert_eq!(changes(&out).len(), MAX_HELD + 1);
    }
}
