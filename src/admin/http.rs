//! The HTTP plumbing: one hyper connection per client, requests handed to [`routes`].

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::routes;
use super::Admin;

/// Largest request body the admin API reads (job requests are small JSON documents).
const MAX_BODY: usize = 1024 * 1024;

pub type HttpResponse = Response<Full<Bytes>>;

/// A JSON answer.
pub fn json(status: StatusCode, value: &serde_json::Value) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// An error answer, `{"error": message}`.
pub fn error(status: StatusCode, message: impl Into<String>) -> HttpResponse {
    json(status, &serde_json::json!({ "error": message.into() }))
}

/// Plain text (the Prometheus exposition format).
pub fn text(body: String, content_type: &'static str) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}

/// What a route handler sees of a request.
pub struct AdminRequest {
    pub method: hyper::Method,
    pub path: String,
    pub query: Option<String>,
    pub authorization: Option<String>,
    pub body: Bytes,
}

impl AdminRequest {
    /// The body as JSON (an empty body reads as `{}`), or the message for a 400 answer.
    pub fn json_body(&self) -> Result<serde_json::Value, String> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(serde_json::json!({}));
        }
        serde_json::from_slice(&self.body)
            .map_err(|e| format!("request body is not valid JSON: {e}"))
    }
}

async fn handle(admin: Arc<Admin>, request: Request<Incoming>) -> Result<HttpResponse, Infallible> {
    let (parts, body) = request.into_parts();
    let authorization = parts
        .headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(refused) =
        routes::unauthorized(&admin.proxy, &parts.method, authorization.as_deref())
    {
        return Ok(refused);
    }
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return Ok(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body larger than {MAX_BODY} bytes or unreadable"),
            ))
        }
    };
    let request = AdminRequest {
        method: parts.method,
        path: parts.uri.path().to_string(),
        query: parts.uri.query().map(str::to_string),
        authorization,
        body,
    };
    Ok(routes::route(&admin, request).await)
}

/// Accepts admin connections until the process ends.
pub async fn serve(listener: TcpListener, admin: Arc<Admin>) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("admin accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let admin = admin.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(admin.clone(), request));
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!("admin connection ended: {e}");
            }
        });
    }
}
