//! Hot code on huge pages (Linux). At a few requests a second, what a request
//! costs is mostly its code running cold: every 4 KB page of code it touches is a
//! TLB miss and a page walk before the first instruction there runs. The gateway's
//! request touches ~140 such pages (docs/benchmarks.md, "twenty-second session").
//! Linux backs file-mapped code with 4 KB pages (huge pages for file text need
//! `CONFIG_READ_ONLY_THP_FOR_FS`, which common kernels lack), but it gives anonymous
//! memory transparent huge pages on request. So [`move_hot_text`] copies the chunks
//! of the executable's code where the hot code lies into anonymous memory backed by
//! one huge page each, and moves that memory over the original range in one
//! `mremap`: the same bytes at the same addresses, now one TLB entry per 2 MB.
//!
//! Which chunks: the ones holding the caller's [`Anchor`]s, the first of them a
//! function every request runs, so that a profile-guided build puts it among the
//! hot code (the linker's call-graph sort gathers the profile's hot functions at
//! the start of the text; BOLT rewrites them into a 2 MB-aligned segment of its
//! own, after a chunk that holds only the new program headers, which a guess such
//! as "the text's first chunk" would move instead). The other anchors mark hot code
//! the sort cannot move (jemalloc's C code, linked after the Rust code); they count
//! only inside the first anchor's code mapping, since code that BOLT left behind in
//! the original text is code the profile never ran. A chunk is only moved if it
//! lies wholly inside that mapping, which needs the segments aligned to the huge
//! page size at link time (`-z max-page-size=0x200000 -z separate-code`, set by the
//! gateway's build script) and a kernel that honours that alignment when it places
//! the executable (5.10+).
//!
//! What it costs: each moved chunk is 2 MB of resident anonymous memory, replacing
//! the part of those 2 MB that was resident from the file anyway (the hot part).
//! What it takes away: profilers that attach to the file (uprobes, perf's
//! symbolisation of samples) do not see the moved chunks; the gateway's
//! `--huge-text false` leaves the code where it is for them.
//!
//! Failure behaviour: every step that can fail leaves the text as it was; the
//! outcome says why nothing moved. It is meant to run once, early in `main`.

use std::fmt;

/// A function whose surroundings are hot code: its address, and a name for the
/// start-up banner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// What the code around it is, e.g. "the request path".
    pub name: &'static str,
    /// The function's address.
    pub address: usize,
}

/// One chunk moved onto a huge page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedChunk {
    /// Its start address (a multiple of the huge page size).
    pub start: usize,
    /// The anchors it holds.
    pub anchors: Vec<&'static str>,
}

/// What [`move_hot_text`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// These chunks of the code now sit on huge pages of `page_size` bytes each.
    Moved { chunks: Vec<MovedChunk>, page_size: usize },
    /// Nothing was moved, for this reason.
    Skipped(String),
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Moved { chunks, page_size } => {
                write!(f, "{} chunk(s) of hot code on {} MB pages:", chunks.len(), page_size >> 20)?;
                for (i, chunk) in chunks.iter().enumerate() {
                    let sep = if i == 0 { "" } else { "," };
                    write!(f, "{sep} {:#x} ({})", chunk.start, chunk.anchors.join(", "))?;
                }
                Ok(())
            }
            Outcome::Skipped(why) => write!(f, "hot code left on 4 KB pages: {why}"),
        }
    }
}

/// Moves the chunks of this executable's code holding `anchors` onto transparent
/// huge pages. See the module docs.
pub fn move_hot_text(anchors: &[Anchor]) -> Outcome {
    #[cfg(target_os = "linux")]
    {
        linux::move_hot_text(anchors)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = anchors;
        Outcome::Skipped("huge pages for code are a Linux feature".to_owned())
    }
}

#[cfg(target_os = "linux")]
mod linux;
