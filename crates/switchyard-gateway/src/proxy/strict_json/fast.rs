//! The common case of [`super::probe`] at the speed of the bytes: one forward pass
//! over a well-formed body, no serde visitor per value.
//!
//! A coding agent's request is 40–50 KB (a long system prompt, a dozen tool schemas,
//! the history of tool calls and results; CLIENTS.md), and the serde pass cost ~9.4
//! instructions per byte: ~460k per request, fifteen times everything else the
//! gateway does for it (`KIND=agent scripts/instructions.sh`). Here a string's plain
//! ASCII is skipped eight bytes at a time (one word tested at once for a quote, a
//! backslash, a control character or a non-ASCII byte), a run of non-ASCII bytes is
//! checked by the standard library's UTF-8 validation, and numbers are checked by
//! their grammar alone unless they could be out of range.
//!
//! It only ever says "well-formed, and here are the fields" or "not sure": any
//! error, and anything unusual (an escaped top-level key, a duplicate `model` or
//! `stream`, a number that might overflow, a `stream` that is not a boolean), ends
//! it with `None`, and the serde pass decides and explains. So it accepts a subset
//! of what the serde pass accepts, with the same fields: the property tests check
//! that on generated documents, and that every well-formed document takes this
//! path.

use serde_json::value::RawValue;

use super::{MAX_DEPTH, Probe};

/// Reads `bytes` as one JSON object and its top-level `model` and `stream`, or
/// `None` when the serde pass must decide.
pub(super) fn probe(bytes: &[u8]) -> Option<Probe<'_>> {
    let mut scan = Scan { bytes, at: 0 };
    scan.skip_space();
    scan.expect(b'{')?;
    let mut probe = Probe::default();
    let (mut saw_model, mut saw_stream) = (false, false);
    scan.skip_space();
    if !scan.eat(b'}') {
        loop {
            scan.expect(b'"')?;
            let (start, escaped) = scan.string()?;
            let key = &bytes[start..scan.at - 1];
            scan.skip_space();
            scan.expect(b':')?;
            scan.skip_space();
            let value_start = scan.at;
            scan.value(1)?;
            let value = &bytes[value_start..scan.at];
            match key {
                // An escape could spell either name: the serde pass decodes it.
                _ if escaped => return None,
                b"model" if saw_model => return None,
                b"model" => {
                    saw_model = true;
                    probe.model = Some(serde_json::from_slice::<&RawValue>(value).ok()?);
                }
                b"stream" if saw_stream => return None,
                b"stream" => {
                    saw_stream = true;
                    probe.stream = match value {
                        b"true" => Some(true),
                        b"false" => Some(false),
                        b"null" => None,
                        _ => return None,
                    };
                }
                _ => {}
            }
            scan.skip_space();
            if scan.eat(b'}') {
                break;
            }
            scan.expect(b',')?;
            scan.skip_space();
        }
    }
    scan.skip_space();
    (scan.at == bytes.len()).then_some(probe)
}

