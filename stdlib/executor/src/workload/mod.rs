//! The workloads' writers: the `orders` workload (customers -> orders ->
//! order_items with ON DELETE CASCADE, its own generator) and any declared
//! schema ([`tables`]), written by seeded generators from several connections.

pub mod capture;
pub mod generator;
pub mod op;
pub mod preload;
pub mod runner;
pub mod schema;
pub mod tables;

pub use capture::{Capture, Captured, capture};
pub use generator::Generator;
pub use op::Op;
pub use preload::preload;
pub use runner::{Streams, WorkloadReport, run};
pub use schema::ddl;
