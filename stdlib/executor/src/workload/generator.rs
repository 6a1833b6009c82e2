//! The seeded generator: an endless, deterministic stream of intended
//! operations per connection.
//!
//! Each connection draws from its own ChaCha stream (the run's seed, stream
//! = connection index) and owns its own keys (ids congruent to the
//! connection index modulo the number of connections), so its sequence never
//! depends on how the connections interleave: the same seed always means the
//! same operations, whatever the timing.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

use super::op::{Cents, NewItem, NewOrder, Op};

const STATUSES: [&str; 4] = ["new", "paid", "shipped", "cancelled"];
const NAMES: [&str; 12] = [
    "Ada", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Leslie", "Margaret", "Niklaus",
    "Radia", "Tony", "Ken",
];

/// One connection's seeded draws, shared by every generator: its own ChaCha
/// stream, its own key space and its own clock.
pub struct Draws {
    rng: ChaCha8Rng,
    connection: u64,
    connections: u64,
    /// Cumulative percent thresholds for insert, update, delete, cascade.
    thresholds: [f64; 4],
    next_key: i64,
    /// Milliseconds after the workload's epoch.
    pub clock_ms: i64,
}

impl Draws {
    /// `mix` in percent for insert, update, delete, cascade (adds up to 100).
    #[must_use]
    pub fn new(seed: u64, connection: u64, connections: u64, mix: [f64; 4]) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(connection);
        let mut total = 0.0;
        let thresholds = mix.map(|p| {
            total += p;
            total
        });
        Self {
            rng,
            connection,
            connections,
            thresholds,
            next_key: 0,
            clock_ms: 0,
        }
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.rng.next_u64()) * u128::from(n.max(1))) >> 64) as u64
    }

    /// 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// A key no other connection uses.
    ///
    /// # Panics
    /// If there are more than `i64::MAX` connections.
    pub fn key(&mut self) -> i64 {
        self.next_key += 1;
        // Disjoint key spaces: connection c owns ids c+1, c+1+C, c+1+2C, ...
        (self.next_key - 1) * i64::try_from(self.connections).expect("few connections")
            + i64::try_from(self.connection).expect("few connections")
            + 1
    }

    /// One of the `count` preloaded rows this connection owns (row `i`
    /// belongs to connection `i mod connections`), uniformly; `None` when it
    /// owns none.
    pub fn owned(&mut self, count: u64) -> Option<u64> {
        if count <= self.connection {
            return None;
        }
        let owned = (count - self.connection).div_ceil(self.connections.max(1));
        Some(self.below(owned) * self.connections.max(1) + self.connection)
    }

    /// The clock moves on by 1..1000 ms.
    ///
    /// # Panics
    /// Never: the step is below 1000.
    pub fn tick(&mut self) -> i64 {
        self.clock_ms += 1 + i64::try_from(self.below(1000)).expect("small");
        self.clock_ms
    }

    /// The next operation's kind, by the mix: 0 insert, 1 update, 2 delete, 3 cascade.
    pub fn kind(&mut self) -> usize {
        let draw = self.rng.next_u64() as f64 / (u64::MAX as f64 + 1.0) * 100.0;
        self.thresholds.iter().position(|t| draw < *t).unwrap_or(0)
    }
}

/// One connection's generator and the model of what it has written.
pub struct Generator {
    draws: Draws,
    /// Live customers, each with their live orders.
    customers: Vec<(i64, Vec<i64>)>,
    /// Orders preloaded before capture (`preload N`), and those of them
    /// this connection deleted.
    preloaded: u64,
    preloaded_deleted: std::collections::HashSet<i64>,
}

impl Generator {
    /// `mix` in percent for insert, update, delete, cascade (adds up to 100).
    #[must_use]
    pub fn new(seed: u64, connection: u64, connections: u64, mix: [f64; 4]) -> Self {
        Self {
            draws: Draws::new(seed, connection, connections, mix),
            customers: Vec::new(),
            preloaded: 0,
            preloaded_deleted: std::collections::HashSet::new(),
        }
    }

    /// With `orders` preloaded orders ([`super::preload`]): half the
    /// updates and deletes then hit one of them, uniformly over the whole
    /// preloaded table (random updates across a large table). Without a
    /// preload the operations are exactly those of [`Generator::new`].
    #[must_use]
    pub fn with_preload(mut self, orders: u64) -> Self {
        self.preloaded = orders;
        self
    }

