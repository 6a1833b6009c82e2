//! The Confluent REST subset over HTTP/1.1.
//!
//! Requests are accepted whatever their content type (Confluent's clients send
//! `application/vnd.schemaregistry.v1+json`, curl users `application/json` or
//! nothing); responses are `application/vnd.schemaregistry.v1+json`. Unknown
//! query parameters are ignored, as Confluent's Jersey resources ignore them.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::net::TcpListener;

use crate::{CompatibilityLevel, Registry, RegistryError, VersionId};

/// The content type of every response.
pub const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

type Shared = State<Arc<Registry>>;
type Params = Query<HashMap<String, String>>;
type Reply = Result<Response, RegistryError>;

/// Serve `registry` on `listener` until `shutdown` completes, then finish the
/// requests in flight and return.
pub async fn serve<F>(
    listener: TcpListener,
    registry: Arc<Registry>,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    axum::serve(listener, router(registry))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Every route of the registry.
pub fn router(registry: Arc<Registry>) -> Router {
    Router::new()
        .route("/", get(root))
        .route("/health", get(health))
        .route("/schemas/types", get(schema_types))
        .route("/schemas/ids/{id}", get(schema_by_id))
        .route("/schemas/ids/{id}/schema", get(raw_schema_by_id))
        .route("/schemas/ids/{id}/versions", get(versions_of_id))
        .route("/schemas/ids/{id}/subjects", get(subjects_of_id))
        .route("/subjects", get(subjects))
        .route("/subjects/{subject}", post(lookup).delete(delete_subject))
        .route("/subjects/{subject}/versions", get(versions).post(register))
        .route(
            "/subjects/{subject}/versions/{version}",
            get(version).delete(delete_version),
        )
        .route(
            "/subjects/{subject}/versions/{version}/schema",
            get(raw_version),
        )
        .route(
            "/compatibility/subjects/{subject}/versions",
            post(compatibility_all),
        )
        .route(
            "/compatibility/subjects/{subject}/versions/{version}",
            post(compatibility_one),
        )
        .route("/config", get(global_config).put(set_global_config))
        .route(
            "/config/{subject}",
            get(subject_config)
                .put(set_subject_config)
                .delete(delete_subject_config),
        )
        .route("/mode", get(mode))
        .route("/mode/{subject}", get(mode))
        .fallback(|| async { RegistryError::RouteNotFound })
        .method_not_allowed_fallback(|| async { RegistryError::MethodNotAllowed })
        .with_state(registry)
}

fn reply<T: Serialize>(value: &T) -> Response {
    let body = serde_json::to_vec(value).expect("responses always serialise");
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response()
}

impl IntoResponse for RegistryError {
    fn into_response(self) -> Response {
        let body = json!({"error_code": self.error_code(), "message": self.to_string()});
        let mut response = reply(&body);
        *response.status_mut() = self.status();
        response
    }
}

/// A boolean query parameter (`?deleted=true`); absent or anything else is false.
fn flag(params: &HashMap<String, String>, name: &str) -> bool {
    params
        .get(name)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The `{id}` path segment. Not a positive 32-bit number: no such schema.
fn schema_id(text: &str) -> Result<u32, RegistryError> {
    text.parse::<i32>()
        .ok()
        .filter(|id| *id > 0)
        .map(i32::unsigned_abs)
        .ok_or(RegistryError::SchemaNotFound)
}

/// The body of register, lookup and compatibility requests. Other fields
/// (`version`, `id`, `metadata`, `ruleSet`, …) are ignored.
#[derive(Deserialize)]
struct SchemaRequest {
    schema: Option<String>,
    #[serde(rename = "schemaType")]
    schema_type: Option<String>,
    references: Option<Vec<serde_json::Value>>,
}

fn schema_text(body: &Bytes) -> Result<String, RegistryError> {
    let request: SchemaRequest =
        serde_json::from_slice(body).map_err(|e| RegistryError::BadRequest(e.to_string()))?;
    if let Some(kind) = request
        .schema_type
        .filter(|k| !k.eq_ignore_ascii_case("AVRO"))
    {
        return Err(RegistryError::InvalidSchema(format!(
            "schema type {kind} is not supported: this registry serves AVRO only"
        )));
    }
    if request.references.is_some_and(|r| !r.is_empty()) {
        return Err(RegistryError::InvalidSchema(
            "schema references are not supported".into(),
        ));
    }
    request
        .schema
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| RegistryError::InvalidSchema("Empty schema".into()))
}

async fn root() -> Response {
    reply(&json!({}))
}

async fn health() -> Response {
    reply(&json!({"status": "healthy"}))
}

async fn schema_types() -> Response {
    reply(&["AVRO"])
}

/// `GET /schemas/ids/{id}` (`?fetchMaxId=true` adds `maxId`; `subject` and
/// `format` are accepted and ignored).
async fn schema_by_id(
    State(registry): Shared,
    Path(id): Path<String>,
    Query(params): Params,
) -> Reply {
    let schema = registry.schema_by_id(schema_id(&id)?)?;
    Ok(if flag(&params, "fetchMaxId") {
        reply(&json!({"schema": schema, "maxId": registry.max_id()}))
    } else {
        reply(&json!({ "schema": schema }))
    })
}

async fn raw_schema_by_id(State(registry): Shared, Path(id): Path<String>) -> Reply {
    let schema = registry.schema_by_id(schema_id(&id)?)?;
    Ok(raw_schema(schema))
}

/// A schema text returned as the body itself (it is JSON).
fn raw_schema(schema: String) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], schema).into_response()
}

