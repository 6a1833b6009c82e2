//! The proxy on real loopback sockets, in front of an echo server: what a
//! client sees under each fault. Time bounds are lower bounds only (a fault
//! cannot make bytes arrive sooner), so a slow machine cannot fail them.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::LinkSpec;
use crate::api::{Cleared, FaultAck, FaultKind, FaultRequest, LinkStatus};

/// A proxy with one link, `echo`, in front of an echo server.
struct Fixture {
    control: SocketAddr,
    link: SocketAddr,
    http: reqwest::Client,
}

impl Fixture {
    async fn start() -> Self {
        let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = echo.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = echo.accept().await {
                tokio::spawn(async move {
                    let (mut read, mut write) = socket.split();
                    let _ = tokio::io::copy(&mut read, &mut write).await;
                    let _ = write.shutdown().await;
                });
            }
        });
        let spec = LinkSpec {
            name: "echo".into(),
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream,
        };
        let control = crate::spawn(
            "127.0.0.1:0".parse().unwrap(),
            vec![spec],
            std::future::pending(),
        )
        .await
        .unwrap();
        let mut fixture = Self {
            control,
            link: upstream,
            http: reqwest::Client::new(),
        };
        fixture.link = fixture.status().await.listen;
        fixture
    }

    async fn status(&self) -> LinkStatus {
        let links: Vec<LinkStatus> =
            answer(self.http.get(format!("http://{}/links", self.control))).await;
        links.into_iter().next().unwrap()
    }

    /// End every fault `owner` set.
    async fn clear(&self, owner: &str) -> Cleared {
        answer(
            self.http
                .delete(format!("http://{}/faults?owner={owner}", self.control)),
        )
        .await
    }

    async fn set(&self, fault: FaultKind, for_ms: u64, owner: &str) -> FaultAck {
        let request = FaultRequest {
            owner: owner.into(),
            fault,
            for_ms,
            seed: 1,
            stream: 0,
        };
        answer(
            self.http
                .post(format!("http://{}/links/echo/faults", self.control))
                .json(&request),
        )
        .await
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.link).await.unwrap()
    }
}

/// Send a control request; its JSON answer (a failure shows the proxy's reason).
async fn answer<T: serde::de::DeserializeOwned>(request: reqwest::RequestBuilder) -> T {
    let response = request.send().await.unwrap();
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap()
    );
    response.json().await.unwrap()
}

/// Send `bytes` and read the echo back; how long it took.
async fn round_trip(socket: &mut TcpStream, bytes: &[u8]) -> Duration {
    let started = Instant::now();
    socket.write_all(bytes).await.unwrap();
    let mut back = vec![0; bytes.len()];
    socket.read_exact(&mut back).await.unwrap();
    assert_eq!(back, bytes, "the echo came back changed");
    started.elapsed()
}

#[tokio::test]
async fn with_no_fault_bytes_pass_unchanged_and_are_counted() {
    let proxy = Fixture::start().await;
    let mut socket = proxy.connect().await;
    let payload: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    round_trip(&mut socket, &payload).await;
    let status = proxy.status().await;
    assert_eq!((status.bytes_up, status.bytes_down), (1_000_000, 1_000_000));
    assert_eq!((status.accepted, status.open), (1, 1));
    assert!(status.faults.is_empty());
}

#[tokio::test]
async fn a_delay_holds_each_direction() {
    let proxy = Fixture::start().await;
    let mut socket = proxy.connect().await;
    proxy
        .set(
            FaultKind::Delay {
                ms: 200,
                jitter_ms: 50,
            },
            10_000,
            "t",
        )
        .await;
    for _ in 0..3 {
        // 150 ms at least each way.
        assert!(round_trip(&mut socket, b"ping").await >= Duration::from_millis(300));
    }
}

#[tokio::test]
async fn a_cut_refuses_new_connections_and_stalls_open_ones_until_it_ends() {
    let proxy = Fixture::start().await;
    let mut open = proxy.connect().await;
    round_trip(&mut open, b"before").await;
    let started = Instant::now();
    proxy.set(FaultKind::Cut, 1500, "t").await;
    // The listener closes as soon as the proxy sees the cut.
    let mut refused = false;
    for _ in 0..50 {
        match TcpStream::connect(proxy.link).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                refused = true;
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    assert!(refused, "a new connection during the cut was not refused");
    // The open connection is stalled: its echo comes only after the cut.
    let took = round_trip(&mut open, b"during").await;
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "answered after {took:?}, inside the cut"
    );
    // After the cut, new connections are accepted again.
    let mut after = proxy.connect().await;
    round_trip(&mut after, b"after").await;
}

