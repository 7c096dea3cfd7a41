use std::io::Write;
use std::os::fd::AsFd;

use super::*;

const MB2: usize = 2 << 20;

/// A process's maps as BOLT leaves the gateway: the original text (cold code,
/// jemalloc's rarely used parts), then a new segment starting with a 2 MB chunk
/// that holds only program headers, then the hot code; and a heap.
const MAPS: &str = "\
55d1c0000000-55d1c0400000 r--p 00000000 fe:00 42    /usr/bin/switchyard
55d1c0400000-55d1c1053000 r-xp 00400000 fe:00 42    /usr/bin/switchyard
55d1c1600000-55d1c1d76000 r-xp 01600000 fe:00 42    /usr/bin/switchyard
55d1c2000000-55d1c2100000 rw-p 00000000 00:00 0    [heap]
";

fn anchor(name: &'static str, address: usize) -> Anchor {
    Anchor { name, address }
}

fn starts(chunks: &Result<Vec<MovedChunk>, String>) -> Vec<usize> {
    chunks.as_ref().map(|c| c.iter().map(|c| c.start).collect()).unwrap_or_default()
}

#[test]
fn moves_the_chunk_holding_each_anchor_once_not_the_segments_first() {
    // BOLT's layout: the request path in the new segment's second chunk. That one
    // moves, once, not the headers' chunk before it; an anchor in the original
    // text (cold after BOLT moved the hot code out) stays.
    let chunks = chunks_to_move(
        MAPS,
        MB2,
        &[
            anchor("the request path", 0x55d1_c18a_1230),
            anchor("malloc", 0x55d1_c190_0000),
            anchor("jemalloc", 0x55d1_c0c0_0010),
        ],
    );
    assert_eq!(starts(&chunks), [0x55d1_c180_0000]);
    assert_eq!(chunks.as_ref().map(|c| c[0].anchors.clone()).ok(), Some(vec!["the request path", "malloc"]));
    // One text segment (no BOLT): the anchors' chunks in order.
    let chunks = chunks_to_move(
        MAPS,
        MB2,
        &[anchor("the request path", 0x55d1_c040_0010), anchor("jemalloc", 0x55d1_c0c0_0000)],
    );
    assert_eq!(starts(&chunks), [0x55d1_c040_0000, 0x55d1_c0c0_0000]);
}

#[test]
fn skips_anchors_whose_chunk_is_not_wholly_inside_the_code() {
    // In the new segment's partial tail: skipped, the others still move.
    let chunks =
        chunks_to_move(MAPS, MB2, &[anchor("hot", 0x55d1_c180_0040), anchor("end", 0x55d1_c1d0_0000)]);
    assert_eq!(starts(&chunks), [0x55d1_c180_0000]);
    // Nothing movable: the reason names the anchor.
    let why = chunks_to_move(MAPS, MB2, &[anchor("tail", 0x55d1_c104_0000)]).err().unwrap_or_default();
    assert!(why.contains("tail's chunk is not wholly inside its text segment"), "{why}");
    let why = chunks_to_move(MAPS, MB2, &[anchor("data", 0x55d1_c200_0100)]).err().unwrap_or_default();
    assert!(why.contains("data: the code is not a private file mapping (rw-p [heap])"), "{why}");
    let why = chunks_to_move(MAPS, MB2, &[anchor("gone", 0x1000)]).err().unwrap_or_default();
    assert!(why.contains("gone: the code's mapping is not in /proc/self/maps"), "{why}");
    assert!(chunks_to_move(MAPS, MB2, &[]).is_err());
}

#[test]
fn reads_mappings_with_and_without_a_path() {
    let line = "55cb81400000-55cb82000000 r-xp 00200000 08:01 1234   /usr/bin/switchyard";
    assert_eq!(
        parse_maps_line(line),
        Some((0x55cb_8140_0000..0x55cb_8200_0000, "r-xp", "/usr/bin/switchyard"))
    );
    let anon = "7f0000000000-7f0000200000 r-xp 00000000 00:00 0 ";
    assert_eq!(parse_maps_line(anon), Some((0x7f00_0000_0000..0x7f00_0020_0000, "r-xp", "")));
    assert_eq!(parse_maps_line("AnonHugePages:      2048 kB"), None);
}

/// A file mapped read-and-execute at a huge-page boundary, like an executable's
/// text, holding a function that returns 42 and a pattern after it.
struct FakeText {
    reserved: Range<usize>,
    chunk: usize,
    page: usize,
    _file: std::fs::File,
}