async fn versions_of_id(
    State(registry): Shared,
    Path(id): Path<String>,
    Query(params): Params,
) -> Reply {
    Ok(reply(&registry.versions_of_id(
        schema_id(&id)?,
        flag(&params, "deleted"),
    )?))
}

async fn subjects_of_id(
    State(registry): Shared,
    Path(id): Path<String>,
    Query(params): Params,
) -> Reply {
    let mut subjects: Vec<String> = registry
        .versions_of_id(schema_id(&id)?, flag(&params, "deleted"))?
        .into_iter()
        .map(|v| v.subject)
        .collect();
    subjects.dedup();
    Ok(reply(&subjects))
}

async fn subjects(State(registry): Shared, Query(params): Params) -> Response {
    let prefix = params.get("subjectPrefix").map_or("", String::as_str);
    reply(&registry.subjects(flag(&params, "deleted"), prefix))
}

/// `POST /subjects/{subject}`: is this schema registered under the subject?
async fn lookup(
    State(registry): Shared,
    Path(subject): Path<String>,
    Query(params): Params,
    body: Bytes,
) -> Reply {
    let found = registry.lookup(&subject, &schema_text(&body)?, flag(&params, "deleted"))?;
    Ok(reply(&found))
}

async fn delete_subject(
    State(registry): Shared,
    Path(subject): Path<String>,
    Query(params): Params,
) -> Reply {
    Ok(reply(
        &registry.delete_subject(&subject, flag(&params, "permanent"))?,
    ))
}

async fn versions(
    State(registry): Shared,
    Path(subject): Path<String>,
    Query(params): Params,
) -> Reply {
    Ok(reply(
        &registry.versions(&subject, flag(&params, "deleted"))?,
    ))
}

/// `POST /subjects/{subject}/versions` (`normalize` is accepted and ignored:
/// identity is always decided on the normalized form).
async fn register(State(registry): Shared, Path(subject): Path<String>, body: Bytes) -> Reply {
    let id = registry.register(&subject, &schema_text(&body)?)?;
    Ok(reply(&json!({ "id": id })))
}

async fn version(
    State(registry): Shared,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
) -> Reply {
    let found = registry.version(&subject, version.parse()?, flag(&params, "deleted"))?;
    Ok(reply(&found))
}

async fn raw_version(
    State(registry): Shared,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
) -> Reply {
    let found = registry.version(&subject, version.parse()?, flag(&params, "deleted"))?;
    Ok(raw_schema(found.schema))
}

async fn delete_version(
    State(registry): Shared,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
) -> Reply {
    let deleted =
        registry.delete_version(&subject, version.parse()?, flag(&params, "permanent"))?;
    Ok(reply(&deleted))
}

fn compatibility_reply(messages: &[String], params: &HashMap<String, String>) -> Response {
    if flag(params, "verbose") {
        reply(&json!({"is_compatible": messages.is_empty(), "messages": messages}))
    } else {
        reply(&json!({"is_compatible": messages.is_empty()}))
    }
}