#[tokio::test]
async fn a_reset_breaks_every_open_connection() {
    let proxy = Fixture::start().await;
    let mut first = proxy.connect().await;
    let mut second = proxy.connect().await;
    round_trip(&mut first, b"a").await;
    round_trip(&mut second, b"b").await;
    let ack = proxy.set(FaultKind::Reset, 0, "t").await;
    assert_eq!(ack.open_connections, 2);
    for socket in [&mut first, &mut second] {
        let mut buf = [0; 8];
        let read = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf))
            .await
            .expect("a reset connection answers at once");
        assert_eq!(
            read.map_err(|e| e.kind()),
            Err(std::io::ErrorKind::ConnectionReset),
            "the client did not see a reset"
        );
    }
    assert_eq!(proxy.status().await.resets, 2);
    // The link itself still works.
    round_trip(&mut proxy.connect().await, b"c").await;
}

#[tokio::test]
async fn a_blackhole_accepts_bytes_and_never_delivers_them() {
    let proxy = Fixture::start().await;
    let mut socket = proxy.connect().await;
    proxy.set(FaultKind::Blackhole, 1000, "t").await;
    socket.write_all(&[7; 1000]).await.unwrap();
    let mut buf = [0; 16];
    assert!(
        tokio::time::timeout(Duration::from_millis(700), socket.read(&mut buf))
            .await
            .is_err(),
        "bytes came back through a blackhole"
    );
    let status = proxy.status().await;
    assert_eq!((status.bytes_dropped, status.bytes_up), (1000, 0));
}

#[tokio::test]
async fn a_limit_caps_the_bandwidth() {
    let proxy = Fixture::start().await;
    let mut socket = proxy.connect().await;
    proxy
        .set(
            FaultKind::Limit {
                bytes_per_second: 20_000,
            },
            30_000,
            "t",
        )
        .await;
    // 40 kB each way at 20 kB/s: two seconds at least, less one slice.
    let took = round_trip(&mut socket, &vec![1; 40_000]).await;
    assert!(took >= Duration::from_millis(1900), "40 kB in {took:?}");
}

#[tokio::test]
async fn a_slow_close_delays_each_fin() {
    let proxy = Fixture::start().await;
    let mut socket = proxy.connect().await;
    proxy
        .set(FaultKind::SlowClose { ms: 500 }, 10_000, "t")
        .await;
    let started = Instant::now();
    socket.shutdown().await.unwrap();
    let mut buf = [0; 8];
    assert_eq!(socket.read(&mut buf).await.unwrap(), 0);
    // Our FIN reaches the echo server 500 ms late, its FIN reaches us 500 ms late.
    assert!(started.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn faults_end_on_their_own_or_when_their_owner_is_cleared() {
    let proxy = Fixture::start().await;
    proxy
        .set(
            FaultKind::Delay {
                ms: 10,
                jitter_ms: 0,
            },
            300,
            "short",
        )
        .await;
    proxy.set(FaultKind::Cut, 60_000, "seed-1").await;
    proxy.set(FaultKind::Blackhole, 60_000, "seed-1").await;
    proxy
        .set(FaultKind::SlowClose { ms: 5 }, 60_000, "seed-2")
        .await;
    assert_eq!(proxy.status().await.faults.len(), 4);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        proxy.status().await.faults.len(),
        3,
        "the 300 ms delay did not end"
    );
    assert_eq!(proxy.clear("seed-1").await.cleared, 2);
    let left = proxy.status().await.faults;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].owner, "seed-2");
    // With the cut cleared the link accepts again.
    round_trip(&mut proxy.connect().await, b"x").await;
}

#[tokio::test]
async fn an_unknown_link_or_a_bad_request_is_refused_with_the_reason() {
    let proxy = Fixture::start().await;
    let response = proxy
        .http
        .post(format!("http://{}/links/brokr/faults", proxy.control))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert!(response.text().await.unwrap().contains("links are echo"));
    let response = proxy
        .http
        .post(format!("http://{}/links/echo/faults", proxy.control))
        .body(r#"{"owner":"t","fault":{"kind":"teleport"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert!(response.text().await.unwrap().contains("bad fault request"));
}

#[test]
fn a_link_is_written_name_listen_upstream() {
    let link: LinkSpec = "broker,127.0.0.1:19092,127.0.0.1:9092".parse().unwrap();
    assert_eq!(link.name, "broker");
    assert_eq!(link.upstream.port(), 9092);
    for bad in [
        "broker",
        "broker,127.0.0.1:1",
        ",127.0.0.1:1,127.0.0.1:2",
        "b,x,127.0.0.1:2",
        "b,127.0.0.1:1,127.0.0.1:2,extra",
    ] {
        assert!(bad.parse::<LinkSpec>().is_err(), "{bad} parsed");
    }
}
