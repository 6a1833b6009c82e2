//! A TCP fault proxy for lossproof's local stack.
//!
//! `lossproof up` starts it as a component of its own (`lossproof
//! netproxy`), with one loopback listener per link: `broker` (every Kafka
//! client: the broker advertises the proxy's address, so clients reach it
//! only through here), `postgres` (Debezium's connections to the source) and
//! `registry`. With no fault a link passes bytes straight through. The
//! executor sets faults over a small HTTP API ([`api`]): latency with seeded
//! jitter, a bandwidth limit, a cut (new connections refused, open ones
//! stalled), a reset of open connections, a blackhole and a slow close.
//! Every fault has a length and the proxy ends it itself, so one set by a
//! run that died still ends on time.
//!
//! This is what Toxiproxy does for Jepsen-style tests; the kernel's `netem`
//! is not available on these machines, and firewall rules would need root
//! and outlive a killed run (docs/network.md).

pub mod api;
mod fault;
mod http;
mod link;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;

pub use fault::Direction;

/// One link: `NAME,LISTEN,UPSTREAM` on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSpec {
    pub name: String,
    pub listen: SocketAddr,
    pub upstream: SocketAddr,
}

impl FromStr for LinkSpec {
    type Err = ProxyError;

    fn from_str(text: &str) -> Result<Self, ProxyError> {
        let bad = || ProxyError::BadLink(text.to_owned());
        let mut parts = text.split(',');
        let (Some(name), Some(listen), Some(upstream), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        if name.is_empty() {
            return Err(bad());
        }
        Ok(Self {
            name: name.to_owned(),
            listen: listen.parse().map_err(|_| bad())?,
            upstream: upstream.parse().map_err(|_| bad())?,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error(
        "`{0}` is not a link: write NAME,LISTEN,UPSTREAM, e.g. broker,127.0.0.1:19092,127.0.0.1:9092"
    )]
    BadLink(String),
    #[error("{0} is not a loopback address: the proxy only listens on loopback")]
    NotLoopback(SocketAddr),
    #[error("two links are named `{0}`")]
    DuplicateLink(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("proxy: {0}")]
    Server(std::io::Error),
}

/// Run the proxy until `stop` resolves (`lossproof netproxy` passes
/// SIGTERM/SIGINT): the control API on `control`, and every link. Prints
/// `listening on ADDR` for the control API first, then one line per link.
pub fn main_entry(
    control: SocketAddr,
    links: Vec<LinkSpec>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ProxyError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ProxyError::Server)?;
    runtime.block_on(async {
        let (listener, proxy) = bind(control, links).await?;
        let bound = listener.local_addr().map_err(ProxyError::Server)?;
        let mut stdout = std::io::stdout().lock();
        // A closed stdout must not stop the proxy.
        let _ = writeln!(stdout, "listening on {bound}");
        for link in proxy.links.values() {
            let _ = writeln!(
                stdout,
                "link {} {} -> {}",
                link.name, link.listen, link.upstream
            );
        }
        let _ = stdout.flush();
        drop(stdout);
        serve(listener, proxy, stop).await
    })
}

/// A proxy running on the caller's runtime (tests): the control API's
/// address; it stops when `stop` resolves.
pub async fn spawn(
    control: SocketAddr,
    links: Vec<LinkSpec>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<SocketAddr, ProxyError> {
    let (listener, proxy) = bind(control, links).await?;
    let bound = listener.local_addr().map_err(ProxyError::Server)?;
    tokio::spawn(serve(listener, proxy, stop));
    Ok(bound)
}

async fn bind(
    control: SocketAddr,
    specs: Vec<LinkSpec>,
) -> Result<(tokio::net::TcpListener, Arc<http::Proxy>), ProxyError> {
    let listen = |addr: SocketAddr| async move {
        if !addr.ip().is_loopback() {
            return Err(ProxyError::NotLoopback(addr));
        }
        tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ProxyError::Bind { addr, source })
    };
    let mut links = BTreeMap::new();
    for spec in specs {
        let listener = listen(spec.listen).await?;
        // Port 0 asks for any free port: record the one bound.
        let listen_addr = listener.local_addr().map_err(ProxyError::Server)?;
        let link = Arc::new(link::Link::new(
            spec.name.clone(),
            listen_addr,
            spec.upstream,
        ));
        if links.insert(spec.name.clone(), (link, listener)).is_some() {
            return Err(ProxyError::DuplicateLink(spec.name));
        }
    }
    let control = listen(control).await?;
    let mut by_name = BTreeMap::new();
    for (name, (link, listener)) in links {
        tokio::spawn(Arc::clone(&link).serve(listener));
        by_name.insert(name, link);
    }
    Ok((control, Arc::new(http::Proxy::new(by_name))))
}

async fn serve(
    listener: tokio::net::TcpListener,
    proxy: Arc<http::Proxy>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ProxyError> {
    axum::serve(listener, http::router(proxy))
        .with_graceful_shutdown(stop)
        .await
        .map_err(ProxyError::Server)
}

#[cfg(test)]
mod tests;
