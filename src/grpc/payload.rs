//! Nacos gRPC payloads: a `Payload` carries the class name of its message in
//! `metadata.type` and the message itself as JSON in `body.value`.
//!
//! Responses always carry `resultCode` (200 or 500), `errorCode` (0 on
//! success), `message` and `requestId`, and never a JSON `null`: the official
//! clients deserialize strictly.

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::pb::{Metadata, Payload};

/// Nacos error codes the clients act on.
pub mod code {
    /// A config that does not exist (ConfigQueryResponse).
    pub const CONFIG_NOT_FOUND: i32 = 300;
    /// No handler for the request type.
    pub const NO_HANDLER: i32 = 302;
    /// A connection that did not set up its stream.
    pub const UNREGISTERED: i32 = 301;
    /// Bad input (Nacos' `INVALID_PARAM`).
    pub const INVALID_PARAM: i32 = 400;
    /// A request that could not be parsed (Nacos' `BAD_GATEWAY`).
    pub const BAD_REQUEST_PAYLOAD: i32 = 502;
    /// Any other failure.
    pub const SERVER_ERROR: i32 = 500;
    /// Not logged in, or not allowed (Nacos' `NO_RIGHT`).
    pub const NO_RIGHT: i32 = 403;
}

/// A request as it arrived: its type, the client's IP and headers, and the
/// JSON body.
#[derive(Debug)]
pub struct Incoming {
    pub kind: String,
    pub client_ip: String,
    pub headers: HashMap<String, String>,
    pub body: Map<String, Value>,
}

/// Why a payload could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("the payload has no body")]
    NoBody,
    #[error("the payload body is not a JSON object: {0}")]
    NotJson(String),
    #[error("field {field}: {reason}")]
    BadField { field: String, reason: String },
}

impl Incoming {
    pub fn parse(payload: Payload) -> Result<Incoming, PayloadError> {
        let metadata = payload.metadata.unwrap_or_default();
        let body = payload.body.ok_or(PayloadError::NoBody)?;
        let body = match serde_json::from_slice::<Value>(&body.value) {
            Ok(Value::Object(map)) => map,
            Ok(other) => return Err(PayloadError::NotJson(format!("found {other}"))),
            Err(e) => return Err(PayloadError::NotJson(e.to_string())),
        };
        Ok(Incoming {
            kind: metadata.r#type,
            client_ip: metadata.client_ip,
            headers: metadata.headers,
            body,
        })
    }

    /// The request's id ("" when absent), echoed in its response as a
    /// string (a number is echoed as its digits).
    pub fn request_id(&self) -> String {
        match self.body.get("requestId") {
            Some(Value::String(id)) => id.clone(),
            Some(Value::Number(id)) => id.to_string(),
            _ => String::new(),
        }
    }

    /// A JSON object of string values; nulls are dropped and numbers and
    /// booleans are taken as their text (clients differ in what they send).
    pub fn string_map(
        &self,
        name: &str,
    ) -> Result<std::collections::HashMap<String, String>, PayloadError> {
        let bad = |reason: &str| PayloadError::BadField {
            field: name.to_string(),
            reason: reason.to_string(),
        };
        match self.body.get(name) {
            None | Some(Value::Null) => Ok(Default::default()),
            Some(Value::Object(map)) => map
                .iter()
                .filter_map(|(k, v)| match v {
                    Value::Null => None,
                    Value::String(s) => Some(Ok((k.clone(), s.clone()))),
                    Value::Number(n) => Some(Ok((k.clone(), n.to_string()))),
                    Value::Bool(b) => Some(Ok((k.clone(), b.to_string()))),
                    _ => Some(Err(bad("values must be strings"))),
                })
                .collect(),
            Some(_) => Err(bad("must be an object of strings")),
        }
    }

    /// A string field ("" when absent or not a string).
    pub fn str(&self, name: &str) -> &str {
        self.body.get(name).and_then(Value::as_str).unwrap_or("")
    }

