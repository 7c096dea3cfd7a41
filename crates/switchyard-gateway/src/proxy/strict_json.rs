//! One validating pass over a client body, so that only well-formed JSON is ever
//! forwarded: every string (keys too) valid UTF-8 with no lone surrogate escape,
//! every number finite as a double (`1e99999` is refused), containers nested at
//! most [`MAX_DEPTH`] levels, no trailing text. The pass reads the top-level
//! `model` and `stream` on the way and allocates only for escaped strings.
//!
//! serde_json skips unknown fields without checking them this closely, which is
//! why the top-level fields are visited by hand rather than derived.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Deepest nesting of arrays and objects accepted (the top-level object is 1).
pub const MAX_DEPTH: usize = 100;

/// The top-level fields the gateway reads.
#[derive(Default)]
pub struct Probe<'a> {
    /// `model`, raw (the caller decodes it and finds its span).
    pub model: Option<&'a RawValue>,
    /// `stream`.
    pub stream: Option<bool>,
}

/// Validates `bytes` as one JSON object and reads its `model` and `stream`; the
/// error names the problem and where it is.
pub fn probe(bytes: &[u8]) -> Result<Probe<'_>, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let probe = de.deserialize_map(TopLevel).map_err(|e| explain(&e))?;
    de.end().map_err(|e| explain(&e))?;
    Ok(probe)
}

/// serde_json's message, made plain where it is cryptic: a lone surrogate such as
/// `"\ud800"` reads as "unexpected end of hex escape".
fn explain(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if text.contains("hex escape") && !text.contains("surrogate") {
        return format!("invalid \\u escape: a lone UTF-16 surrogate or a malformed escape ({text})");
    }
    text
}

/// The top-level object.
struct TopLevel;

impl<'de> Visitor<'de> for TopLevel {
    type Value = Probe<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Probe<'de>, A::Error> {
        let mut probe = Probe::default();
        let mut saw_stream = false;
        while let Some(key) = map.next_key_seed(Key)? {
            match key {
                Field::Model if probe.model.is_some() => return Err(de::Error::duplicate_field("model")),
                Field::Model => probe.model = Some(map.next_value()?),
                Field::Stream if saw_stream => return Err(de::Error::duplicate_field("stream")),
                Field::Stream => {
                    saw_stream = true;
                    probe.stream = map.next_value()?;
                }
                Field::Other => map.next_value_seed(Value { depth: 1 })?,
            }
        }
        Ok(probe)
    }
}

/// What a top-level key names.
enum Field {
    Model,
    Stream,
    Other,
}

/// A top-level key, decoded (and so validated) as a string.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Field;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Field, D::Error> {
        de.deserialize_str(self)
    }
}

impl Visitor<'_> for Key {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Field, E> {
        Ok(match key {
            "model" => Field::Model,
            "stream" => Field::Stream,
            _ => Field::Other,
        })
    }
}

/// Any JSON value at `depth` (the number of containers around it).
#[derive(Clone, Copy)]
struct Value {
    depth: usize,
}

impl Value {
    /// The value one container deeper, if the limit allows it.
    fn enter<E: de::Error>(self) -> Result<Value, E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(format_args!("nesting deeper than {MAX_DEPTH} levels")));
        }
        Ok(Value { depth: self.depth + 1 })
    }
}

impl<'de> DeserializeSeed<'de> for Value {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

/// Any string, decoded and discarded (for object keys below the top level).
struct AnyKey;

impl<'de> DeserializeSeed<'de> for AnyKey {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_str(Value { depth: 0 })
    }
}

