//! The Linux mechanics of [`crate::move_hot_text`]: find the text mapping in
//! `/proc/self/maps`, pick the chunks, and move each onto a huge page.

use std::ffi::c_void;
use std::ops::Range;

use rustix::mm::{self, Advice, MapFlags, MprotectFlags, MremapFlags, ProtFlags};

use crate::{Anchor, MovedChunk, Outcome};

const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const THP_SIZE: &str = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size";

pub(crate) fn move_hot_text(anchors: &[Anchor]) -> Outcome {
    let page = match huge_page_size() {
        Ok(page) => page,
        Err(why) => return Outcome::Skipped(why),
    };
    let maps = match std::fs::read_to_string("/proc/self/maps") {
        Ok(maps) => maps,
        Err(e) => return Outcome::Skipped(format!("/proc/self/maps: {e}")),
    };
    let chunks = match chunks_to_move(&maps, page, anchors) {
        Ok(chunks) => chunks,
        Err(why) => return Outcome::Skipped(why),
    };
    let mut moved = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        match move_chunk(chunk.start, page) {
            Ok(()) => moved.push(chunk),
            // What moved so far stays moved: each chunk stands on its own.
            Err(why) if moved.is_empty() => return Outcome::Skipped(why),
            Err(_) => break,
        }
    }
    Outcome::Moved { chunks: moved, page_size: page }
}

/// The transparent huge page size, if the kernel hands them out on request.
fn huge_page_size() -> Result<usize, String> {
    let enabled = std::fs::read_to_string(THP_ENABLED)
        .map_err(|e| format!("transparent huge pages unavailable ({THP_ENABLED}: {e})"))?;
    if !(enabled.contains("[always]") || enabled.contains("[madvise]")) {
        return Err(format!("transparent huge pages are off ({THP_ENABLED}: {})", enabled.trim()));
    }
    let size = std::fs::read_to_string(THP_SIZE).map_err(|e| format!("{THP_SIZE}: {e}"))?;
    let size: usize = size.trim().parse().map_err(|_| format!("{THP_SIZE}: not a size: {}", size.trim()))?;
    if !size.is_power_of_two() || size > 32 << 20 {
        return Err(format!("huge page size {size} is not one to copy code into"));
    }
    Ok(size)
}

/// The file-backed, executable mapping of `maps` (a `/proc/PID/maps` text) holding
/// `address`.
fn text_mapping(maps: &str, address: usize) -> Result<Range<usize>, String> {
    for line in maps.lines() {
        let Some((range, perms, path)) = parse_maps_line(line) else { continue };
        if !range.contains(&address) {
            continue;
        }
        if perms != "r-xp" || !path.starts_with('/') {
            return Err(format!("the code is not a private file mapping ({perms} {path})"));
        }
        return Ok(range);
    }
    Err("the code's mapping is not in /proc/self/maps".to_owned())
}

/// `start-end perms offset dev inode path` → (range, perms, path).
fn parse_maps_line(line: &str) -> Option<(Range<usize>, &str, &str)> {
    let mut fields = line.split_whitespace();
    let (start, end) = fields.next()?.split_once('-')?;
    let range = usize::from_str_radix(start, 16).ok()?..usize::from_str_radix(end, 16).ok()?;
    let perms = fields.next()?;
    let path = fields.nth(3).unwrap_or("");
    Some((range, perms, path))
}

/// The chunks to move: the `page`-aligned chunk holding each anchor, in the
/// anchors' order, each once (with every anchor it holds), when it lies wholly
/// inside the code mapping of the first anchor, the request path. An anchor in
/// another mapping is skipped: when BOLT moved the hot code into a segment of its
/// own, what it left in the original text is what the profile never ran. An
/// error, naming why, when no chunk qualifies.
fn chunks_to_move(maps: &str, page: usize, anchors: &[Anchor]) -> Result<Vec<MovedChunk>, String> {
    let Some(first) = anchors.first() else { return Err("no anchors given".to_owned()) };
    let text = text_mapping(maps, first.address).map_err(|e| format!("{}: {e}", first.name))?;
    let mut chunks: Vec<MovedChunk> = Vec::new();
    let mut why = String::new();
    for anchor in anchors {
        let start = anchor.address & !(page - 1);
        if let Some(chunk) = chunks.iter_mut().find(|c| c.start == start) {
            chunk.anchors.push(anchor.name);
        } else if !text.contains(&anchor.address) {
            // Not an error: the other segment's code is cold, or not code at all.
        } else if start < text.start || start.checked_add(page).is_none_or(|end| end > text.end) {
            why = format!(
                "{}'s chunk is not wholly inside its text segment (link with -z max-page-size=0x200000 -z \
                 separate-code)",
                anchor.name
            );
        } else {
            chunks.push(MovedChunk { start, anchors: vec![anchor.name] });
        }
    }
    if chunks.is_empty() {
        Err(if why.is_empty() { format!("{}: no chunk to move", first.name) } else { why })
    } else {
        Ok(chunks)
    }
}