async fn compatibility_all(
    State(registry): Shared,
    Path(subject): Path<String>,
    Query(params): Params,
    body: Bytes,
) -> Reply {
    let messages = registry.test_compatibility(&subject, None, &schema_text(&body)?)?;
    Ok(compatibility_reply(&messages, &params))
}

async fn compatibility_one(
    State(registry): Shared,
    Path((subject, version)): Path<(String, String)>,
    Query(params): Params,
    body: Bytes,
) -> Reply {
    let version: VersionId = version.parse()?;
    let messages = registry.test_compatibility(&subject, Some(version), &schema_text(&body)?)?;
    Ok(compatibility_reply(&messages, &params))
}

/// The body of `PUT /config` (other fields are ignored).
#[derive(Deserialize)]
struct ConfigRequest {
    compatibility: Option<String>,
}

fn config_level(body: &Bytes) -> Result<CompatibilityLevel, RegistryError> {
    let request: ConfigRequest =
        serde_json::from_slice(body).map_err(|e| RegistryError::BadRequest(e.to_string()))?;
    request.compatibility.unwrap_or_default().parse()
}

async fn global_config(State(registry): Shared) -> Response {
    reply(&json!({"compatibilityLevel": registry.global_compatibility()}))
}

async fn set_global_config(State(registry): Shared, body: Bytes) -> Reply {
    let level = config_level(&body)?;
    registry.set_global_compatibility(level)?;
    Ok(reply(&json!({ "compatibility": level })))
}

/// `GET /config/{subject}`: the subject's own level; with
/// `defaultToGlobal=true`, the level that applies to it.
async fn subject_config(
    State(registry): Shared,
    Path(subject): Path<String>,
    Query(params): Params,
) -> Reply {
    let level = match registry.subject_compatibility(&subject) {
        Some(level) => level,
        None if flag(&params, "defaultToGlobal") => registry.global_compatibility(),
        None => return Err(RegistryError::SubjectCompatibilityNotConfigured(subject)),
    };
    Ok(reply(&json!({ "compatibilityLevel": level })))
}

async fn set_subject_config(
    State(registry): Shared,
    Path(subject): Path<String>,
    body: Bytes,
) -> Reply {
    let level = config_level(&body)?;
    registry.set_subject_compatibility(&subject, level)?;
    Ok(reply(&json!({ "compatibility": level })))
}

async fn delete_subject_config(State(registry): Shared, Path(subject): Path<String>) -> Reply {
    let level = registry.delete_subject_compatibility(&subject)?;
    Ok(reply(&json!({ "compatibilityLevel": level })))
}