    /// A string field, or `None` when absent or null.
    pub fn opt_str(&self, name: &str) -> Option<&str> {
        self.body.get(name).and_then(Value::as_str)
    }

    /// A field deserialized into `T`.
    pub fn field<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, PayloadError> {
        match self.body.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => serde_json::from_value(value.clone())
                .map(Some)
                .map_err(|e| PayloadError::BadField {
                    field: name.to_string(),
                    reason: e.to_string(),
                }),
        }
    }

    /// A request header: in the body's `headers` (where the Java and Rust
    /// clients put them) or in the metadata.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.body
            .get("headers")
            .and_then(|h| h.get(name))
            .and_then(Value::as_str)
            .or_else(|| self.headers.get(name).map(String::as_str))
    }
}

/// The request id of a response (a client's answer to a push: its type
/// ends with `Response`) whose id is a JSON string; `None` for anything
/// else, which is read whole by [`Incoming::parse`].
pub fn response_request_id(payload: &Payload) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Ack {
        #[serde(rename = "requestId")]
        request_id: String,
    }
    let kind = &payload.metadata.as_ref()?.r#type;
    if !kind.ends_with("Response") {
        return None;
    }
    let body = payload.body.as_ref()?;
    serde_json::from_slice::<Ack>(&body.value)
        .ok()
        .map(|ack| ack.request_id)
}

/// Builds a payload of `kind` whose body is `body` as JSON.
pub fn payload(kind: &str, body: &impl Serialize) -> Payload {
    let value = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    Payload {
        metadata: Some(Metadata {
            r#type: kind.to_string(),
            client_ip: String::new(),
            headers: HashMap::new(),
        }),
        body: Some(prost_types::Any {
            type_url: String::new(),
            value,
        }),
    }
}

/// A response and whether it reports success (for metrics, without
/// decoding the body again).
#[derive(Debug)]
pub struct Reply {
    pub payload: Payload,
    pub ok: bool,
}

/// A successful response: the common fields plus `fields`.
pub fn ok(kind: &str, request_id: &str, fields: Value) -> Reply {
    respond(kind, request_id, 200, 0, "", fields)
}

/// A successful response whose fields are `body`, serialized straight from
/// borrowed data (the read path: no copy of the content into a JSON tree).
pub fn ok_with(kind: &str, request_id: &str, body: &impl Serialize) -> Reply {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Success<'a, T> {
        result_code: i32,
        error_code: i32,
        message: &'a str,
        request_id: &'a str,
        success: bool,
        #[serde(flatten)]
        body: T,
    }
    let success = Success {
        result_code: 200,
        error_code: 0,
        message: "",
        request_id,
        success: true,
        body,
    };
    Reply {
        payload: payload(kind, &success),
        ok: true,
    }
}

/// A failed response of `kind` (so the client's parser accepts it).
pub fn fail(kind: &str, request_id: &str, error_code: i32, message: &str) -> Reply {
    respond(kind, request_id, 500, error_code, message, Value::Null)
}

/// A failed response that also carries `fields`: the fields a client's
/// parser requires of this kind even when it failed.
pub fn fail_with(
    kind: &str,
    request_id: &str,
    error_code: i32,
    message: &str,
    fields: Value,
) -> Reply {
    respond(kind, request_id, 500, error_code, message, fields)
}

/// Nacos' generic `ErrorResponse`.
pub fn error(request_id: &str, error_code: i32, message: &str) -> Reply {
    fail("ErrorResponse", request_id, error_code, message)
}

