//! [`AbortOnDrop`]: a spawned task that ends with its handle, so a
//! cancelled seed or a stopped consumer leaves no task of its own running
//! (a workload connection, a Kafka fetch).

/// A spawned task that is aborted when its handle is dropped.
pub struct AbortOnDrop<T>(pub tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
