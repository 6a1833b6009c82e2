//! Network faults on the real stack's links (`lossproof netproxy`): what a
//! real client sees on each link, and that a scenario's record matches what
//! the proxy did. Called from the executor's stack test (one stack).

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::time::{Duration, Instant};

use lossproof_runtime::netproxy::{FaultKind, FaultRequest, NetProxy};

fn request(fault: FaultKind, for_ms: u64) -> FaultRequest {
    FaultRequest {
        owner: "network-test".into(),
        fault,
        for_ms,
        seed: 1,
        stream: 0,
    }
}

/// A runtime to drive the proxy's client, and the stack's ports.
pub(crate) fn runtime_and_ports(
    state: &Path,
) -> (tokio::runtime::Runtime, lossproof_runtime::Ports) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ports = lossproof_runtime::Stack::open(state)
        .unwrap()
        .ports()
        .unwrap();
    (runtime, ports)
}

/// An error with every cause under it (a connection error's cause says
/// "Connection refused").
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

/// Each link's faults, seen by the clients that really use it: a Kafka
/// client through `broker`, a PostgreSQL client through `postgres`, HTTP
/// through `registry`.
pub(crate) fn faults_reach_real_clients(state: &Path) {
    let (runtime, ports) = runtime_and_ports(state);
    let proxy = NetProxy::new(ports.netproxy);
    runtime.block_on(async {
        broker_delay(&proxy, &ports).await;
        postgres_cut(&proxy, &ports).await;
        registry_blackhole_and_reset(&proxy, &ports).await;
    });
}

/// broker: a Kafka client's first metadata request under a delay.
async fn broker_delay(proxy: &NetProxy, ports: &lossproof_runtime::Ports) {
    use rdkafka::consumer::{BaseConsumer, Consumer as _};
    // broker: a Kafka client's first metadata request (a connection, API
    // versions, metadata: two round trips at least) under 300 ms each way.
    proxy
        .set(
            "broker",
            &request(
                FaultKind::Delay {
                    ms: 300,
                    jitter_ms: 0,
                },
                20_000,
            ),
        )
        .await
        .unwrap();
    let started = Instant::now();
    let kafka: BaseConsumer = rdkafka::ClientConfig::new()
        .set(
            "bootstrap.servers",
            format!("127.0.0.1:{}", ports.broker_link),
        )
        .create()
        .unwrap();
    kafka.fetch_metadata(None, Duration::from_secs(30)).unwrap();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1200),
        "metadata through a 300 ms link in {took:?}"
    );
    assert_eq!(proxy.clear_owner("network-test").await.unwrap(), 1);
}

/// postgres: refused during a cut, accepted after it.
async fn postgres_cut(proxy: &NetProxy, ports: &lossproof_runtime::Ports) {
    proxy
        .set("postgres", &request(FaultKind::Cut, 20_000))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let refused = lossproof_runtime::postgres::connect(ports.source_link, "postgres")
        .await
        .err()
        .map(|e| chain(&e))
        .unwrap_or_default();
    assert!(
        refused.contains("refused"),
        "a connection during the cut: {refused:?}"
    );
    proxy.clear_owner("network-test").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    lossproof_runtime::postgres::connect(ports.source_link, "postgres")
        .await
        .expect("accepted again once the cut is cleared");
}

/// registry: a blackhole never answers; a reset breaks the open connection.
async fn registry_blackhole_and_reset(proxy: &NetProxy, ports: &lossproof_runtime::Ports) {
    let get = b"GET / HTTP/1.1\r\nHost: registry\r\n\r\n";
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", ports.registry_link)).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    socket.write_all(get).unwrap();
    let mut buf = [0; 4096];
    assert!(
        socket.read(&mut buf).unwrap() > 0,
        "the registry answers through the link"
    );
    proxy
        .set("registry", &request(FaultKind::Blackhole, 20_000))
        .await
        .unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(800)))
        .unwrap();
    socket.write_all(get).unwrap();
    assert!(
        socket.read(&mut buf).is_err(),
        "an answer came through a blackhole"
    );
    proxy.clear_owner("network-test").await.unwrap();
    let ack = proxy
        .set("registry", &request(FaultKind::Reset, 0))
        .await
        .unwrap();
    assert!(ack.open_connections >= 1, "{ack:?}");
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let read = socket.read(&mut buf);
    assert_eq!(
        read.map_err(|e| e.kind()),
        Err(std::io::ErrorKind::ConnectionReset),
        "the open connection was not reset"
    );
    let links = proxy.links().await.unwrap();
    assert!(links.iter().all(|l| l.faults.is_empty()), "{links:#?}");
    let registry = links.iter().find(|l| l.name == "registry").unwrap();
    assert!(
        registry.resets >= 1 && registry.bytes_dropped >= get.len() as u64,
        "{registry:#?}"
    );
}

/// A scenario with every network fault: each fired, its `ends_ms` is its
/// `for` length (or its block's end) after `fired_ms`, and nothing is left
/// set on the proxy after the seed.
pub(crate) fn scenario_record_matches_the_proxy(record: &serde_json::Value, state: &Path) {
    let seed = &record["results"][0];
    assert!(
        seed["verdict"] == "PASS" || seed["verdict"] == "FAIL",
        "network faults that end before the drain leave a scoreable seed: {seed:#}"
    );
    let faults = seed["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 6, "{faults:#?}");
    for fault in faults {
        assert_eq!(fault["fired"], true, "{fault:#}");
        let fired = fault["fired_ms"].as_u64().unwrap();
        let ends = fault["ends_ms"].as_u64();
        let outcome = fault["outcome"].as_str().unwrap();
        match fault["fault"].as_str().unwrap() {
            "delay-network" => {
                assert_eq!(ends, Some(fired + 3000), "{fault:#}");
                assert!(
                    outcome.contains("200±50 ms added each way on the broker link"),
                    "{outcome}"
                );
            }
            "cut-network" => {
                assert_eq!(ends, Some(fired + 2000), "{fault:#}");
                assert!(
                    outcome.contains("the postgres link cut for 2.0s"),
                    "{outcome}"
                );
            }
            "limit-network" => {
                assert_eq!(ends, Some(fired + 2000), "{fault:#}");
                assert!(
                    outcome.contains("10000 bytes/s each way on the registry link"),
                    "{outcome}"
                );
            }
            "reset-network" => {
                assert_eq!(ends, None, "a reset acts at once: {fault:#}");
                assert!(
                    outcome.contains("open connection(s) on the broker link"),
                    "{outcome}"
                );
            }
            "blackhole-network" => assert_eq!(ends, Some(fired + 1000), "{fault:#}"),
            "slow-close" => {
                // No `for`: to the end of its 8 s block, fired at about 7 s.
                let ends = ends.unwrap();
                assert!(ends > fired && ends - fired <= 1000, "{fault:#}");
            }
            other => panic!("unexpected fault {other}"),
        }
    }
    let (runtime, ports) = runtime_and_ports(state);
    let links = runtime
        .block_on(NetProxy::new(ports.netproxy).links())
        .unwrap();
    assert!(
        links.iter().all(|l| l.faults.is_empty()),
        "faults left on the proxy: {links:#?}"
    );
    let broker = links.iter().find(|l| l.name == "broker").unwrap();
    assert!(
        broker.resets >= 1,
        "the reset reached open broker connections: {broker:#?}"
    );
}
