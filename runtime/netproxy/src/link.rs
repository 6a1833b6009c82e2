//! One link: a loopback listener in front of one upstream server, the
//! connections through it, and the faults acting on them.
//!
//! Each accepted connection gets a connection to the upstream and two pumps
//! (client to server, server to client). A pump is a reader and a writer
//! joined by a bounded queue: the reader stamps each chunk with the moment
//! it may leave (now, or now plus the delay), the writer waits for that
//! moment, the bandwidth limit and the end of a cut, then writes. With no
//! fault the stamp is "now" and a chunk goes straight through.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::api::{ActiveFault, FaultAck, FaultKind, FaultRequest, LinkStatus};
use crate::fault::{Active, Delay, Direction, Effective};

/// The largest chunk read at once.
const CHUNK: usize = 64 * 1024;
/// Chunks queued per direction before the reader waits for the writer.
const QUEUE: usize = 64;
/// How long a connection to the upstream may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often, and how many times, the listener is bound again after a cut.
const REBIND_EVERY: Duration = Duration::from_millis(100);
const REBIND_TRIES: u32 = 100;

pub(crate) struct Link {
    pub name: String,
    pub listen: SocketAddr,
    pub upstream: SocketAddr,
    faults: Mutex<Vec<Active>>,
    effective: watch::Sender<Effective>,
    /// Bumped once per `Reset`: every open connection resets on a change.
    resets: watch::Sender<u64>,
    /// Per direction: when the bandwidth-limited wire is free again.
    next_free: [Mutex<Instant>; 2],
    open: AtomicUsize,
    accepted: AtomicU64,
    upstream_failures: AtomicU64,
    reset_connections: AtomicU64,
    bytes: [AtomicU64; 2],
    bytes_dropped: AtomicU64,
    broken: Mutex<Option<String>>,
}

impl Link {
    pub(crate) fn new(name: String, listen: SocketAddr, upstream: SocketAddr) -> Self {
        Self {
            name,
            listen,
            upstream,
            faults: Mutex::new(Vec::new()),
            effective: watch::Sender::new(Effective::default()),
            resets: watch::Sender::new(0),
            next_free: [Mutex::new(Instant::now()), Mutex::new(Instant::now())],
            open: AtomicUsize::new(0),
            accepted: AtomicU64::new(0),
            upstream_failures: AtomicU64::new(0),
            reset_connections: AtomicU64::new(0),
            bytes: [AtomicU64::new(0), AtomicU64::new(0)],
            bytes_dropped: AtomicU64::new(0),
            broken: Mutex::new(None),
        }
    }

