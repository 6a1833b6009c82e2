//! Byte offsets (what the language's spans hold) <-> LSP positions (zero-based line and
//! column in UTF-16 code units, what editors send and expect).

use tower_lsp_server::ls_types::{Position, Range};

/// Where each line of one text starts, for converting offsets both ways. Lines end at `\n`,
/// `\r\n` or a lone `\r`, as the LSP specification says.
pub(super) struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset of the first character of each line; `starts[0] == 0`.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        for (i, byte) in bytes.iter().enumerate() {
            match byte {
                b'\n' => starts.push(i + 1),
                b'\r' if bytes.get(i + 1) != Some(&b'\n') => starts.push(i + 1),
                _ => {}
            }
        }
        Self { text, starts }
    }

    /// The position of byte `offset`. An offset inside a character counts as that character's
    /// start; an offset past the end, as the end of the text.
    pub(super) fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        // The last line starting at or before `offset`.
        let line = self.starts.partition_point(|&start| start <= offset) - 1;
        let character = self.text[self.starts[line]..offset].encode_utf16().count();
        Position::new(to_u32(line), to_u32(character))
    }

    pub(super) fn range(&self, start: usize, end: usize) -> Range {
        Range::new(self.position(start), self.position(end))
    }

    /// The byte offset of `position`. A column past the end of its line means the end of the
    /// line (before its line break); a line past the last, the end of the text; a column in the
    /// middle of a surrogate pair, the start of that character.
    pub(super) fn offset(&self, position: Position) -> usize {
        let Some(&start) = self.starts.get(position.line as usize) else {
            return self.text.len();
        };
        let mut units = 0;
        for (i, c) in self.text[start..].char_indices() {
            if c == '\n' || c == '\r' {
                return start + i;
            }
            units += c.len_utf16();
            if units > position.character as usize {
                return start + i;
            }
        }
        self.text.len()
    }

    /// The range covering the whole text.
    pub(super) fn whole(&self) -> Range {
        self.range(0, self.text.len())
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Position {
        Position::new(line, character)
    }

    #[test]
    fn ascii() {
        let text = "ab\ncd\n";
        let index = LineIndex::new(text);
        assert_eq!(index.position(0), pos(0, 0));
        assert_eq!(index.position(2), pos(0, 2));
        assert_eq!(index.position(3), pos(1, 0));
        assert_eq!(index.position(5), pos(1, 2));
        assert_eq!(index.position(6), pos(2, 0));
        assert_eq!(index.position(99), pos(2, 0));
        assert_eq!(index.whole(), Range::new(pos(0, 0), pos(2, 0)));
        for offset in 0..=text.len() {
            assert_eq!(index.offset(index.position(offset)), offset);
        }
    }

    /// `±` and `é` are two bytes and one UTF-16 unit; `𝄞` is four bytes and two units.
    #[test]
    fn non_ascii_counts_utf16_code_units() {
        let text = "every 2s±500ms é\n# 𝄞 x\n𝄞𝄞y";
        let index = LineIndex::new(text);
        let at = |needle: &str| text.find(needle).unwrap();
        assert_eq!(index.position(at("500ms")), pos(0, 9));
        assert_eq!(index.position(at("é")), pos(0, 15));
        assert_eq!(index.position(at("é") + 2), pos(0, 16));
        assert_eq!(index.position(at("𝄞")), pos(1, 2));
        assert_eq!(index.position(at(" x")), pos(1, 4));
        assert_eq!(index.position(at("𝄞y") + 4), pos(2, 4));
        assert_eq!(index.position(text.len()), pos(2, 5));
        // Inside a character: that character's start.
        assert_eq!(index.position(at("±") + 1), pos(0, 8));
        assert_eq!(index.position(at("𝄞") + 3), pos(1, 2));

        assert_eq!(index.offset(pos(0, 9)), at("500ms"));
        assert_eq!(index.offset(pos(1, 4)), at(" x"));
        assert_eq!(index.offset(pos(2, 4)), at("𝄞y") + 4);
        // Between the two units of a surrogate pair: the pair's start.
        assert_eq!(index.offset(pos(1, 3)), at("𝄞"));
        // Past the end of a line: the end of that line; past the last line: the end.
        assert_eq!(index.offset(pos(0, 99)), at("\n"));
        assert_eq!(index.offset(pos(9, 0)), text.len());
        for (offset, _) in text.char_indices() {
            assert_eq!(index.offset(index.position(offset)), offset);
        }
    }

    #[test]
    fn crlf_and_lone_cr_end_lines() {
        let text = "a\r\nb\rc";
        let index = LineIndex::new(text);
        assert_eq!(index.position(1), pos(0, 1));
        assert_eq!(index.position(3), pos(1, 0));
        assert_eq!(index.position(5), pos(2, 0));
        assert_eq!(index.offset(pos(0, 5)), 1);
        assert_eq!(index.offset(pos(1, 0)), 3);
        assert_eq!(index.offset(pos(2, 1)), 6);
    }
}
