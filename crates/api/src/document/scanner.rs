//! The bytes of a document, the tokens GraphQL ignores between tokens, and positions counted
//! as async-graphql counts them.

use async_graphql::{Name, Pos, Positioned};

/// Unicode's byte order mark, which GraphQL ignores like a space.
const BOM: &[u8] = "\u{feff}".as_bytes();

pub(super) struct Scanner<'a> {
    source: &'a str,
    bytes: &'a [u8],
    /// The next byte to read.
    pub(super) at: usize,
    /// async-graphql's position calculator, caught up to `counted`.
    counted: usize,
    line: usize,
    column: usize,
}

impl<'a> Scanner<'a> {
    pub(super) fn new(source: &'a str) -> Self {
        Scanner {
            source,
            bytes: source.as_bytes(),
            at: 0,
            counted: 0,
            line: 1,
            column: 1,
        }
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    pub(super) fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.at..).unwrap_or_default()
    }

    pub(super) fn bump(&mut self) {
        self.at += 1;
    }

    pub(super) fn at_end(&self) -> bool {
        self.at >= self.bytes.len()
    }

    /// The source between two offsets this scanner stopped at (each at an ASCII byte or the
    /// end, so on a character's boundary).
    pub(super) fn text(&self, start: usize, end: usize) -> Option<&'a str> {
        self.source.get(start..end)
    }

    /// Skips spaces, commas, tabs, line ends, byte order marks and comments.
    pub(super) fn skip_ignored(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b',' | b'\t' | b'\n' | b'\r') => self.at += 1,
                Some(0xEF) if self.rest().starts_with(BOM) => self.at += BOM.len(),
                Some(b'#') => {
                    while !matches!(self.peek(), None | Some(b'\n' | b'\r')) {
                        self.at += 1;
                    }
                }
                _ => return,
            }
        }
    }

    /// The next byte's position as async-graphql reports it: a one-based line and column,
    /// a column per character, `\n` starting a line and `\r` only returning to its first
    /// column (so a lone `\r` ends no line). `None` if asked for an earlier position than
    /// the last, which the parser never does.
    pub(super) fn pos(&mut self) -> Option<Pos> {
        for c in self.source.get(self.counted..self.at)?.chars() {
            match c {
                '\r' => self.column = 1,
                '\n' => {
                    self.line += 1;
                    self.column = 1;
                }
                _ => self.column += 1,
            }
        }
        self.counted = self.at;
        Some(Pos {
            line: self.line,
            column: self.column,
        })
    }

    /// `byte` next, then what is ignored after it.
    pub(super) fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.at += 1;
            self.skip_ignored();
        }
        found
    }

    pub(super) fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    pub(super) fn at_name(&self) -> bool {
        self.peek().is_some_and(is_name_start)
    }

    /// A name's text, with nothing skipped after it.
    pub(super) fn word(&mut self) -> Option<&'a str> {
        let start = self.at;
        if !self.at_name() {
            return None;
        }
        while self.peek().is_some_and(is_name_continue) {
            self.at += 1;
        }
        self.text(start, self.at)
    }

    /// A name with its position, and what is ignored after it.
    pub(super) fn name(&mut self) -> Option<Positioned<Name>> {
        let pos = self.pos()?;
        let word = self.word()?;
        self.skip_ignored();
        Some(Positioned::new(Name::new(word), pos))
    }

    /// Whether a type condition starts here in async-graphql's grammar: `on`, at least one
    /// space, comma, tab, line end or byte order mark (no comment), then a name.
    pub(super) fn at_type_condition(&self) -> bool {
        let Some(after) = self.rest().strip_prefix(b"on") else {
            return false;
        };
        let gap = spaces(after);
        gap > 0 && after.get(gap).copied().is_some_and(is_name_start)
    }

    /// Steps over the `on` and the spaces of a type condition (see `at_type_condition`).
    pub(super) fn skip_on(&mut self) {
        self.at += 2;
        self.at += spaces(self.rest());
    }
}

/// How many bytes of spaces, commas, tabs, line ends and byte order marks `bytes` starts with.
fn spaces(bytes: &[u8]) -> usize {
    let mut n = 0;
    loop {
        match bytes.get(n) {
            Some(b' ' | b',' | b'\t' | b'\n' | b'\r') => n += 1,
            Some(0xEF) if bytes.get(n..).is_some_and(|b| b.starts_with(BOM)) => n += BOM.len(),
            _ => return n,
        }
    }
}

pub(super) fn is_name_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_'
}

fn is_name_continue(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}
