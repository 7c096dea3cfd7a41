//! `Doc<T>`: an IPC argument that is a management document. It arrives as raw
//! JSON and is parsed by the REST API's own strict parser, so a bad field gets the
//! same path-addressed `validation_failed` over IPC as over REST (tauri's own
//! argument decoding would reject it with a bare string). The bindings show it as
//! `T`.

use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use specta::Type;
use specta::datatype::DataType;
use switchyard_gateway::errors::parse_document;

use crate::ipc_error::IpcResult;

/// A document argument of type `T`, not yet parsed.
pub struct Doc<T> {
    raw: serde_json::Value,
    _type: PhantomData<fn() -> T>,
}

impl<'de, T> Deserialize<'de> for Doc<T> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        Ok(Doc { raw: serde_json::Value::deserialize(de)?, _type: PhantomData })
    }
}

impl<T: Type> Type for Doc<T> {
    fn definition(types: &mut specta::Types) -> DataType {
        T::definition(types)
    }
}

impl<T: DeserializeOwned> Doc<T> {
    /// Parses the document, naming the first bad field.
    pub fn parse(self) -> IpcResult<T> {
        Ok(parse_document(&self.to_bytes())?)
    }
}

impl<T> Doc<T> {
    /// The document as JSON text, for a parser of its own (the settings patch).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.raw).unwrap_or_default()
    }
}
