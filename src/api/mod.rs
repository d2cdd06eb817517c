//! HTTP routes (actix-web).
//!
//! Reads are served from the in-memory state on the worker thread that took
//! the request; writes go through Raft and are answered after commit+apply.
//!
//! | route | what |
//! |---|---|
//! | `GET /tacos/v1/kv` | all keys and values as JSON |
//! | `GET /tacos/v1/kv/{key}` | one value (text), 404 if absent |
//! | `PUT /tacos/v1/kv/{key}` | set (body = value) |
//! | `DELETE /tacos/v1/kv/{key}` | remove |
//! | `GET /tacos/v1/admin/raft` | Raft metrics as JSON |
//! | `GET /health` | 200 `UP` while this node has a leader, else 503 |

use std::collections::BTreeMap;
use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, Responder, ResponseError};
use serde::Serialize;

use crate::model::Command;
use crate::raft::node::{Node, WriteError};
use crate::state::Response;

impl ResponseError for WriteError {
    fn status_code(&self) -> StatusCode {
        match self {
            WriteError::Invalid(_) => StatusCode::BAD_REQUEST,
            WriteError::NoLeader | WriteError::NotLeader { .. } => StatusCode::SERVICE_UNAVAILABLE,
            WriteError::Stopped(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status_code())
            .content_type("text/plain; charset=utf-8")
            .body(self.to_string())
    }
}

/// Registers every route. `max_body` bounds request bodies.
pub fn configure(node: Arc<Node>, max_body: usize) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        cfg.app_data(web::Data::from(node))
            .app_data(web::PayloadConfig::new(max_body))
            .route("/health", web::get().to(health))
            .route("/tacos/v1/admin/raft", web::get().to(raft_metrics))
            .route("/tacos/v1/kv", web::get().to(list))
            .route("/tacos/v1/kv/{key}", web::get().to(get))
            .route("/tacos/v1/kv/{key}", web::put().to(put))
            .route("/tacos/v1/kv/{key}", web::delete().to(remove));
    }
}

async fn health(node: web::Data<Node>) -> impl Responder {
    match node.metrics().current_leader {
        Some(_) => HttpResponse::Ok().body("UP"),
        None => HttpResponse::ServiceUnavailable().body("DOWN: no leader"),
    }
}

async fn raft_metrics(node: web::Data<Node>) -> impl Responder {
    HttpResponse::Ok().json(node.metrics())
}

#[derive(Serialize)]
struct Listing<'a> {
    count: usize,
    items: BTreeMap<&'a str, &'a str>,
}

async fn list(node: web::Data<Node>) -> impl Responder {
    let state = node.state();
    let items: BTreeMap<&str, &str> = state
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    HttpResponse::Ok().json(Listing {
        count: items.len(),
        items,
    })
}

async fn get(node: web::Data<Node>, key: web::Path<String>) -> impl Responder {
    match node.state().get(&key) {
        Some(value) => HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .body(value.clone()),
        None => HttpResponse::NotFound().body("key not found\n"),
    }
}

#[derive(Serialize)]
struct WriteReply {
    index: u64,
    #[serde(flatten)]
    response: Response,
}

async fn put(
    node: web::Data<Node>,
    key: web::Path<String>,
    value: String,
) -> Result<HttpResponse, WriteError> {
    let (log_id, response) = node.write(Command::put(key.into_inner(), value)).await?;
    Ok(HttpResponse::Ok().json(WriteReply {
        index: log_id.index,
        response,
    }))
}

async fn remove(node: web::Data<Node>, key: web::Path<String>) -> Result<HttpResponse, WriteError> {
    let (log_id, response) = node.write(Command::remove(key.into_inner())).await?;
    Ok(HttpResponse::Ok().json(WriteReply {
        index: log_id.index,
        response,
    }))
}
