//! `cargo bench --release --bench netproxy [-- --megabytes N --pings N]`:
//! what the fault proxy costs when no fault acts. The proxy runs in this
//! process in front of a loopback server; the same transfers go direct and
//! through it: bulk throughput one way (MB/s) and small request/answer round
//! trips (microseconds, median and p99). Figures, not a test
//! (docs/benchmarks.md).

use std::net::SocketAddr;
use std::time::Instant;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

#[derive(clap::Parser)]
struct Args {
    /// Bytes sent one way per throughput run, in MB.
    #[arg(long, default_value_t = 512)]
    megabytes: usize,
    /// Round trips of 64 bytes per latency run.
    #[arg(long, default_value_t = 20_000)]
    pings: usize,
    /// Runs of each, direct and proxied alternating; the median is printed.
    #[arg(long, default_value_t = 5)]
    runs: usize,
}

fn main() {
    // `cargo bench` passes `--bench`; it is not ours.
    let args = <Args as clap::Parser>::parse_from(std::env::args().filter(|a| a != "--bench"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(compare(&args));
}

async fn compare(args: &Args) {
    let sink = server(Sink).await;
    let echo = server(Echo).await;
    let link = |name: &str, upstream| lossproof_netproxy::LinkSpec {
        name: name.into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    };
    let control = lossproof_netproxy::spawn(
        "127.0.0.1:0".parse().unwrap(),
        vec![link("sink", sink), link("echo", echo)],
        std::future::pending(),
    )
    .await
    .expect("proxy");
    let links: Vec<lossproof_netproxy::api::LinkStatus> =
        reqwest::get(format!("http://{control}/links"))
            .await
            .and_then(reqwest::Response::error_for_status)
            .expect("links")
            .json()
            .await
            .expect("links json");
    let via = |name: &str| links.iter().find(|l| l.name == name).unwrap().listen;
    let bytes = args.megabytes * 1_000_000;
    let (mut direct, mut proxied) = (Vec::new(), Vec::new());
    for _ in 0..args.runs {
        direct.push(throughput(sink, bytes).await);
        proxied.push(throughput(via("sink"), bytes).await);
    }
    let (direct_mb, proxied_mb) = (median(&mut direct), median(&mut proxied));
    println!(
        "throughput, {} MB one way (median of {}): direct {direct_mb:.0} MB/s, through the idle proxy {proxied_mb:.0} MB/s ({:.2}x)",
        args.megabytes,
        args.runs,
        proxied_mb / direct_mb
    );
    let (mut direct, mut proxied) = (Vec::new(), Vec::new());
    for _ in 0..args.runs {
        direct.extend(round_trips(echo, args.pings).await);
        proxied.extend(round_trips(via("echo"), args.pings).await);
    }
    direct.sort_by(f64::total_cmp);
    proxied.sort_by(f64::total_cmp);
    let at = |v: &[f64], q: f64| v[((v.len() - 1) as f64 * q) as usize];
    println!(
        "round trip, 64 bytes ({} x {}): direct median {:.0} us p99 {:.0} us; through the idle proxy median {:.0} us p99 {:.0} us",
        args.runs,
        args.pings,
        at(&direct, 0.5),
        at(&direct, 0.99),
        at(&proxied, 0.5),
        at(&proxied, 0.99)
    );
}

#[derive(Clone, Copy)]
enum Kind {
    Sink,
    Echo,
}
use Kind::{Echo, Sink};

/// A loopback server that reads and drops everything, or echoes it.
async fn server(kind: Kind) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let _ = socket.set_nodelay(true);
            tokio::spawn(async move {
                let mut buf = vec![0; 256 * 1024];
                loop {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if matches!(kind, Echo) && socket.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    }
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    addr
}

/// Send `bytes` one way and wait for the server's close: MB/s.
async fn throughput(to: SocketAddr, bytes: usize) -> f64 {
    let mut socket = TcpStream::connect(to).await.unwrap();
    let chunk = vec![7u8; 256 * 1024];
    let started = Instant::now();
    let mut sent = 0;
    while sent < bytes {
        let n = chunk.len().min(bytes - sent);
        socket.write_all(&chunk[..n]).await.unwrap();
        sent += n;
    }
    socket.shutdown().await.unwrap();
    let mut rest = Vec::new();
    socket.read_to_end(&mut rest).await.unwrap();
    bytes as f64 / 1e6 / started.elapsed().as_secs_f64()
}

/// `n` round trips of 64 bytes: each in microseconds.
async fn round_trips(to: SocketAddr, n: usize) -> Vec<f64> {
    let mut socket = TcpStream::connect(to).await.unwrap();
    socket.set_nodelay(true).unwrap();
    let ping = [1u8; 64];
    let mut back = [0u8; 64];
    let mut took = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        socket.write_all(&ping).await.unwrap();
        socket.read_exact(&mut back).await.unwrap();
        took.push(started.elapsed().as_secs_f64() * 1e6);
    }
    took
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
