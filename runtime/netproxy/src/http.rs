//! The control API (see [`crate::api`] for the routes and messages).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde::{Deserialize, Serialize};

use crate::api::{Cleared, FaultRequest, LinkStatus};
use crate::link::Link;

/// Every link, by name, and the fault ids handed out so far.
pub(crate) struct Proxy {
    pub links: BTreeMap<String, Arc<Link>>,
    next_id: AtomicU64,
}

impl Proxy {
    pub(crate) fn new(links: BTreeMap<String, Arc<Link>>) -> Self {
        Self {
            links,
            next_id: AtomicU64::new(1),
        }
    }
}

pub(crate) fn router(proxy: Arc<Proxy>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/links", get(links))
        .route("/links/{link}/faults", post(add_fault))
        .route("/links/{link}/faults/{id}", delete(remove_fault))
        .route("/faults", delete(clear_owner))
        .with_state(proxy)
}

/// Healthy while every link accepts connections.
async fn health(State(proxy): State<Arc<Proxy>>) -> Response {
    let broken: Vec<String> = proxy.links.values().filter_map(|l| l.broken()).collect();
    if broken.is_empty() {
        format!("lossproof netproxy {}", env!("CARGO_PKG_VERSION")).into_response()
    } else {
        error(StatusCode::SERVICE_UNAVAILABLE, &broken.join("; "))
    }
}

async fn links(State(proxy): State<Arc<Proxy>>) -> Response {
    let links: Vec<LinkStatus> = proxy.links.values().map(|l| l.status()).collect();
    json(StatusCode::OK, &links)
}

async fn add_fault(
    State(proxy): State<Arc<Proxy>>,
    Path(link): Path<String>,
    body: Bytes,
) -> Response {
    let Some(link) = proxy.links.get(&link) else {
        return unknown_link(&proxy, &link);
    };
    let request: FaultRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("bad fault request: {e}")),
    };
    let id = proxy.next_id.fetch_add(1, Ordering::SeqCst);
    json(StatusCode::OK, &link.add(id, request))
}

async fn remove_fault(
    State(proxy): State<Arc<Proxy>>,
    Path((link, id)): Path<(String, u64)>,
) -> Response {
    let Some(link) = proxy.links.get(&link) else {
        return unknown_link(&proxy, &link);
    };
    let cleared = link.remove(|f| f.id == id);
    json(StatusCode::OK, &Cleared { cleared })
}

#[derive(Deserialize)]
struct Owner {
    owner: String,
}

async fn clear_owner(
    State(proxy): State<Arc<Proxy>>,
    Query(Owner { owner }): Query<Owner>,
) -> Response {
    let cleared = proxy
        .links
        .values()
        .map(|l| l.remove(|f| f.owner == owner))
        .sum();
    json(StatusCode::OK, &Cleared { cleared })
}

fn unknown_link(proxy: &Proxy, link: &str) -> Response {
    let known: Vec<&str> = proxy.links.keys().map(String::as_str).collect();
    error(
        StatusCode::NOT_FOUND,
        &format!("no link `{link}`; links are {}", known.join(", ")),
    )
}

fn json(status: StatusCode, value: &impl Serialize) -> Response {
    let body = serde_json::to_vec(value).expect("the API's messages always serialise");
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    json(status, &serde_json::json!({ "error": message }))
}
