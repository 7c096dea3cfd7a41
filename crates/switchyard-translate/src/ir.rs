//! The canonical model every format is read into and written from. It holds what
//! the three formats can all say; a field only one format has is either carried in
//! a form the others can hold (a thinking signature, a reasoning payload) or listed
//! in [`crate::DROPPED`].

use serde_json::Value;

/// Who speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user (and tool results, which every format sends on the user's side).
    User,
    /// The model.
    Assistant,
}

/// An image, inline or by address.
#[derive(Debug, Clone, PartialEq)]
pub enum Image {
    /// Base64 data with its media type.
    Base64 {
        /// e.g. `image/png`.
        media_type: String,
        /// The base64 text.
        data: String,
    },
    /// An `http(s)` address.
    Url(String),
}

impl Image {
    /// As a URL: a `data:` URL for inline data.
    pub fn to_url(&self) -> String {
        match self {
            Image::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
            Image::Url(u) => u.clone(),
        }
    }

    /// From a URL, turning a base64 `data:` URL back into inline data.
    pub fn from_url(url: &str) -> Image {
        if let Some(rest) = url.strip_prefix("data:")
            && let Some((meta, data)) = rest.split_once(',')
            && let Some(media_type) = meta.strip_suffix(";base64")
        {
            return Image::Base64 { media_type: media_type.to_owned(), data: data.to_owned() };
        }
        Image::Url(url.to_owned())
    }
}

/// Where a piece of reasoning came from, which decides where it may be replayed.
#[derive(Debug, Clone, PartialEq)]
pub enum Reasoning {
    /// Anthropic thinking with the signature Anthropic issued: replayable to
    /// Anthropic only.
    Anthropic {
        /// The signature.
        signature: String,
    },
    /// Anthropic redacted thinking (opaque data): Anthropic only.
    AnthropicRedacted {
        /// The opaque data.
        data: String,
    },
    /// A Responses reasoning item's encrypted content: Responses upstreams only.
    Responses {
        /// The item id, when there was one.
        id: Option<String>,
        /// `encrypted_content`.
        encrypted: Option<String>,
    },
    /// Reasoning text with nothing to verify it (Chat `reasoning_content`): shown
    /// to clients, never replayed.
    Plain,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text.
    Text(String),
    /// An image.
    Image(Image),
    /// The model calls a tool. `arguments` is JSON text.
    ToolCall {
        /// The call id, round-tripped to the result.
        id: String,
        /// The tool name.
        name: String,
        /// The arguments, as JSON text.
        arguments: String,
    },
    /// A tool's answer.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// Text and images.
        content: Vec<Part>,
        /// Whether the tool failed.
        is_error: bool,
    },
    /// The model's reasoning.
    Thinking {
        /// The readable text (may be empty).
        text: String,
        /// Its origin and proof.
        origin: Reasoning,
    },
}

/// One turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who.
    pub role: Role,
    /// What.
    pub parts: Vec<Part>,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// JSON schema of the arguments.
    pub schema: Value,
}

/// Which tool the model must use.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolChoice {
    /// Its choice.
    Auto,
    /// Some tool.
    Required,
    /// No tool.
    None,
    /// This tool.
    Named(String),
}

/// How hard the model should think.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    /// Minimal/low.
    Low,
    /// Medium.
    Medium,
    /// High (and above).
    High,
}

impl Effort {
    /// The Anthropic thinking budget for this effort.
    pub fn budget_tokens(self) -> u64 {
        match self {
            Effort::Low => 2_048,
            Effort::Medium => 8_192,
            Effort::High => 24_576,
        }
    }

    /// From a thinking budget.
    pub fn from_budget(budget: u64) -> Effort {
        match budget {
            0..=4_095 => Effort::Low,
            4_096..=16_383 => Effort::Medium,
            _ => Effort::High,
        }
    }

