//! The lease headers an agent sends: its opaque owner token (`vlo_` + 43 base64url
//! characters, never stored: only its SHA-256) and, on inference requests, the
//! generation it was granted.

use http::{HeaderMap, HeaderName};
use switchyard_types::ErrorCode;

use crate::errors::GatewayError;
use crate::header_names;

/// The owner token header.
pub const OWNER_HEADER: &str = "x-switchyard-lease-owner";
/// The fencing generation header.
pub const GENERATION_HEADER: &str = "x-switchyard-lease-generation";

const OWNER_PREFIX: &str = "vlo_";
const OWNER_BODY_LEN: usize = 43;

/// A lease claim read from request headers: the owner's hash, and the generation
/// when one was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseClaim {
    /// SHA-256 (hex) of the owner token.
    pub owner_hash: String,
    /// The generation header, when present.
    pub generation: Option<i64>,
}

fn single<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Result<Option<&'h [u8]>, GatewayError> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => Ok(None),
        (Some(v), None) => Ok(Some(v.as_bytes())),
        (Some(_), Some(_)) => Err(invalid(&format!("'{name}' is sent more than once"))),
    }
}

fn invalid(detail: &str) -> GatewayError {
    GatewayError::new(ErrorCode::LeaseContextInvalid, format!("invalid lease context: {detail}"))
}

/// Whether `token` is `vlo_` followed by exactly 43 base64url characters.
pub fn is_owner_token(token: &[u8]) -> bool {
    token.strip_prefix(OWNER_PREFIX.as_bytes()).is_some_and(|body| {
        body.len() == OWNER_BODY_LEN
            && body.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
    })
}

/// Reads the lease headers. `Ok(None)` when neither is present. A generation
/// without an owner, a malformed owner or generation, or a repeated header is a
/// 400 naming the problem (the values themselves are never echoed).
pub fn claim_from(headers: &HeaderMap) -> Result<Option<LeaseClaim>, GatewayError> {
    let owner = single(headers, &header_names::LEASE_OWNER)?;
    let generation = single(headers, &header_names::LEASE_GENERATION)?;
    let Some(owner) = owner else {
        if generation.is_some() {
            return Err(GatewayError::new(
                ErrorCode::LeaseContextRequired,
                format!("'{GENERATION_HEADER}' was sent without '{OWNER_HEADER}'"),
            ));
        }
        return Ok(None);
    };
    if !is_owner_token(owner) {
        return Err(invalid(&format!("'{OWNER_HEADER}' must be 'vlo_' followed by 43 base64url characters")));
    }
    let generation = match generation {
        None => None,
        Some(raw) => Some(
            std::str::from_utf8(raw)
                .ok()
                .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|s| s.parse::<i64>().ok())
                .filter(|g| *g > 0)
                .ok_or_else(|| invalid(&format!("'{GENERATION_HEADER}' must be a positive integer")))?,
        ),
    };
    Ok(Some(LeaseClaim { owner_hash: crate::secrets::hash_key_hex_bytes(owner), generation }))
}

/// The error for a lease call without the owner header.
pub fn owner_required() -> GatewayError {
    GatewayError::new(
        ErrorCode::LeaseContextRequired,
        format!("a lease call needs the owner header '{OWNER_HEADER}: vlo_<43 base64url characters>'"),
    )
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    const OWNER: &str = "vlo_abcdefghijklmnopqrstuvwxyzABCDEFGHIJK0123-_";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, HeaderValue::from_str(value).unwrap_or_else(|e| panic!("{e}")));
        }
        h
    }

    fn code(r: Result<Option<LeaseClaim>, GatewayError>) -> Option<ErrorCode> {
        r.err().map(|e| e.code)
    }

    #[test]
    fn owner_tokens_are_checked_by_shape_and_only_their_hash_is_kept() {
        assert_eq!(OWNER.len(), 47);
        let claim = claim_from(&headers(&[(OWNER_HEADER, OWNER), (GENERATION_HEADER, "3")]));
        let Ok(Some(claim)) = claim else { panic!("{claim:?}") };
        assert_eq!(claim.generation, Some(3));
        assert_eq!(claim.owner_hash.len(), 64);
        assert!(!claim.owner_hash.contains("vlo_"));
        assert_eq!(claim_from(&headers(&[])).ok(), Some(None));
        let short = &OWNER[..46];
        assert_eq!(
            code(claim_from(&headers(&[(OWNER_HEADER, short)]))),
            Some(ErrorCode::LeaseContextInvalid)
        );
        let dotted = OWNER.replace('-', ".");
        assert_eq!(
            code(claim_from(&headers(&[(OWNER_HEADER, &dotted)]))),
            Some(ErrorCode::LeaseContextInvalid)
        );
        for bad in ["0", "-1", "x", "1.5", "99999999999999999999"] {
            let r = claim_from(&headers(&[(OWNER_HEADER, OWNER), (GENERATION_HEADER, bad)]));
            assert_eq!(code(r), Some(ErrorCode::LeaseContextInvalid), "{bad}");
        }
        let r = claim_from(&headers(&[(GENERATION_HEADER, "1")]));
        assert_eq!(code(r), Some(ErrorCode::LeaseContextRequired));
        let r = claim_from(&headers(&[(OWNER_HEADER, OWNER), (OWNER_HEADER, OWNER)]));
        assert_eq!(code(r), Some(ErrorCode::LeaseContextInvalid));
    }
}