/// Copies `page` bytes of code at `chunk` into a fresh huge page and moves that
/// page over `chunk`. On error the code at `chunk` is untouched.
pub(crate) fn move_chunk(chunk: usize, page: usize) -> Result<(), String> {
    let fresh = HugePage::reserve(page)?;
    fresh.fill_from(chunk)?;
    fresh.replace(chunk)
}

/// An aligned anonymous region of one huge page, unmapped on drop unless it was
/// moved into place.
struct HugePage {
    at: usize,
    len: usize,
}

impl HugePage {
    /// Maps `len` bytes aligned to `len`, asking for a huge page.
    #[allow(unsafe_code)]
    fn reserve(len: usize) -> Result<HugePage, String> {
        let span = len * 2;
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choosing
        // aliases nothing; only its unused ends are unmapped, by their exact ranges.
        let raw = unsafe {
            mm::mmap_anonymous(
                std::ptr::null_mut(),
                span,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }
        .map_err(|e| format!("mmap: {e}"))? as usize;
        let at = raw.next_multiple_of(len);
        // SAFETY: both ranges lie inside the mapping made above and outside
        // [at, at + len), which is kept.
        unsafe {
            if at > raw {
                let _ = mm::munmap(ptr(raw), at - raw);
            }
            if raw + span > at + len {
                let _ = mm::munmap(ptr(at + len), raw + span - (at + len));
            }
        }
        let region = HugePage { at, len };
        // SAFETY: advice on our own mapping; it changes how it is backed, not its
        // contents.
        unsafe { mm::madvise(ptr(at), len, Advice::LinuxHugepage) }.map_err(|e| format!("madvise: {e}"))?;
        Ok(region)
    }

    /// Copies the code at `chunk` in, makes the copy read-and-execute, and checks
    /// the kernel backed it with a huge page (else the move would cost memory and
    /// save nothing).
    #[allow(unsafe_code)]
    fn fill_from(&self, chunk: usize) -> Result<(), String> {
        // SAFETY: `chunk..chunk + len` lies wholly inside the executable's text
        // mapping (readable, never written) and the destination is our own
        // writable mapping of `len` bytes; they do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                std::ptr::with_exposed_provenance::<u8>(chunk),
                std::ptr::with_exposed_provenance_mut::<u8>(self.at),
                self.len,
            );
            mm::mprotect(ptr(self.at), self.len, MprotectFlags::READ | MprotectFlags::EXEC)
        }
        .map_err(|e| format!("mprotect: {e}"))?;
        match anon_huge_bytes(self.at) {
            Some(bytes) if bytes >= self.len => Ok(()),
            _ => Err("the kernel had no huge page free".to_owned()),
        }
    }

    /// Moves the region over `chunk`, replacing its pages in one step.
    #[allow(unsafe_code)]
    fn replace(self, chunk: usize) -> Result<(), String> {
        // SAFETY: the region holds a byte-for-byte copy of `chunk..chunk + len`
        // with the same protection, so code running there (this very function,
        // perhaps, or another thread) finds the same instructions before and after:
        // mremap swaps the page tables under the mm lock, and a thread touching the
        // range meanwhile waits for it in the page fault. The text has no
        // relocations applied after load time to lose (they are in the data
        // segments). The one window left is the kernel's: with MREMAP_FIXED it
        // unmaps the target before moving the pages, and a move that then fails
        // (out of memory for the page tables) would leave the range empty. It runs
        // once, at start, when memory is plentiful.
        let moved =
            unsafe { mm::mremap_fixed(ptr(self.at), self.len, self.len, MremapFlags::MAYMOVE, ptr(chunk)) };
        match moved {
            Ok(at) if at as usize == chunk => {
                std::mem::forget(self);
                Ok(())
            }
            Ok(_) => Err("mremap placed the page elsewhere".to_owned()),
            Err(e) => Err(format!("mremap: {e}")),
        }
    }
}

impl Drop for HugePage {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: the region is ours and nothing points into it (it was never
        // moved into place).
        let _ = unsafe { mm::munmap(ptr(self.at), self.len) };
    }
}

fn ptr(address: usize) -> *mut c_void {
    std::ptr::with_exposed_provenance_mut(address)
}

/// `AnonHugePages` of the mapping holding `address`, in bytes.
pub(crate) fn anon_huge_bytes(address: usize) -> Option<usize> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        // A mapping's header starts `start-end`; its fields start `Name:`.
        if let Some((range, _, _)) = parse_maps_line(line) {
            inside = range.contains(&address);
            continue;
        }
        if inside && let Some(kb) = line.strip_prefix("AnonHugePages:") {
            return kb.trim().trim_end_matches("kB").trim().parse::<usize>().ok().map(|kb| kb * 1024);
        }
    }
    None
}

#[cfg(test)]
mod tests;
