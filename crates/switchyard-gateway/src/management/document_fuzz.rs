//! Property tests of the management documents (issue 10): arbitrary JSON — the
//! documents' own field names with values of every type, nested, and garbage bytes —
//! through the strict parser and the validators never panics, and every refusal is
//! a 4xx naming the problem.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use switchyard_types::api::{
    AliasView, ApiKeyCreateRequest, ComboView, ConnectionCreateRequest, ConnectionPatch,
};

use super::validate::{self, Issues};
use crate::errors::{GatewayError, parse_document};

/// The field names the documents know, plus strangers.
const FIELDS: [&str; 22] = [
    "id",
    "provider",
    "apiFormat",
    "name",
    "authKind",
    "apiKey",
    "accessToken",
    "refreshToken",
    "expiresAt",
    "baseUrl",
    "priority",
    "enabled",
    "maxConcurrent",
    "models",
    "providerSpecific",
    "strategy",
    "targets",
    "model",
    "connection",
    "from",
    "to",
    "bogus",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "\\PC{0,24}".prop_map(Value::String),
        prop_oneof![
            Just("anthropic"),
            Just("openai"),
            Just("api_key"),
            Just("oauth"),
            Just(".."),
            Just("http://x")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((proptest::sample::select(FIELDS.to_vec()), inner), 0..8).prop_map(
                |pairs| {
                    Value::Object(
                        pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<String, Value>>(),
                    )
                }
            ),
        ]
    })
}

fn refused_well(e: &GatewayError) -> Result<(), TestCaseError> {
    prop_assert!((400..500).contains(&e.code.http_status()), "{:?}", e.code);
    prop_assert!(!e.message.is_empty() || !e.issues.is_empty());
    Ok(())
}

fn check<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<Option<T>, TestCaseError> {
    match parse_document::<T>(bytes) {
        Ok(doc) => Ok(Some(doc)),
        Err(e) => refused_well(&e).map(|()| None),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_json_document_is_parsed_or_refused_with_a_4xx(doc in json_value()) {
        let bytes = serde_json::to_vec(&doc).unwrap_or_default();
        if let Some(req) = check::<ConnectionCreateRequest>(&bytes)? {
            let mut issues = Issues::default();
            validate::check_connection_id(&mut issues, "/id", req.id.as_deref().unwrap_or(""));
            validate::check_provider(&mut issues, &req.provider);
            let format = validate::resolve_format(&mut issues, &req.provider, req.api_format);
            let _ = format;
            validate::check_credentials(&mut issues, req.auth_kind, req.api_key.as_deref(), req.access_token.as_deref());
            validate::check_base_url(&mut issues, &req.provider, req.base_url.as_deref());
            validate::check_max_concurrent(&mut issues, req.max_concurrent);
            validate::check_models(&mut issues, &req.models.unwrap_or_default());
            validate::check_provider_specific(&mut issues, &req.provider_specific.unwrap_or(Value::Null));
            prop_assert!(issues.0.iter().all(|i| i.path.starts_with('/')), "{:?}", issues.0);
        }
        let _ = check::<ConnectionPatch>(&bytes)?;
        if let Some(combo) = check::<ComboView>(&bytes)? {
            let mut issues = Issues::default();
            validate::check_route_name(&mut issues, "/name", &combo.name);
        }
        let _ = check::<AliasView>(&bytes)?;
        let _ = check::<ApiKeyCreateRequest>(&bytes)?;
    }

    #[test]
    fn any_bytes_are_parsed_or_refused_with_a_4xx(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = check::<ConnectionCreateRequest>(&bytes)?;
        let _ = check::<ConnectionPatch>(&bytes)?;
    }
}