    /// A live preloaded order of this connection, half the time when there
    /// is a preload.
    fn pick_preloaded(&mut self) -> Option<i64> {
        if self.preloaded == 0 || self.below(2) == 0 {
            return None;
        }
        for _ in 0..4 {
            let i = self.draws.owned(self.preloaded)?;
            let id = super::preload::PRELOAD_BASE + i64::try_from(i).ok()?;
            if !self.preloaded_deleted.contains(&id) {
                return Some(id);
            }
        }
        None
    }

    fn below(&mut self, n: u64) -> u64 {
        self.draws.below(n)
    }

    fn key(&mut self) -> i64 {
        self.draws.key()
    }

    fn tick(&mut self) -> i64 {
        self.draws.tick()
    }

    fn order(&mut self) -> NewOrder {
        let order_id = self.key();
        let lines = 1 + self.below(4);
        let items: Vec<NewItem> = (1..=lines)
            .map(|line| NewItem {
                line_no: i32::try_from(line).expect("few lines"),
                sku: format!("SKU-{:05}", self.below(100_000)),
                quantity: 1 + i32::try_from(self.below(9)).expect("small"),
                unit_price: 50 + Cents::try_from(self.below(50_000)).expect("small"),
            })
            .collect();
        NewOrder {
            order_id,
            status: STATUSES[usize::try_from(self.below(2)).expect("small")],
            amount: items
                .iter()
                .map(|i| i.unit_price * i64::from(i.quantity))
                .sum(),
            quantity: items.iter().map(|i| i.quantity).sum(),
            note: self.note(),
            items,
        }
    }

    fn note(&mut self) -> Option<String> {
        match self.below(4) {
            0 => None,
            1 => Some(String::new()),
            _ => Some(format!("note {}", self.below(1_000_000))),
        }
    }

    fn insert(&mut self) -> Op {
        let at_ms = self.tick();
        if self.customers.is_empty() || self.below(5) == 0 {
            let customer_id = self.key();
            let name =
                NAMES[usize::try_from(self.below(NAMES.len() as u64)).expect("small")].to_owned();
            let email = format!("{}.{customer_id}@example.test", name.to_lowercase());
            let tier = 1 + i32::try_from(self.below(5)).expect("small");
            let orders: Vec<NewOrder> = (0..self.below(3)).map(|_| self.order()).collect();
            self.customers
                .push((customer_id, orders.iter().map(|o| o.order_id).collect()));
            Op::InsertCustomer {
                customer_id,
                name,
                email,
                tier,
                at_ms,
                orders,
            }
        } else {
            let index = usize::try_from(self.below(self.customers.len() as u64)).expect("index");
            let order = self.order();
            self.customers[index].1.push(order.order_id);
            Op::InsertOrder {
                customer_id: self.customers[index].0,
                order,
                at_ms,
            }
        }
    }

    /// A live order: (customer index, order index).
    fn pick_order(&mut self) -> Option<(usize, usize)> {
        let with_orders: Vec<usize> = (0..self.customers.len())
            .filter(|i| !self.customers[*i].1.is_empty())
            .collect();
        if with_orders.is_empty() {
            return None;
        }
        let c = with_orders[usize::try_from(self.below(with_orders.len() as u64)).expect("index")];
        let o = usize::try_from(self.below(self.customers[c].1.len() as u64)).expect("index");
        Some((c, o))
    }

    /// An update of order `order_id`.
    fn update(&mut self, order_id: i64) -> Op {
        let at_ms = self.tick();
        Op::UpdateOrder {
            order_id,
            status: STATUSES[usize::try_from(self.below(4)).expect("small")],
            amount: 100 + Cents::try_from(self.below(2_000_000)).expect("small"),
            quantity: 1 + i32::try_from(self.below(40)).expect("small"),
            note: self.note(),
            at_ms,
        }
    }

    /// A new customer (the workload's initial customers).
    ///
    /// # Panics
    /// Never: indices are drawn below the lengths they index.
    pub fn initial_customer(&mut self) -> Op {
        let customers = std::mem::take(&mut self.customers);
        let op = self.insert();
        let mut new = std::mem::take(&mut self.customers);
        self.customers = customers;
        self.customers.append(&mut new);
        op
    }