/// A position in the body.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.at += 1;
        }
    }

    /// Consumes `byte` if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        self.at += usize::from(next);
        next
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// Any value at `depth` (the number of containers around it).
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.at += 1;
                self.string().map(drop)
            }
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            _ => self.number(),
        }
    }

    fn word(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.skip_space();
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            self.expect(b'"')?;
            self.string()?;
            self.skip_space();
            self.expect(b':')?;
            self.skip_space();
            self.value(depth + 1)?;
            self.skip_space();
            if self.eat(b'}') {
                return Some(());
            }
            self.expect(b',')?;
            self.skip_space();
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.skip_space();
        if self.eat(b']') {
            return Some(());
        }
        loop {
            self.value(depth + 1)?;
            self.skip_space();
            if self.eat(b']') {
                return Some(());
            }
            self.expect(b',')?;
            self.skip_space();
        }
    }

    /// The rest of a string whose opening quote was consumed; leaves the position
    /// after its closing quote. Returns where its content starts and whether it
    /// held an escape.
    fn string(&mut self) -> Option<(usize, bool)> {
        let start = self.at;
        let mut escaped = false;
        loop {
            self.skip_plain_ascii();
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some((start, escaped));
                }
                b'\\' => {
                    self.at += 1;
                    escaped = true;
                    self.escape()?;
                }
                // A control character must be escaped.
                0..0x20 => return None,
                _ => self.non_ascii()?,
            }
        }
    }

    /// Skips printable ASCII other than `"` and `\\`: sixteen bytes a step (two
    /// words; most of a prompt is plain text, and the loop's own cost is per step),
    /// stopping on the first byte that is not (found from the words' masks), then a
    /// word, then byte by byte in the last few.
    fn skip_plain_ascii(&mut self) {
        let rest = self.bytes.get(self.at..).unwrap_or_default();
        let (pairs, _) = rest.as_chunks::<16>();
        for pair in pairs {
            let (low, high) = pair.split_at(8);
            let (low, high) = (special_bytes(word(low)), special_bytes(word(high)));
            if low | high != 0 {
                let first = if low != 0 { low.trailing_zeros() } else { 64 + high.trailing_zeros() };
                self.at += (first / 8) as usize;
                return;
            }
            self.at += 16;
        }
        if let Some(eight) = self.bytes.get(self.at..self.at + 8) {
            let special = special_bytes(word(eight));
            if special != 0 {
                self.at += (special.trailing_zeros() / 8) as usize;
                return;
            }
            self.at += 8;
        }
        while let Some(0x20..0x80) = self.peek().filter(|&b| b != b'"' && b != b'\\') {
            self.at += 1;
        }
    }

    /// A run of non-ASCII bytes inside a string: valid UTF-8 or the body is not. A
    /// multi-byte sequence is made of such bytes only, so the run holds whole
    /// sequences when it is valid.
    fn non_ascii(&mut self) -> Option<()> {
        let run = self.bytes[self.at..].iter().take_while(|&&b| b >= 0x80).count();
        std::str::from_utf8(&self.bytes[self.at..self.at + run]).ok()?;
        self.at += run;
        Some(())
    }

    /// One escape after its backslash.
    fn escape(&mut self) -> Option<()> {
        let letter = self.peek()?;
        self.at += 1;
        match letter {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(()),
            b'u' => match self.hex4()? {
                // A leading surrogate must be followed by a trailing one.
                0xD800..=0xDBFF => {
                    self.expect(b'\\')?;
                    self.expect(b'u')?;
                    matches!(self.hex4()?, 0xDC00..=0xDFFF).then_some(())
                }
                0xDC00..=0xDFFF => None,
                _ => Some(()),
            },
            _ => None,
        }
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = std::str::from_utf8(self.bytes.get(self.at..self.at + 4)?).ok()?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u16::from_str_radix(digits, 16).ok()
    }

    /// A number by JSON's grammar, accepted only when it is surely finite as a
    /// double: its integer digits plus its exponent at most 308 (so it is below
    /// 1e308, under the largest double, 1.797e308) and its exponent at least -400
    /// (tiny numbers read as zero). Anything nearer the edges is for the serde
    /// pass, whose own float reading decides.
    fn number(&mut self) -> Option<()> {
        self.eat(b'-');
        let integer_digits = match self.peek()? {
            b'0' => {
                self.at += 1;
                0
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        };
        if self.eat(b'.') && self.digits() == 0 {
            return None;
        }
        let mut exponent = 0_i64;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            let negative = self.eat(b'-');
            if !negative {
                self.eat(b'+');
            }
            let start = self.at;
            if self.digits() == 0 {
                return None;
            }
            // Saturates far past any limit below, however many digits it has.
            exponent = self.bytes[start..self.at]
                .iter()
                .fold(0_i64, |n, d| (n * 10 + i64::from(d - b'0')).min(1_000_000));
            if negative {
                exponent = -exponent;
            }
        }
        let magnitude = i64::try_from(integer_digits).ok()?.saturating_add(exponent);
        (magnitude <= 308 && exponent >= -400).then_some(())
    }

    /// Skips decimal digits; returns how many.
    fn digits(&mut self) -> usize {
        let start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        self.at - start
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Eight bytes as a little-endian word (`bytes` holds at least eight).
fn word(bytes: &[u8]) -> u64 {
    let mut eight = [0; 8];
    eight.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(eight)
}

/// The high bit of each byte of `word` (little-endian) that is a quote, a
/// backslash, a control character or non-ASCII, exact up to the first such byte:
/// `x - n` borrows into a byte's high bit when that byte is below `n`, and `!x`
/// keeps only bytes that had it clear. A borrow can also flag bytes above a flagged
/// one, never below it, so the lowest bit set marks the first special byte.
fn special_bytes(word: u64) -> u64 {
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH_BITS;
    let non_ascii = word & HIGH_BITS;
    let control = below(word, 0x20);
    let quote = below(word ^ (ONES * u64::from(b'"')), 1);
    let backslash = below(word ^ (ONES * u64::from(b'\\')), 1);
    non_ascii | control | quote | backslash
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::special_bytes;

    /// The byte-at-a-time definition the word test must match.
    fn plain(b: u8) -> bool {
        (0x20..0x80).contains(&b) && b != b'"' && b != b'\\'
    }

    proptest! {
        /// The first special byte of every word, exactly (none when all are plain),
        /// including the bytes next to each boundary.
        #[test]
        fn a_words_mask_finds_its_first_special_byte(
            bytes in proptest::collection::vec(
                prop_oneof![
                    Just(0_u8), Just(0x1f), Just(0x20), Just(0x21), Just(b'"'), Just(0x23),
                    Just(0x5b), Just(b'\\'), Just(0x5d), Just(0x7f), Just(0x80), Just(0xff),
                    0x20_u8..0x7f, any::<u8>(),
                ],
                8,
            )
        ) {
            let mut word = [0; 8];
            word.copy_from_slice(&bytes);
            let mask = special_bytes(u64::from_le_bytes(word));
            let first = (mask != 0).then(|| (mask.trailing_zeros() / 8) as usize);
            prop_assert_eq!(first, bytes.iter().position(|&b| !plain(b)), "{:?}", bytes);
        }
    }
}