fn respond(
    kind: &str,
    request_id: &str,
    result_code: i32,
    error_code: i32,
    message: &str,
    fields: Value,
) -> Reply {
    let mut body = match fields {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    body.insert("resultCode".into(), result_code.into());
    body.insert("errorCode".into(), error_code.into());
    body.insert("message".into(), message.into());
    body.insert("requestId".into(), request_id.into());
    body.insert("success".into(), (result_code == 200).into());
    Reply {
        payload: payload(kind, &Value::Object(body)),
        ok: result_code == 200,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(payload: &Payload) -> Value {
        serde_json::from_slice(&payload.body.as_ref().unwrap().value).unwrap()
    }

    /// A push's ack is read by its request id alone; anything else (a
    /// request, a response whose id is no string) is left to
    /// `Incoming::parse`.
    #[test]
    fn only_a_responses_string_request_id_is_read_as_an_ack() {
        let ack = payload(
            "ConfigChangeNotifyResponse",
            &serde_json::json!({"resultCode": 200, "requestId": "17", "headers": {}}),
        );
        assert_eq!(response_request_id(&ack).as_deref(), Some("17"));
        let request = payload(
            "ConnectionSetupRequest",
            &serde_json::json!({"requestId": "1"}),
        );
        assert_eq!(response_request_id(&request), None);
        let numeric = payload(
            "ConfigChangeNotifyResponse",
            &serde_json::json!({"requestId": 17}),
        );
        assert_eq!(response_request_id(&numeric), None);
        let absent = payload("ConfigChangeNotifyResponse", &serde_json::json!({}));
        assert_eq!(response_request_id(&absent), None);
    }

    #[test]
    fn typed_and_tree_responses_agree() {
        #[derive(Serialize)]
        struct Body<'a> {
            content: &'a str,
            beta: bool,
        }
        let typed = ok_with(
            "X",
            "9",
            &Body {
                content: "c",
                beta: true,
            },
        );
        let tree = ok("X", "9", serde_json::json!({"content": "c", "beta": true}));
        assert!(typed.ok);
        assert_eq!(body_of(&typed.payload), body_of(&tree.payload));
    }

    #[test]
    fn responses_carry_the_common_fields_and_no_nulls() {
        let reply = ok("X", "7", serde_json::json!({"content": "a"}));
        assert!(reply.ok);
        let reply = reply.payload;
        assert_eq!(reply.metadata.as_ref().unwrap().r#type, "X");
        let body = body_of(&reply);
        assert_eq!(body["resultCode"], 200);
        assert_eq!(body["errorCode"], 0);
        assert_eq!(body["requestId"], "7");
        assert_eq!(body["content"], "a");
        let failed = error("", code::NO_HANDLER, "no");
        assert!(!failed.ok);
        let failed = body_of(&failed.payload);
        assert_eq!(failed["resultCode"], 500);
        assert_eq!(failed["errorCode"], 302);
        for body in [body, failed] {
            assert!(body.as_object().unwrap().values().all(|v| !v.is_null()));
        }
    }

    #[test]
    fn bad_payloads_are_errors() {
        let mut p = payload("ConfigQueryRequest", &serde_json::json!({}));
        p.body.as_mut().unwrap().value = b"{not json".to_vec();
        assert!(Incoming::parse(p).is_err());
        let p = Payload {
            metadata: None,
            body: None,
        };
        assert!(matches!(Incoming::parse(p), Err(PayloadError::NoBody)));
        let p = payload("X", &serde_json::json!([1, 2]));
        assert!(Incoming::parse(p).is_err());
        let p = payload(
            "X",
            &serde_json::json!({"requestId": "1", "headers": {"a": "b"}}),
        );
        let incoming = Incoming::parse(p).unwrap();
        assert_eq!(incoming.request_id(), "1");
        assert_eq!(incoming.header("a"), Some("b"));
        assert_eq!(incoming.kind, "X");
        let p = payload(
            "X",
            &serde_json::json!({"requestId": 42, "additionMap": {"type": null, "n": 5, "s": "x"}}),
        );
        let incoming = Incoming::parse(p).unwrap();
        assert_eq!(incoming.request_id(), "42");
        let map = incoming.string_map("additionMap").unwrap();
        assert_eq!(map.len(), 2);
        assert_eq!(map["n"], "5");
        assert_eq!(map["s"], "x");
        let p = payload("X", &serde_json::json!({"additionMap": {"a": [1]}}));
        let error = Incoming::parse(p)
            .unwrap()
            .string_map("additionMap")
            .unwrap_err();
        assert!(
            error.to_string().starts_with("field additionMap"),
            "{error}"
        );
    }
}