    /// The next intended operation. Falls back to an insert when the drawn
    /// kind has nothing to act on (no order to update yet).
    ///
    /// # Panics
    /// Never: indices are drawn below the lengths they index.
    pub fn next_op(&mut self) -> Op {
        let kind = self.draws.kind();
        if matches!(kind, 1 | 2)
            && let Some(order_id) = self.pick_preloaded()
        {
            if kind == 2 {
                self.preloaded_deleted.insert(order_id);
                return Op::DeleteOrder { order_id };
            }
            return self.update(order_id);
        }
        match kind {
            1 => match self.pick_order() {
                Some((c, o)) => {
                    let order_id = self.customers[c].1[o];
                    self.update(order_id)
                }
                None => self.insert(),
            },
            2 => match self.pick_order() {
                Some((c, o)) => Op::DeleteOrder {
                    order_id: self.customers[c].1.remove(o),
                },
                None => self.insert(),
            },
            3 if !self.customers.is_empty() => {
                let index =
                    usize::try_from(self.below(self.customers.len() as u64)).expect("index");
                Op::DeleteCustomer {
                    customer_id: self.customers.remove(index).0,
                }
            }
            _ => self.insert(),
        }
    }
}

/// FNV-1a, 64 bit: a digest that is the same on every platform and version.
#[must_use]
pub fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

#[cfg(test)]
mod tests {
    use super::*;

    const MIX: [f64; 4] = [50.0, 30.0, 15.0, 5.0];

    fn digest(seed: u64, n: usize) -> u64 {
        let mut total = FNV_OFFSET;
        for connection in 0..4 {
            let mut generator = Generator::new(seed, connection, 4, MIX);
            for _ in 0..n {
                total = fnv1a(total, generator.next_op().to_string().as_bytes());
            }
        }
        total
    }

    #[test]
    fn same_seed_same_operations_different_seed_different() {
        assert_eq!(digest(1, 2000), digest(1, 2000));
        assert_ne!(digest(1, 2000), digest(2, 2000));
    }

    #[test]
    fn connections_own_disjoint_keys() {
        let mut seen = std::collections::HashMap::new();
        for connection in 0..4u64 {
            let mut generator = Generator::new(9, connection, 4, MIX);
            for _ in 0..500 {
                if let Op::InsertCustomer { customer_id, .. } = generator.next_op() {
                    assert_eq!((customer_id - 1) % 4, i64::try_from(connection).unwrap());
                    assert!(
                        seen.insert(customer_id, connection).is_none(),
                        "key {customer_id} reused"
                    );
                }
            }
        }
    }

    /// With a preload, updates and deletes reach preloaded orders spread
    /// over the whole table, each connection only its own, a deleted one
    /// never again; the order ids a connection inserts stay its own.
    #[test]
    fn preloaded_orders_are_updated_and_deleted_by_their_connection() {
        use super::super::preload::PRELOAD_BASE;
        let preloaded = 1_000_000u64;
        for connection in 0..4u64 {
            let mut generator = Generator::new(5, connection, 4, MIX).with_preload(preloaded);
            let (mut updated, mut deleted) = (Vec::new(), std::collections::HashSet::new());
            for _ in 0..4000 {
                match generator.next_op() {
                    Op::UpdateOrder { order_id, .. } if order_id >= PRELOAD_BASE => {
                        assert!(
                            !deleted.contains(&order_id),
                            "{order_id} updated after its delete"
                        );
                        updated.push(u64::try_from(order_id - PRELOAD_BASE).unwrap());
                    }
                    Op::DeleteOrder { order_id } if order_id >= PRELOAD_BASE => {
                        assert!(deleted.insert(order_id), "{order_id} deleted twice");
                    }
                    _ => {}
                }
            }
            assert!(updated.len() > 300, "{} preloaded updates", updated.len());
            assert!(!deleted.is_empty());
            for i in &updated {
                assert_eq!(i % 4, connection, "owned by its connection");
                assert!(*i < preloaded);
            }
            // Spread over the table, not clustered at its start.
            assert!(updated.iter().any(|i| *i > preloaded / 2));
            assert!(updated.iter().any(|i| *i < preloaded / 2));
        }
        // Without a preload, the operations are exactly those of before.
        let mut plain = Generator::new(3, 1, 4, MIX);
        let mut zero = Generator::new(3, 1, 4, MIX).with_preload(0);
        for _ in 0..500 {
            assert_eq!(plain.next_op().to_string(), zero.next_op().to_string());
        }
    }

    #[test]
    fn the_mix_is_respected() {
        let mut generator = Generator::new(3, 0, 1, MIX);
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..20_000 {
            *counts.entry(generator.next_op().kind()).or_insert(0u32) += 1;
        }
        // Updates and deletes fall back to inserts only while nothing exists yet.
        let share = |k: &str| f64::from(counts[k]) / 200.0;
        assert!((share("update") - 30.0).abs() < 2.0, "{counts:?}");
        assert!((share("delete") - 15.0).abs() < 2.0, "{counts:?}");
        assert!((share("cascade") - 5.0).abs() < 1.5, "{counts:?}");
    }
}