    /// The OpenAI name.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// From an OpenAI or Anthropic effort name.
    pub fn parse(s: &str) -> Option<Effort> {
        match s {
            "minimal" | "low" => Some(Effort::Low),
            "medium" => Some(Effort::Medium),
            "high" | "xhigh" | "max" => Some(Effort::High),
            _ => None,
        }
    }
}

/// A request in the canonical model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Request {
    /// System prompt pieces, in order.
    pub system: Vec<String>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools.
    pub tools: Vec<Tool>,
    /// Tool choice.
    pub tool_choice: Option<ToolChoice>,
    /// Whether several tool calls may come in one turn (`None`: the default).
    pub parallel_tool_calls: Option<bool>,
    /// Output token limit.
    pub max_tokens: Option<u64>,
    /// Sampling.
    pub temperature: Option<f64>,
    /// Sampling.
    pub top_p: Option<f64>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// Streamed.
    pub stream: bool,
    /// Reasoning wanted, and how much.
    pub reasoning: Option<Effort>,
    /// The Responses `prompt_cache_key` the client sent, if any.
    pub prompt_cache_key: Option<String>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// Finished its turn.
    EndTurn,
    /// Hit the token limit.
    MaxTokens,
    /// Wants tool results.
    ToolUse,
    /// Hit a stop sequence (which one, when known).
    StopSequence(Option<String>),
    /// Declined.
    Refusal,
    /// A long server-side turn paused (Anthropic), to be continued.
    PauseTurn,
    /// Filtered.
    ContentFilter,
}

/// Token counts. `input` excludes cached tokens (Anthropic's meaning); OpenAI's
/// `prompt_tokens`/`input_tokens` include them and are converted at the edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens (reasoning included).
    pub output: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// Of `output`, reasoning tokens (when reported).
    pub reasoning: u64,
}

impl Usage {
    /// All input tokens, cached or not (OpenAI's meaning).
    pub fn total_input(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }

    /// Takes every non-zero count of `other`.
    pub fn merge(&mut self, other: &Usage) {
        for (mine, theirs) in [
            (&mut self.input, other.input),
            (&mut self.output, other.output),
            (&mut self.cache_read, other.cache_read),
            (&mut self.cache_write, other.cache_write),
            (&mut self.reasoning, other.reasoning),
        ] {
            if theirs > 0 {
                *mine = theirs;
            }
        }
    }
}

/// A complete (non-streamed) answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The upstream's id.
    pub id: String,
    /// Text, tool calls and thinking, in order.
    pub content: Vec<Part>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Tokens.
    pub usage: Usage,
}

/// The kind of a streamed block.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockKind {
    /// Text.
    Text,
    /// Reasoning (its proof arrives as [`Delta::Signature`] or with the stop).
    Thinking {
        /// Its origin as far as known at the start.
        origin: Reasoning,
    },
    /// A tool call.
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
}

/// A piece of a streamed block.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// Text.
    Text(String),
    /// Reasoning text.
    Thinking(String),
    /// Tool arguments (JSON text fragment).
    Arguments(String),
}

/// The canonical stream: blocks are numbered from 0 in order and never overlap
/// (one is stopped before the next starts).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The answer starts.
    Start {
        /// Upstream id.
        id: String,
        /// Input usage known at the start.
        usage: Usage,
    },
    /// A block starts.
    BlockStart(BlockKind),
    /// A block grows.
    Delta(Delta),
    /// The current block ends; `origin` is the reasoning proof when the block was
    /// thinking and the proof came at the end.
    BlockStop {
        /// Final reasoning origin (thinking blocks only).
        origin: Option<Reasoning>,
    },
    /// The answer ends.
    Finish {
        /// Why.
        stop: StopReason,
        /// Final usage.
        usage: Usage,
    },
    /// The upstream reported an error in the stream.
    Error {
        /// Kind (`overloaded_error`, `server_error`, …).
        kind: String,
        /// Message.
        message: String,
    },
}