impl<'de> Visitor<'de> for Value {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        if v.is_finite() { Ok(()) } else { Err(E::custom("number out of range")) }
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self.enter()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.enter()?;
        while map.next_key_seed(AnyKey)?.is_some() {
            map.next_value_seed(inner)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn error(body: &[u8]) -> String {
        match probe(body) {
            Ok(_) => panic!("accepted {}", String::from_utf8_lossy(body)),
            Err(e) => e,
        }
    }

    #[test]
    fn reads_model_and_stream() {
        let p = probe(br#"{"a":[1,{"b":null}],"model":"m","stream":true,"c":"\u00e9"}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.model.map(RawValue::get), Some("\"m\""));
        assert_eq!(p.stream, Some(true));
    }

    #[test]
    fn refuses_what_would_not_survive_a_strict_parser() {
        let cases: [(&[u8], &str); 9] = [
            (br#"{"model":"m","t":1e99999}"#, "number out of range"),
            (br#"{"model":"m","t":[-1e400]}"#, "number out of range"),
            (br#"{"model":"m","t":"\ud800"}"#, "surrogate"),
            (br#"{"model":"m","\udc00":1}"#, "surrogate"),
            (b"{\"model\":\"m\",\"t\":\"\xff\"}", "invalid unicode"),
            (b"{\"model\":\"m\",\"\xff\":1}", "invalid unicode"),
            (br#"{"model":"m"} x"#, "trailing characters"),
            (br#"{"model":"a","model":"b"}"#, "duplicate field `model`"),
            (br#"{"stream":true,"stream":false}"#, "duplicate field `stream`"),
        ];
        for (body, problem) in cases {
            let message = error(body);
            assert!(message.contains(problem), "{}: {message}", String::from_utf8_lossy(body));
        }
    }

    /// JSON text built from leaves a lenient parser would wave through (huge
    /// exponents, lone surrogates, bytes that are not UTF-8) among valid ones,
    /// nested in arrays and objects (awkward keys too).
    fn json_text() -> impl Strategy<Value = Vec<u8>> {
        const LEAVES: [&[u8]; 14] = [
            b"null",
            b"true",
            b"1",
            b"-0.5e3",
            b"1e99999",
            b"-1e400",
            b"\"a\"",
            b"\"\\ud800\"",
            b"\"\\udc00\\ud800\"",
            b"\"\\ud83d\\ude00\"",
            b"\"\xff\"",
            b"\"\xc3\xa9\"",
            b"\"\\n\"",
            b"\"\xed\xa0\x80\"",
        ];
        let leaf = proptest::sample::select(&LEAVES[..]).prop_map(<[u8]>::to_vec);
        leaf.prop_recursive(5, 48, 6, |inner| {
            let key = proptest::sample::select(&LEAVES[6..]).prop_map(<[u8]>::to_vec);
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(|items| {
                    let mut out = b"[".to_vec();
                    out.extend(items.join(&b","[..]));
                    out.push(b']');
                    out
                }),
                proptest::collection::vec((key, inner), 0..6).prop_map(|pairs| {
                    let pairs: Vec<Vec<u8>> =
                        pairs.into_iter().map(|(k, v)| [k, v].join(&b":"[..])).collect();
                    let mut out = b"{".to_vec();
                    out.extend(pairs.join(&b","[..]));
                    out.push(b'}');
                    out
                }),
            ]
        })
    }

    /// Any JSON value, nested a few levels, with numbers and strings of every kind.
    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value as V;
        let leaf = prop_oneof![
            Just(V::Null),
            any::<bool>().prop_map(V::Bool),
            any::<i64>().prop_map(V::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(V::from),
            any::<String>().prop_map(V::String),
        ];
        leaf.prop_recursive(6, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(V::Array),
                proptest::collection::btree_map(any::<String>(), inner, 0..8)
                    .prop_map(|m| V::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Exactly as strict as a strict parser: a body passes if and only if
        /// serde_json reads it whole into a document.
        #[test]
        fn passes_exactly_what_a_strict_parser_reads(text in json_text()) {
            let mut framed = b"{\"model\":\"m\",\"x\":".to_vec();
            framed.extend_from_slice(&text);
            framed.push(b'}');
            let strict = serde_json::from_slice::<serde_json::Value>(&framed).is_ok();
            prop_assert_eq!(probe(&framed).is_ok(), strict, "{}", String::from_utf8_lossy(&framed));
        }

        /// Never stricter than it must be: every document serde_json writes passes,
        /// with its `model` read back.
        #[test]
        fn every_well_formed_document_passes(value in json_value(), model in any::<String>()) {
            let body = serde_json::json!({"x": value, "model": model}).to_string();
            let fields = probe(body.as_bytes());
            prop_assert!(fields.is_ok(), "{body}: {fields:?}", fields = fields.as_ref().err());
            let raw = fields.ok().and_then(|f| f.model).map(|m| m.get().to_owned()).unwrap_or_default();
            prop_assert_eq!(serde_json::from_str::<String>(&raw).ok(), Some(model));
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let nested = |depth: usize| format!("{{\"x\":{}1{}}}", "[".repeat(depth - 1), "]".repeat(depth - 1));
        assert!(probe(nested(MAX_DEPTH).as_bytes()).is_ok());
        assert!(error(nested(MAX_DEPTH + 1).as_bytes()).contains("nesting deeper than 100 levels"));
        assert!(error(nested(100_000).as_bytes()).contains("nesting deeper than 100 levels"));
    }
}
