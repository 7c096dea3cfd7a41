//! One validating pass over a client body, so that only well-formed JSON is ever
//! forwarded: every string (keys too) valid UTF-8 with no lone surrogate escape,
//! every number finite as a double (`1e99999` is refused), containers nested at
//! most [`MAX_DEPTH`] levels, no trailing text. The pass reads the top-level
//! `model` and `stream` on the way and allocates only for escaped strings.
//!
//! serde_json skips unknown fields without checking them this closely, which is
//! why the top-level fields are visited by hand rather than derived. That visit
//! costs ~9 instructions a byte, most of the gateway's work on an agent's 50 KB
//! request, so a body first takes [`fast`]'s byte-level pass, which accepts only
//! what this one would (with the same fields) and hands anything else here, where
//! the verdict and the message naming the problem come from.

mod fast;

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
///
/// Kept out of line: every inference request runs it, so its address marks the
/// request path's hot code for the huge-page mover ([`super::hot_path_anchor`]);
/// inlined, the only copy at that address would be one no request runs.
#[inline(never)]
pub fn probe(bytes: &[u8]) -> Result<Probe<'_>, String> {
    match fast::probe(bytes) {
        Some(probe) => Ok(probe),
        None => checked(bytes),
    }
}

/// The serde pass: the reference for what passes, and the explanation of what
/// does not.
fn checked(bytes: &[u8]) -> Result<Probe<'_>, String> {
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
        let cases: [(&[u8], &str); 11] = [
            (b"{\"model\":\"m\",\"t\":\"a\tb\"}", "control character"),
            (br#"{"model":"m","t":1e99999}"#, "number out of range"),
            (br#"{"model":"m","t":"\udc00"}"#, "surrogate"),
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
        const LEAVES: [&[u8]; 16] = [
            b"null",
            b"true",
            b"1",
            b"-0.5e3",
            b"1e99999",
            b"-1e400",
            b"\"a\"",
            b"\"\\ud800\"",
            b"\"\\udc00\\ud800\"",
            b"\"\\udc00\"",
            b"\"tab\there\"",
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

    /// `leaf` values in arrays and objects nested a few levels.
    fn nested(leaf: BoxedStrategy<serde_json::Value>) -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value as V;
        leaf.prop_recursive(6, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(V::Array),
                proptest::collection::btree_map(any::<String>(), inner, 0..8)
                    .prop_map(|m| V::Object(m.into_iter().collect())),
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
        ]
        .boxed();
        nested(leaf)
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

    /// A document with finite doubles away from the edges of the range, as agents
    /// send them.
    fn agent_document() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value as V;
        let leaf = prop_oneof![
            Just(V::Null),
            any::<bool>().prop_map(V::Bool),
            any::<i64>().prop_map(V::from),
            any::<u64>().prop_map(V::from),
            (-1e307..1e307_f64).prop_map(V::from),
            (-1e-300..1e-300_f64).prop_map(V::from),
            any::<String>().prop_map(V::String),
        ]
        .boxed();
        nested(leaf)
    }

    /// The fields as text, to compare the two passes.
    fn fields(probe: &Probe<'_>) -> (Option<String>, Option<bool>) {
        (probe.model.map(|m| m.get().to_owned()), probe.stream)
    }

    proptest! {
        /// The fast pass accepts only what the serde pass accepts, with the same
        /// fields (it may hand back what it is unsure of).
        #[test]
        fn the_fast_pass_accepts_nothing_the_serde_pass_refuses(
            text in json_text(),
            stream in prop_oneof![Just(""), Just(",\"stream\":true"), Just(",\"stream\":null"), Just(",\"stream\":1")],
        ) {
            let mut framed = b"{\"model\":\"m\",\"x\":".to_vec();
            framed.extend_from_slice(&text);
            framed.extend_from_slice(stream.as_bytes());
            framed.push(b'}');
            if let Some(quick) = fast::probe(&framed) {
                let checked = checked(&framed);
                prop_assert!(checked.is_ok(), "{}: {:?}", String::from_utf8_lossy(&framed), checked.err());
                prop_assert_eq!(checked.ok().map(|c| fields(&c)), Some(fields(&quick)));
            }
        }

        /// ... and it is the path every well-formed document an agent sends takes
        /// (so the serde pass only runs for bodies that are refused or odd).
        #[test]
        fn every_well_formed_document_takes_the_fast_pass(
            value in agent_document(),
            model in any::<String>(),
            stream in proptest::option::of(any::<bool>()),
        ) {
            let mut doc = serde_json::json!({"x": value, "model": model});
            if let Some(stream) = stream {
                doc["stream"] = stream.into();
            }
            for body in [doc.to_string(), serde_json::to_string_pretty(&doc).unwrap_or_default()] {
                let quick = fast::probe(body.as_bytes());
                prop_assert!(quick.is_some(), "{body}");
                let checked = checked(body.as_bytes()).map(|c| fields(&c)).ok();
                prop_assert_eq!(quick.map(|q| fields(&q)), checked);
            }
        }
    }

    #[test]
    fn the_fast_pass_hands_over_what_it_is_unsure_of() {
        // Each passes the serde pass (or fails it) on its own; the fast pass declines.
        let unsure: [&[u8]; 8] = [
            br#"{"mod\u0065l":"m"}"#,
            br#"{"model":"a","model":"b"}"#,
            br#"{"model":"m","stream":1}"#,
            br#"{"model":"m","x":1e309}"#,
            br#"{"model":"m","x":17976931348623157e292}"#,
            br#"{"model":"m","x":1e-401}"#,
            br#"{"model":"m","x":"\ud800"}"#,
            b"{\"model\":\"m\",\"x\":\"\x01\"}",
        ];
        for body in unsure {
            assert!(fast::probe(body).is_none(), "{}", String::from_utf8_lossy(body));
        }
        // Declined is not refused: these are the serde pass's to accept.
        for body in [&br#"{"mod\u0065l":"m"}"#[..], br#"{"model":"m","x":1e-401}"#] {
            let p = probe(body).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(p.model.map(RawValue::get), Some("\"m\""));
        }
        let p = fast::probe(br#" {"stream" : false , "model" : ["m"], "n": -0.5e-3} "#);
        assert_eq!(p.map(|p| fields(&p)), Some((Some("[\"m\"]".to_owned()), Some(false))));
    }

    #[test]
    fn nesting_is_bounded() {
        let nested = |depth: usize| format!("{{\"x\":{}1{}}}", "[".repeat(depth - 1), "]".repeat(depth - 1));
        assert!(probe(nested(MAX_DEPTH).as_bytes()).is_ok());
        assert!(error(nested(MAX_DEPTH + 1).as_bytes()).contains("nesting deeper than 100 levels"));
        assert!(error(nested(100_000).as_bytes()).contains("nesting deeper than 100 levels"));
    }
}
