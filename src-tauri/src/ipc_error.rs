//! `IpcError`: the one error document every IPC command returns, the same fields
//! as the REST API's `{"error": {...}}` body (DESIGN §6: never `Result<T, String>`).

use serde::{Deserialize, Serialize};
use switchyard_gateway::errors::GatewayError;
use switchyard_types::ErrorCode;
use switchyard_types::api::ValidationIssue;

/// Why a command failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct IpcError {
    /// Stable machine code (the REST API's `error.code`).
    pub code: ErrorCode,
    /// Human explanation.
    pub message: String,
    /// Every bad field with its JSON pointer, for `validation_failed`.
    pub issues: Vec<ValidationIssue>,
}

impl IpcError {
    /// An error without field issues.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> IpcError {
        IpcError { code, message: message.into(), issues: Vec::new() }
    }

    /// A validation failure listing `issues` (worded as the REST API words it).
    pub fn validation(issues: Vec<ValidationIssue>) -> IpcError {
        GatewayError::validation(issues).into()
    }
}

impl From<GatewayError> for IpcError {
    fn from(e: GatewayError) -> IpcError {
        IpcError { code: e.code, message: e.message, issues: e.issues }
    }
}

impl std::fmt::Display for IpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for IpcError {}

/// What every command returns.
pub type IpcResult<T> = Result<T, IpcError>;