    fn faults(&self) -> MutexGuard<'_, Vec<Active>> {
        self.faults
            .lock()
            .expect("the fault list is never poisoned: nothing panics holding it")
    }

    /// Set a fault; it removes itself after `for_ms` (a `Reset` acts at once).
    pub(crate) fn add(self: &Arc<Self>, id: u64, request: FaultRequest) -> FaultAck {
        let open_connections = self.open.load(Ordering::SeqCst);
        if request.fault == FaultKind::Reset {
            self.resets.send_modify(|n| *n += 1);
            return FaultAck {
                id,
                open_connections,
            };
        }
        let delay = match request.fault {
            FaultKind::Delay { ms, jitter_ms } => Some(Arc::new(Delay::new(
                ms,
                jitter_ms,
                request.seed,
                request.stream,
            ))),
            _ => None,
        };
        let length = Duration::from_millis(request.for_ms);
        {
            let mut faults = self.faults();
            faults.push(Active {
                id,
                owner: request.owner,
                fault: request.fault,
                until: Instant::now() + length,
                delay,
            });
            self.effective.send_replace(Effective::of(&faults));
        }
        let link = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(length).await;
            link.remove(|f| f.id == id);
        });
        FaultAck {
            id,
            open_connections,
        }
    }

    /// Remove the faults `which` selects; how many there were.
    pub(crate) fn remove(&self, which: impl Fn(&Active) -> bool) -> usize {
        let mut faults = self.faults();
        let before = faults.len();
        faults.retain(|f| !which(f));
        let removed = before - faults.len();
        if removed > 0 {
            self.effective.send_replace(Effective::of(&faults));
        }
        removed
    }

    pub(crate) fn status(&self) -> LinkStatus {
        let now = Instant::now();
        LinkStatus {
            name: self.name.clone(),
            listen: self.listen,
            upstream: self.upstream,
            open: self.open.load(Ordering::SeqCst),
            accepted: self.accepted.load(Ordering::SeqCst),
            upstream_failures: self.upstream_failures.load(Ordering::SeqCst),
            resets: self.reset_connections.load(Ordering::SeqCst),
            bytes_up: self.bytes[Direction::Up as usize].load(Ordering::SeqCst),
            bytes_down: self.bytes[Direction::Down as usize].load(Ordering::SeqCst),
            bytes_dropped: self.bytes_dropped.load(Ordering::SeqCst),
            faults: self
                .faults()
                .iter()
                .map(|f| ActiveFault {
                    id: f.id,
                    owner: f.owner.clone(),
                    fault: f.fault.clone(),
                    remaining_ms: u64::try_from(f.until.saturating_duration_since(now).as_millis())
                        .unwrap_or(u64::MAX),
                })
                .collect(),
        }
    }

    /// Accept connections until the proxy stops. While a cut acts the
    /// listener is closed, so new connections are refused by the kernel;
    /// afterwards it is bound again. If that fails (another process took the
    /// port) the link is broken for good and `GET /health` says so.
    pub(crate) async fn serve(self: Arc<Self>, first: TcpListener) {
        if let Err(e) = Arc::clone(&self).accept_loop(first).await {
            let why = format!(
                "link {} cannot listen on {} again after a cut: {e}",
                self.name, self.listen
            );
            eprintln!("{why}");
            *self.broken.lock().expect("never poisoned") = Some(why);
        }
    }

    /// Why the link no longer accepts connections, if it does not.
    pub(crate) fn broken(&self) -> Option<String> {
        self.broken.lock().expect("never poisoned").clone()
    }

    async fn accept_loop(self: Arc<Self>, first: TcpListener) -> std::io::Result<()> {
        let mut faults = self.effective.subscribe();
        let mut listener = Some(first);
        loop {
            let Some(bound) = listener.take() else {
                // Closed by a cut: wait for its end, then bind again.
                while faults.borrow_and_update().cut {
                    if faults.changed().await.is_err() {
                        return Ok(());
                    }
                }
                listener = Some(self.rebind().await?);
                continue;
            };
            let accepted = tokio::select! {
                accepted = bound.accept() => Some(accepted),
                changed = faults.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    None
                }
            };
            if let Some(Ok((client, _))) = accepted {
                self.accepted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(Arc::clone(&self).connection(client));
            }
            if !faults.borrow_and_update().cut {
                listener = Some(bound);
            }
            // else: `bound` is dropped here and the port refuses.
        }
    }

    async fn rebind(&self) -> std::io::Result<TcpListener> {
        let mut tries = 0;
        loop {
            match TcpListener::bind(self.listen).await {
                Ok(listener) => return Ok(listener),
                Err(e) if tries >= REBIND_TRIES => return Err(e),
                Err(_) => {
                    tries += 1;
                    tokio::time::sleep(REBIND_EVERY).await;
                }
            }
        }
    }

    async fn connection(self: Arc<Self>, client: TcpStream) {
        let Ok(Ok(upstream)) =
            tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(self.upstream)).await
        else {
            self.upstream_failures.fetch_add(1, Ordering::SeqCst);
            return;
        };
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        self.open.fetch_add(1, Ordering::SeqCst);
        let mut resets = self.resets.subscribe();
        resets.borrow_and_update();
        let (mut client_read, mut client_write) = client.into_split();
        let (mut upstream_read, mut upstream_write) = upstream.into_split();
        let reset = tokio::select! {
            _ = async {
                tokio::join!(
                    self.pump(Direction::Up, &mut client_read, &mut upstream_write),
                    self.pump(Direction::Down, &mut upstream_read, &mut client_write),
                )
            } => false,
            changed = resets.changed() => changed.is_ok(),
        };
        if reset {
            // SO_LINGER 0: closing sends RST to both ends instead of FIN.
            // The write halves are forgotten, not dropped: dropping one
            // would shut it down and send a FIN before the RST.
            let _ = client_read.as_ref().set_zero_linger();
            let _ = upstream_read.as_ref().set_zero_linger();
            client_write.forget();
            upstream_write.forget();
            self.reset_connections.fetch_add(1, Ordering::SeqCst);
        }
        self.open.fetch_sub(1, Ordering::SeqCst);
    }

    async fn pump(&self, direction: Direction, from: &mut OwnedReadHalf, to: &mut OwnedWriteHalf) {
        let (chunks, queue) = mpsc::channel(QUEUE);
        tokio::join!(
            self.read_side(direction, from, chunks),
            self.write_side(direction, to, queue)
        );
    }

    async fn read_side(
        &self,
        direction: Direction,
        from: &mut OwnedReadHalf,
        chunks: mpsc::Sender<Chunk>,
    ) {
        let mut faults = self.effective.subscribe();
        let mut buf = vec![0; CHUNK];
        let mut last_release = Instant::now();
        loop {
            if !until_not_cut(&mut faults).await {
                return;
            }
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    let _ = chunks.send(Chunk::End).await;
                    return;
                }
                Ok(n) => n,
            };
            let now = Instant::now();
            let (blackhole, delay) = {
                let effective = faults.borrow();
                (effective.blackhole, effective.delay.clone())
            };
            if blackhole {
                self.bytes_dropped.fetch_add(n as u64, Ordering::SeqCst);
                continue;
            }
            // Never before the previous chunk: a shorter draw must not
            // reorder the stream.
            let release = delay
                .map_or(now, |d| now + d.draw(direction))
                .max(last_release);
            last_release = release;
            if chunks
                .send(Chunk::Bytes(release, buf[..n].to_vec()))
                .await
                .is_err()
            {
                return;
            }
        }
    }

    async fn write_side(
        &self,
        direction: Direction,
        to: &mut OwnedWriteHalf,
        mut queue: mpsc::Receiver<Chunk>,
    ) {
        let mut faults = self.effective.subscribe();
        while let Some(chunk) = queue.recv().await {
            match chunk {
                Chunk::Bytes(release, bytes) => {
                    // Only a delayed chunk waits: a timer, even one already
                    // due, costs a tick of the timer wheel (a millisecond).
                    if release > Instant::now() {
                        tokio::time::sleep_until(release).await;
                    }
                    let mut rest = &bytes[..];
                    while !rest.is_empty() {
                        if !until_not_cut(&mut faults).await {
                            return;
                        }
                        let limit = faults.borrow().bytes_per_second;
                        let n = limit.map_or(rest.len(), |b| rest.len().min(slice(b)));
                        if let Some(bytes_per_second) = limit {
                            self.throttle(direction, n, bytes_per_second).await;
                        }
                        if to.write_all(&rest[..n]).await.is_err() {
                            return;
                        }
                        self.bytes[direction as usize].fetch_add(n as u64, Ordering::SeqCst);
                        rest = &rest[n..];
                    }
                }
                Chunk::End => {
                    let close_delay = faults.borrow().close_delay;
                    if !close_delay.is_zero() {
                        tokio::time::sleep(close_delay).await;
                    }
                    let _ = to.shutdown().await;
                    return;
                }
            }
        }
    }

    /// Wait until `n` more bytes fit in the direction's bandwidth.
    async fn throttle(&self, direction: Direction, n: usize, bytes_per_second: u64) {
        let cost = Duration::from_secs_f64(n as f64 / bytes_per_second.max(1) as f64);
        let start = {
            let mut next_free = self.next_free[direction as usize]
                .lock()
                .expect("never poisoned: nothing panics holding it");
            let start = (*next_free).max(Instant::now());
            *next_free = start + cost;
            start
        };
        tokio::time::sleep_until(start + cost).await;
    }
}

enum Chunk {
    /// Bytes, and the moment they may leave.
    Bytes(Instant, Vec<u8>),
    /// The reading end closed.
    End,
}

/// The largest write under a bandwidth limit: a twentieth of a second's
/// worth, so a limited stream trickles instead of bursting.
fn slice(bytes_per_second: u64) -> usize {
    usize::try_from(bytes_per_second / 20)
        .unwrap_or(CHUNK)
        .clamp(256, CHUNK)
}

/// Wait while a cut acts; `false` when the proxy is stopping.
async fn until_not_cut(faults: &mut watch::Receiver<Effective>) -> bool {
    loop {
        if !faults.borrow_and_update().cut {
            return true;
        }
        if faults.changed().await.is_err() {
            return false;
        }
    }
}
