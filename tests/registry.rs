//! The embedded schema registry as the stack runs it: the real
//! `lossproof registry` process, spoken to over HTTP the way Kafka Connect's
//! `AvroConverter` (Confluent client 7.0) speaks to it, stopped with SIGTERM,
//! killed with SIGKILL and restarted on the same state directory.
//!
//! Every process started here is owned by a guard that kills and reaps it, so
//! a failing assertion leaves nothing running.

use std::io::Read as _;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";
const START_LIMIT: Duration = Duration::from_secs(30);
const STOP_LIMIT: Duration = Duration::from_secs(10);

/// A child process killed (SIGKILL) and reaped when dropped.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl ChildGuard {
    /// Wait up to `limit` for the process to exit.
    fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.0.try_wait().expect("try_wait") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Everything the (exited or killed) process wrote on stdout and stderr.
    fn output(&mut self) -> String {
        let mut text = String::new();
        if let Some(stdout) = self.0.stdout.as_mut() {
            let _ = stdout.read_to_string(&mut text);
        }
        if let Some(stderr) = self.0.stderr.as_mut() {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    }
}

fn registry_command(listen: &str, state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lossproof"));
    command
        .args(["registry", "--listen", listen, "--state"])
        .arg(state)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A running `lossproof registry` and an HTTP client for it.
struct Registry {
    process: ChildGuard,
    base: String,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl Registry {
    /// Start a registry on a free port and wait (bounded) until it answers.
    fn start(state: &Path) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        let client = reqwest::Client::new();
        // Another program may take the free port before the registry binds it:
        // try a few ports before calling it a failure.
        for _ in 0..3 {
            let port = free_port();
            let listen = format!("127.0.0.1:{port}");
            let mut process = ChildGuard(
                registry_command(&listen, state)
                    .spawn()
                    .expect("start lossproof registry"),
            );
            let base = format!("http://{listen}");
            let deadline = Instant::now() + START_LIMIT;
            loop {
                if process.0.try_wait().expect("try_wait").is_some() {
                    let output = process.output();
                    assert!(
                        output.contains("cannot listen"),
                        "the registry exited:\n{output}"
                    );
                    break;
                }
                let probe = runtime.block_on(async {
                    client
                        .get(format!("{base}/"))
                        .timeout(Duration::from_millis(500))
                        .send()
                        .await
                });
                if probe.is_ok_and(|r| r.status().is_success()) {
                    let mut line = String::new();
                    let stdout = process.0.stdout.as_mut().expect("stdout is piped");
                    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
                        .expect("read stdout");
                    assert_eq!(line.trim_end(), format!("listening on {listen}"));
                    return Self {
                        process,
                        base,
                        client,
                        runtime,
                    };
                }
                if Instant::now() >= deadline {
                    let _ = process.0.kill();
                    panic!(
                        "the registry did not answer within {START_LIMIT:?}:\n{}",
                        process.output()
                    );
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("no free port could be bound in 3 attempts");
    }

    fn send(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> (u16, Value) {
        self.runtime.block_on(async {
            let mut request = self
                .client
                .request(method, format!("{}{path}", self.base))
                .header(reqwest::header::CONTENT_TYPE, CONTENT_TYPE)
                .header(reqwest::header::ACCEPT, CONTENT_TYPE)
                .timeout(Duration::from_secs(10));
            if let Some(body) = body {
                request = request.body(body.to_string());
            }
            let response = request
                .send()
                .await
                .unwrap_or_else(|e| panic!("{path}: {e}"));
            let status = response.status().as_u16();
            let body = response
                .json()
                .await
                .unwrap_or_else(|e| panic!("{path}: {e}"));
            (status, body)
        })
    }

    fn get(&self, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::GET, path, None)
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, Some(body))
    }

    /// Register `schema` as the `AvroConverter` does; returns (status, body).
    fn register(&self, subject: &str, schema: &str) -> (u16, Value) {
        self.post(
            &format!("/subjects/{subject}/versions?normalize=false"),
            &json!({ "schema": schema }),
        )
    }

    fn registered_id(&self, subject: &str, schema: &str) -> u64 {
        let (status, body) = self.register(subject, schema);
        assert_eq!(status, 200, "register under {subject}: {body}");
        body["id"].as_u64().expect("an id")
    }

    /// SIGTERM, then the process must exit cleanly within `STOP_LIMIT`.
    fn stop(mut self) {
        let pid = self.process.0.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(sent.success());
        let status = self
            .process
            .wait_for_exit(STOP_LIMIT)
            .expect("the registry stops on SIGTERM");
        assert!(
            status.success(),
            "exit after SIGTERM: {status}\n{}",
            self.process.output()
        );
    }
}

/// A Debezium envelope (Connect's `AvroData` output for a `PostgreSQL` table):
/// the row's `Value` record under `before`, referenced by name under `after`.
fn envelope(columns: &str) -> String {
    json!({
        "type": "record", "name": "Envelope", "namespace": "lp1.public.customers",
        "fields": [
            {"name": "before", "type": ["null", {
                "type": "record", "name": "Value",
                "fields": serde_json::from_str::<Value>(columns).unwrap(),
                "connect.name": "lp1.public.customers.Value"}], "default": null},
            {"name": "after", "type": ["null", "Value"], "default": null},
            {"name": "source", "type": {
                "type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql",
                "fields": [
                    {"name": "version", "type": "string"},
                    {"name": "connector", "type": "string"},
                    {"name": "name", "type": "string"},
                    {"name": "ts_ms", "type": "long"},
                    {"name": "snapshot", "type": [{"type": "string", "connect.version": 1,
                        "connect.parameters": {"allowed": "true,first,last,false,incremental"},
                        "connect.default": "false", "connect.name": "io.debezium.data.Enum"}, "null"],
                        "default": "false"},
                    {"name": "db", "type": "string"},
                    {"name": "schema", "type": "string"},
                    {"name": "table", "type": "string"},
                    {"name": "txId", "type": ["null", "long"], "default": null},
                    {"name": "lsn", "type": ["null", "long"], "default": null}],
                "connect.name": "io.debezium.connector.postgresql.Source"}},
            {"name": "op", "type": "string"},
            {"name": "ts_ms", "type": ["null", "long"], "default": null}],
        "connect.version": 2, "connect.name": "lp1.public.customers.Envelope"
    })
    .to_string()
}

const KEY: &str = r#"{"type":"record","name":"Key","namespace":"lp1.public.customers","fields":[{"name":"id","type":"int"}],"connect.name":"lp1.public.customers.Key"}"#;
const COLUMNS: &str = r#"[
    {"name": "id", "type": "int"},
    {"name": "name", "type": ["null", "string"], "default": null},
    {"name": "balance", "type": ["null", {"type": "bytes", "scale": 2, "precision": 10,
        "connect.version": 1, "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "connect.name": "org.apache.kafka.connect.data.Decimal", "logicalType": "decimal"}], "default": null}
]"#;
const VALUE_SUBJECT: &str = "lp1.public.customers-value";

fn columns_with(extra: &str) -> String {
    COLUMNS.trim_end().trim_end_matches(']').to_owned() + "," + extra + "]"
}

#[test]
fn registry_checks_compatibility_and_keeps_ids_across_restarts() {
    let state = tempfile::tempdir().expect("temporary state directory");
    let v1 = envelope(COLUMNS);
    // ALTER TABLE ... ADD COLUMN email text NOT NULL (no default): a new
    // reader cannot read old rows. Incompatible under BACKWARD.
    let required_column = envelope(&columns_with(r#"{"name": "email", "type": "string"}"#));
    // ADD COLUMN email text (nullable): compatible.
    let nullable_column = envelope(&columns_with(
        r#"{"name": "email", "type": ["null", "string"], "default": null}"#,
    ));
    // ALTER COLUMN id TYPE text: incompatible.
    let retyped = envelope(&COLUMNS.replacen(r#""type": "int""#, r#""type": "string""#, 1));

    let registry = Registry::start(state.path());
    assert_eq!(
        registry.get("/config"),
        (200, json!({"compatibilityLevel": "BACKWARD"}))
    );
    let key_id = registry.registered_id("lp1.public.customers-key", KEY);
    let v1_id = registry.registered_id(VALUE_SUBJECT, &v1);
    assert_ne!(key_id, v1_id);
    // Registering again (Connect does after each restart) changes nothing.
    assert_eq!(registry.registered_id(VALUE_SUBJECT, &v1), v1_id);

    for incompatible in [&required_column, &retyped] {
        let (status, body) = registry.register(VALUE_SUBJECT, incompatible);
        assert_eq!(status, 409, "{body}");
        assert_eq!(body["error_code"], 409, "{body}");
        let (status, body) = registry.post(
            &format!("/compatibility/subjects/{VALUE_SUBJECT}/versions/latest"),
            &json!({ "schema": incompatible }),
        );
        assert_eq!((status, body), (200, json!({"is_compatible": false})));
    }
    let v2_id = registry.registered_id(VALUE_SUBJECT, &nullable_column);
    assert_ne!(v2_id, v1_id);

    // What a consumer (and Connect's converter) fetches by id.
    assert_eq!(
        registry.get(&format!(
            "/schemas/ids/{v1_id}?fetchMaxId=false&subject={VALUE_SUBJECT}"
        )),
        (200, json!({ "schema": v1 }))
    );
    assert_eq!(
        registry.post(
            &format!("/subjects/{VALUE_SUBJECT}?normalize=false&deleted=false"),
            &json!({"schema": v1})
        ),
        (
            200,
            json!({"subject": VALUE_SUBJECT, "version": 1, "id": v1_id, "schema": v1})
        )
    );
    let (status, body) = registry.get("/schemas/ids/999");
    assert_eq!((status, body["error_code"].clone()), (404, json!(40403)));
    registry.stop();

    // A graceful restart keeps every subject, version and id.
    let registry = Registry::start(state.path());
    assert_eq!(
        registry.get(&format!("/schemas/ids/{v1_id}")),
        (200, json!({ "schema": v1 }))
    );
    assert_eq!(
        registry.get(&format!("/subjects/{VALUE_SUBJECT}/versions/latest")),
        (
            200,
            json!({"subject": VALUE_SUBJECT, "version": 2, "id": v2_id, "schema": nullable_column})
        )
    );
    assert_eq!(
        registry.get("/subjects"),
        (200, json!(["lp1.public.customers-key", VALUE_SUBJECT]))
    );
    assert_eq!(registry.registered_id(VALUE_SUBJECT, &v1), v1_id);
    assert_eq!(
        registry.registered_id("lp1.public.customers-key", KEY),
        key_id
    );
    // Compatibility is still checked against what was registered before.
    assert_eq!(registry.register(VALUE_SUBJECT, &retyped).0, 409);

    // An acknowledged registration survives SIGKILL.
    let other_id =
        registry.registered_id("lp1.public.orders-key", &KEY.replace("customers", "orders"));
    assert!(
        other_id > v2_id,
        "ids are never reused: {other_id} after {v2_id}"
    );
    drop(registry);
    let registry = Registry::start(state.path());
    assert_eq!(
        registry.get("/subjects/lp1.public.orders-key/versions/1").1["id"],
        json!(other_id)
    );
    registry.stop();
}

#[test]
fn registry_refuses_a_non_loopback_address() {
    let state = tempfile::tempdir().expect("temporary state directory");
    for listen in ["0.0.0.0:0", "[::]:0"] {
        let mut process = ChildGuard(
            registry_command(listen, state.path())
                .spawn()
                .expect("start"),
        );
        let status = process
            .wait_for_exit(STOP_LIMIT)
            .expect("a refused address exits at once");
        let output = process.output();
        assert_eq!(status.code(), Some(2), "{output}");
        assert!(output.contains("loopback"), "{output}");
    }
}

#[test]
fn a_second_registry_cannot_share_a_state_directory() {
    let state = tempfile::tempdir().expect("temporary state directory");
    let first = Registry::start(state.path());
    let mut second = ChildGuard(
        registry_command(&format!("127.0.0.1:{}", free_port()), state.path())
            .spawn()
            .expect("start"),
    );
    let status = second
        .wait_for_exit(STOP_LIMIT)
        .expect("the second registry exits at once");
    let output = second.output();
    assert_eq!(status.code(), Some(2), "{output}");
    assert!(output.contains("in use"), "{output}");
    first.stop();
}
