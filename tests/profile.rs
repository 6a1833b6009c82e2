//! `lossproof run --profile`: a scenario run against components lossproof
//! did not start, named in a TOML profile. The "team's own" components here
//! are another local stack's (started by the caller); the run's own state
//! directory holds no stack at all. The run passes, records every
//! component's version, leaves nothing of itself on the team's components,
//! and no secret of the profile reaches any output; a fault the profile
//! cannot strike is refused before anything starts.

use std::path::{Path, PathBuf};

use lossproof_runtime::Stack;

const PG_SECRET: &str = "pg-secret-4f9a1c0e";
const REGISTRY_SECRET: &str = "registry-secret-77b2e0d5";

/// Run on a profile that names the components of the stack in `team`.
pub(crate) fn a_run_on_an_external_profile(team: &Path) {
    let ports = Stack::open(team).unwrap().ports().unwrap();
    let own = std::env::temp_dir().join(format!("lossproof-own-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&own);
    std::fs::create_dir_all(&own).unwrap();
    let profile = own.join("team.toml");
    let lake = own.join("team-lake");
    write_profile(&profile, &lake, ports);
    let state = own.join("state");
    let run = |file: &str, out: &Path| {
        let (code, text, _) = crate::run::run_in_env(
            &state,
            file,
            "1",
            &["--profile", profile.to_str().unwrap()],
            out,
            &[("LOSSPROOF_TEST_PG_SECRET", std::ffi::OsStr::new(PG_SECRET))],
        );
        (code, text)
    };

    // A kill of a component that is not lossproof's: refused at its place,
    // before anything starts.
    let (code, text) = run(
        "tests/inputs/profile/kill-broker.lp",
        &own.join("refused.json"),
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("lp::check::cannot-strike")
            && text.contains("`kill broker` cannot run on profile team")
            && text.contains("tests/inputs/profile/kill-broker.lp:7:3")
            && text.contains("nothing was run"),
        "{text}"
    );
    assert!(
        !state.join("runs").exists() && !own.join("refused.json").exists(),
        "nothing started"
    );

    // The crash scenario, on the team's components.
    let out = own.join("record.json");
    let (code, text) = run("tests/inputs/profile/crash.lp", &out);
    assert_eq!(code, Some(0), "PASS on the external profile:\n{text}");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let seed = &record["results"][0];
    assert_eq!(seed["verdict"], "PASS", "{seed:#}");
    assert_eq!(record["stack"]["profile"], "team", "{record:#}");
    versions_recorded(&record["stack"]["components"]);

    // The run's own state directory never held a stack, and none of its
    // processes outlives it.
    assert!(
        Stack::open(&state).unwrap().ports().is_err(),
        "no stack in the run's state"
    );
    assert_eq!(
        crate::support::processes_mentioning(&state),
        Vec::<String>::new()
    );
    // Nothing of the seed is left on the team's components, nor in its lake.
    let run_id = record["run_id"].as_str().unwrap();
    assert_eq!(
        crate::run::leftovers(team, &format!("{run_id}s1")),
        Vec::<String>::new()
    );
    assert_eq!(
        namespaces(&lake),
        Vec::<String>::new(),
        "lake namespaces left"
    );

    // No secret in any output: the run's text, its record, every file it
    // wrote (logs, consumer records), the lake.
    let mut outputs = vec![(PathBuf::from("run output"), text.into_bytes())];
    for root in [&state, &lake, &out] {
        outputs.extend(files_under(root));
    }
    assert!(outputs.len() > 3, "the run wrote files: {outputs:?}");
    for (path, bytes) in &outputs {
        let text = String::from_utf8_lossy(bytes);
        for secret in [PG_SECRET, REGISTRY_SECRET] {
            assert!(
                !text.contains(secret),
                "{} holds a secret of the profile",
                path.display()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&own);
}

/// A profile at `path` naming the components at `ports` (another stack's)
/// and a lake in `lake`; the source password comes from the environment,
/// the registry's from a file beside the profile.
fn write_profile(path: &Path, lake: &Path, ports: lossproof_runtime::Ports) {
    let own = path.parent().unwrap();
    std::fs::write(
        own.join("registry-password"),
        format!("{REGISTRY_SECRET}\n"),
    )
    .unwrap();
    std::fs::write(
        path,
        format!(
            r#"name = "team"

[source]
host = "127.0.0.1"
port = {pg}
user = "postgres"
password = {{ env = "LOSSPROOF_TEST_PG_SECRET" }}

[kafka]
bootstrap = "127.0.0.1:{broker}"
properties = {{ "client.id" = "lossproof-profile-test" }}

[registry]
url = "http://127.0.0.1:{registry}"
user = "lossproof"
password = {{ file = "registry-password" }}

[connect]
url = "http://127.0.0.1:{connect}"

[lake]
catalog = "sql"
uri = "sqlite://{lake}/catalog.db"
warehouse = "{lake}/warehouse"
"#,
            pg = ports.source_postgres,
            broker = ports.broker,
            registry = ports.registry,
            connect = ports.connect,
            lake = lake.display(),
        ),
    )
    .unwrap();
}

/// The record names the versions the components reported.
fn versions_recorded(components: &serde_json::Value) {
    assert!(
        components["postgres"]
            .as_str()
            .is_some_and(|v| v.starts_with("PostgreSQL 15")),
        "{components:#}"
    );
    assert!(
        components["debezium"]
            .as_str()
            .is_some_and(|v| v.starts_with("Debezium PostgreSQL connector ")),
        "{components:#}"
    );
    assert!(
        components["connect"]
            .as_str()
            .is_some_and(|v| v.starts_with("Kafka Connect ")),
        "{components:#}"
    );
}

/// Every file under `root` (or `root` itself), with its bytes.
fn files_under(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    if root.is_file() {
        return vec![(root.to_owned(), std::fs::read(root).unwrap())];
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        out.extend(files_under(&entry.path()));
    }
    out
}

/// The namespaces of the lake whose catalog and warehouse are in `lake`.
fn namespaces(lake: &Path) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let lake = lossproof_runtime::Lake::open_catalog(
            &lake.join("catalog.db"),
            &lake.join("warehouse"),
        )
        .await
        .unwrap();
        iceberg::Catalog::list_namespaces(lake.catalog(), None)
            .await
            .unwrap()
            .into_iter()
            .map(|n| n.to_url_string())
            .collect()
    })
}