/// The registry is always writable (no IMPORT/READONLY modes).
async fn mode() -> Response {
    reply(&json!({"mode": "READWRITE"}))
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use axum::http::StatusCode;
    use reqwest::Client;
    use serde_json::Value;

    use super::*;

    /// A registry served on a free loopback port until the returned sender is
    /// dropped or fired.
    struct Server {
        base: String,
        client: Client,
        _dir: tempfile::TempDir,
        _stop: tokio::sync::oneshot::Sender<()>,
    }

    async fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let registry = Arc::new(Registry::open(dir.path()).unwrap());
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve(listener, registry, async {
            let _ = stopped.await;
        }));
        Server {
            base,
            client: Client::new(),
            _dir: dir,
            _stop: stop,
        }
    }

    impl Server {
        async fn send(
            &self,
            method: reqwest::Method,
            path: &str,
            body: Option<Value>,
        ) -> (u16, Value) {
            let mut request = self
                .client
                .request(method, format!("{}{path}", self.base))
                .header(reqwest::header::CONTENT_TYPE, CONTENT_TYPE);
            if let Some(body) = body {
                request = request.body(body.to_string());
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let content_type = response.headers()[reqwest::header::CONTENT_TYPE].clone();
            assert_eq!(content_type, CONTENT_TYPE, "{path}");
            (status, response.json().await.unwrap())
        }

        async fn get(&self, path: &str) -> (u16, Value) {
            self.send(reqwest::Method::GET, path, None).await
        }

        async fn post(&self, path: &str, body: Value) -> (u16, Value) {
            self.send(reqwest::Method::POST, path, Some(body)).await
        }
    }

    const V1: &str = r#"{"type":"record","name":"Key","fields":[{"name":"id","type":"int"}]}"#;
    const V2: &str = r#"{"type":"record","name":"Key","fields":[{"name":"id","type":"int"},{"name":"k","type":"string","default":""}]}"#;
    const BAD: &str = r#"{"type":"record","name":"Key","fields":[{"name":"id","type":"string"}]}"#;

    #[tokio::test]
    async fn registration_lookup_and_compatibility_routes() {
        let s = start().await;
        assert_eq!(s.get("/").await, (200, json!({})));
        assert_eq!(
            s.get("/config").await,
            (200, json!({"compatibilityLevel": "BACKWARD"}))
        );
        // What the Java client 7.0 sends: `normalize`, a schemaType, empty references.
        let (status, body) = s
            .post(
                "/subjects/t-key/versions?normalize=false",
                json!({"schema": V1, "schemaType": "AVRO", "references": []}),
            )
            .await;
        assert_eq!((status, body), (200, json!({"id": 1})));
        assert_eq!(
            s.get("/schemas/ids/1?fetchMaxId=false&subject=t-key").await,
            (200, json!({"schema": V1}))
        );
        assert_eq!(
            s.get("/schemas/ids/1?fetchMaxId=true").await,
            (200, json!({"schema": V1, "maxId": 1}))
        );
        assert_eq!(
            s.post(
                "/subjects/t-key?normalize=false&deleted=true",
                json!({"schema": V1})
            )
            .await,
            (
                200,
                json!({"subject": "t-key", "version": 1, "id": 1, "schema": V1})
            )
        );
        let (status, body) = s
            .post("/subjects/t-key/versions", json!({"schema": BAD}))
            .await;
        assert_eq!(status, 409);
        assert_eq!(body["error_code"], 409);
        assert!(
            body["message"].as_str().unwrap().contains("incompatible"),
            "{body}"
        );
        assert_eq!(
            s.post(
                "/compatibility/subjects/t-key/versions/latest?verbose=false",
                json!({"schema": BAD})
            )
            .await,
            (200, json!({"is_compatible": false}))
        );
        let (_, verbose) = s
            .post(
                "/compatibility/subjects/t-key/versions/latest?verbose=true",
                json!({"schema": V2}),
            )
            .await;
        assert_eq!(verbose, json!({"is_compatible": true, "messages": []}));
        assert_eq!(
            s.post("/subjects/t-key/versions", json!({"schema": V2}))
                .await,
            (200, json!({"id": 2}))
        );
        assert_eq!(s.get("/subjects").await, (200, json!(["t-key"])));
        assert_eq!(
            s.get("/subjects/t-key/versions").await,
            (200, json!([1, 2]))
        );
        assert_eq!(
            s.get("/subjects/t-key/versions/latest").await,
            (
                200,
                json!({"subject": "t-key", "version": 2, "id": 2, "schema": V2})
            )
        );
        assert_eq!(
            s.get("/schemas/ids/2/versions").await,
            (200, json!([{"subject": "t-key", "version": 2}]))
        );
    }

    #[tokio::test]
    async fn missing_things_and_bad_requests_answer_confluent_error_codes() {
        let s = start().await;
        s.post("/subjects/t-key/versions", json!({"schema": V1}))
            .await;
        s.post("/subjects/t-key/versions", json!({"schema": V2}))
            .await;
        for (path, status, code) in [
            ("/schemas/ids/99", 404, 40403),
            ("/schemas/ids/nope", 404, 40403),
            ("/subjects/nope/versions", 404, 40401),
            ("/subjects/nope/versions/1", 404, 40401),
            ("/subjects/t-key/versions/9", 404, 40402),
            ("/subjects/t-key/versions/0", 422, 42202),
            ("/config/t-key", 404, 40408),
            ("/no/such/route", 404, 404),
        ] {
            let (actual, body) = s.get(path).await;
            assert_eq!(
                (actual, body["error_code"].as_u64()),
                (status, Some(code)),
                "{path}: {body}"
            );
        }
        let (status, body) = s.post("/subjects/t-key", json!({"schema": BAD})).await;
        assert_eq!(
            (status, body["error_code"].as_u64()),
            (404, Some(40403)),
            "{body}"
        );
        let (status, body) = s
            .post("/subjects/t-key/versions", json!({"schema": "{\"type\":"}))
            .await;
        assert_eq!(
            (status, body["error_code"].as_u64()),
            (422, Some(42201)),
            "{body}"
        );
        let (status, body) = s
            .post(
                "/subjects/t-key/versions",
                json!({"schema": V1, "schemaType": "PROTOBUF"}),
            )
            .await;
        assert_eq!(
            (status, body["error_code"].as_u64()),
            (422, Some(42201)),
            "{body}"
        );
        let (status, body) = s.send(reqwest::Method::PATCH, "/config", None).await;
        assert_eq!(
            (status, body["error_code"].as_u64()),
            (405, Some(405)),
            "{body}"
        );
    }

    #[tokio::test]
    async fn config_and_deletion_routes() {
        let s = start().await;
        let put = |path: &'static str, level: &'static str| {
            let s = &s;
            async move {
                s.send(
                    reqwest::Method::PUT,
                    path,
                    Some(json!({"compatibility": level})),
                )
                .await
            }
        };
        assert_eq!(
            put("/config", "full").await,
            (200, json!({"compatibility": "FULL"}))
        );
        assert_eq!(
            s.get("/config").await.1,
            json!({"compatibilityLevel": "FULL"})
        );
        let (status, body) = put("/config", "SIDEWAYS").await;
        assert_eq!(
            (status, body["error_code"].as_u64()),
            (422, Some(42203)),
            "{body}"
        );
        assert_eq!(
            s.get("/config/u-value?defaultToGlobal=true").await,
            (200, json!({"compatibilityLevel": "FULL"}))
        );
        assert_eq!(
            put("/config/u-value", "NONE").await,
            (200, json!({"compatibility": "NONE"}))
        );
        assert_eq!(
            s.get("/config/u-value").await,
            (200, json!({"compatibilityLevel": "NONE"}))
        );
        // A subject with only a config is not listed.
        assert_eq!(s.get("/subjects").await, (200, json!([])));

        s.post("/subjects/u-value/versions", json!({"schema": V1}))
            .await;
        // NONE on the subject: an incompatible change goes through.
        assert_eq!(
            s.post("/subjects/u-value/versions", json!({"schema": BAD}))
                .await,
            (200, json!({"id": 2}))
        );
        let delete = |path: &'static str| {
            let s = &s;
            async move { s.send(reqwest::Method::DELETE, path, None).await }
        };
        assert_eq!(
            delete("/subjects/u-value/versions/1").await,
            (200, json!(1))
        );
        assert_eq!(delete("/subjects/u-value").await, (200, json!([2])));
        assert_eq!(s.get("/subjects").await, (200, json!([])));
        assert_eq!(
            s.get("/subjects?deleted=true").await,
            (200, json!(["u-value"]))
        );
        // Soft-deleted schemas stay readable by id (consumers still need them).
        assert_eq!(s.get("/schemas/ids/2").await, (200, json!({"schema": BAD})));
        assert_eq!(
            delete("/subjects/u-value?permanent=true").await,
            (200, json!([1, 2]))
        );
        assert_eq!(s.get("/schemas/ids/2").await.0, 404);
        assert_eq!(delete("/config/u-value").await.0, 404);
    }

    #[tokio::test]
    async fn the_content_type_of_a_request_does_not_matter() {
        let s = start().await;
        for content_type in ["application/json", "application/octet-stream", "text/plain"] {
            let response = s
                .client
                .post(format!("{}/subjects/c/versions", s.base))
                .header(reqwest::header::CONTENT_TYPE, content_type)
                .body(json!({"schema": V1}).to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(response.status().as_u16(), 200, "{content_type}");
        }
        let response = s
            .client
            .post(format!("{}/subjects/c/versions", s.base))
            .body("{")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 400);
    }

    #[tokio::test]
    async fn graceful_shutdown_returns_once_signalled() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Arc::new(Registry::open(dir.path()).unwrap());
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, registry, async {
            let _ = stopped.await;
        }));
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }

    #[test]
    fn status_codes_match_confluent() {
        assert_eq!(
            RegistryError::SubjectNotFound("s".into()).status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            RegistryError::InvalidSchema(String::new()).status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }
}