const RETURN_42: [u8; 6] = [0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3]; // mov eax, 42; ret

fn content(page: usize) -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..page).map(|i| (i % 251) as u8).collect();
    bytes[..RETURN_42.len()].copy_from_slice(&RETURN_42);
    bytes
}

impl FakeText {
    #[allow(unsafe_code)]
    fn map(page: usize) -> FakeText {
        let path = std::env::temp_dir().join(format!("huge-text-{}-{page}", std::process::id()));
        let mut file = std::fs::File::create(&path).unwrap_or_else(|e| panic!("{e}"));
        file.write_all(&content(page)).unwrap_or_else(|e| panic!("{e}"));
        drop(file);
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let _ = std::fs::remove_file(&path);
        // SAFETY: a fresh reservation; the file is mapped over part of it (MAP_FIXED
        // inside our own mapping), and the whole is unmapped on drop.
        unsafe {
            let raw =
                mm::mmap_anonymous(std::ptr::null_mut(), 2 * page, ProtFlags::empty(), MapFlags::PRIVATE)
                    .unwrap_or_else(|e| panic!("{e}")) as usize;
            let chunk = raw.next_multiple_of(page);
            mm::mmap(
                ptr(chunk),
                page,
                ProtFlags::READ | ProtFlags::EXEC,
                MapFlags::PRIVATE | MapFlags::FIXED,
                file.as_fd(),
                0,
            )
            .unwrap_or_else(|e| panic!("{e}"));
            FakeText { reserved: raw..raw + 2 * page, chunk, page, _file: file }
        }
    }

    #[allow(unsafe_code)]
    fn call(&self) -> i32 {
        // SAFETY: the chunk starts with `mov eax, 42; ret`, mapped executable.
        let f: extern "C" fn() -> i32 = unsafe { std::mem::transmute(ptr(self.chunk)) };
        f()
    }

    #[allow(unsafe_code)]
    fn bytes(&self) -> Vec<u8> {
        // SAFETY: the chunk is mapped readable for `page` bytes while `self` lives.
        unsafe { std::slice::from_raw_parts(std::ptr::with_exposed_provenance::<u8>(self.chunk), self.page) }
            .to_vec()
    }

    fn mapping(&self) -> (String, String) {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        maps.lines()
            .filter_map(parse_maps_line)
            .find(|(range, _, _)| range.contains(&self.chunk))
            .map(|(_, perms, path)| (perms.to_owned(), path.to_owned()))
            .unwrap_or_default()
    }
}

impl Drop for FakeText {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: the reservation is ours; nothing refers into it after the test.
        let _ = unsafe { mm::munmap(ptr(self.reserved.start), self.reserved.len()) };
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn a_chunk_of_code_moves_onto_a_huge_page_and_still_runs() {
    let Ok(page) = huge_page_size() else {
        // No transparent huge pages on this kernel: the whole feature says so.
        let outcome = crate::move_hot_text(&[]);
        assert!(
            matches!(&outcome, Outcome::Skipped(why) if why.contains("transparent huge pages")),
            "{outcome}"
        );
        return;
    };
    let text = FakeText::map(page);
    assert_eq!(text.call(), 42);
    let (perms, path) = text.mapping();
    assert_eq!(perms, "r-xp");
    assert!(path.starts_with('/'), "file-backed before: {path}");
    assert_eq!(anon_huge_bytes(text.chunk), Some(0));

    move_chunk(text.chunk, page).unwrap_or_else(|e| panic!("{e}"));

    assert_eq!(text.call(), 42, "the code runs from its new page");
    assert!(text.bytes() == content(page), "the same bytes at the same addresses");
    let (perms, path) = text.mapping();
    assert_eq!((perms.as_str(), path.as_str()), ("r-xp", ""), "anonymous, still read-and-execute");
    assert_eq!(anon_huge_bytes(text.chunk), Some(page), "one huge page");
}

#[test]
fn the_text_mapping_is_the_file_mapping_holding_the_code() {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_else(|e| panic!("{e}"));
    let here = the_text_mapping_is_the_file_mapping_holding_the_code as fn() as usize;
    let text = text_mapping(&maps, here).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.contains(&here));
    // Heap memory is not code: refused with the mapping named.
    let heap = Box::new(7u64);
    let why = text_mapping(&maps, &raw const *heap as usize).err().unwrap_or_default();
    assert!(why.contains("not a private file mapping (rw-p"), "{why}");
}
