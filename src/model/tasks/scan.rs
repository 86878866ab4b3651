//! The structural pre-pass over tasks.md: which lines are task items, headings, code or
//! text. One reading of Markdown structure for every consumer (parse, count, headline,
//! lint), written by hand rather than with a CommonMark parser because the files it
//! reads break CommonMark on purpose: a `gh pr create --body "$(cat <<'EOF'` inside a
//! task's Do puts column-0 `## Summary` and `- [ ] CI checks pass` lines into a shell
//! string, which a Markdown parser reads as a heading and a task (DESIGN-NOTES
//! "One structural pass, written by hand").
//!
//! - A task item is a GFM task list item at any indent: `-`, `*`, `+` or `1.`/`1)`, then
//!   `[ ]`, `[x]`, `[X]`, a tab in the box, or Kiro's `[-]` (in progress: not done), then
//!   an optional `*` (Kiro's optional task). Its depth is its nesting under earlier items.
//! - Fences (``` or ~~~, at any indent) hide their lines up to their closer, as their
//!   author meant, even where a line inside is indented less than the opener. An indented
//!   fence with no closer ends with its list item (the first non-blank line indented less
//!   than the opener, as in CommonMark); one at column 0–1 with no closer runs to the end
//!   of the file (reported by `unclosed`).
//! - Inside a task's block, a line that leaves a code span open or opens a heredoc
//!   (`<<'EOF'`) starts a multi-line string running to its close; the string's lines are
//!   code. A string that never closes is not a string (nothing is hidden by it).
//! - An HTML comment (`<!--` at an indent of at most 3, as a CommonMark HTML block) hides
//!   its lines up to the line holding `-->`: `specrun new` writes an example task inside
//!   one. A comment that never closes is not a comment, so an unfinished `<!--` cannot
//!   hide the rest of the plan.
//!
//! The walk reads the text 64 bytes at a time as bitmasks (`blocks`): a line's end, its
//! first backtick and whether it holds a `<` or a `[` come from a few bit operations, so the
//! classifier looks further only at lines that may open a string or be a malformed box.

use super::blocks::Block;

/// One task item line as the scanner reads it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Item<'a> {
    pub checked: bool,
    /// Byte offset (in the whole text) of the character inside the box.
    pub mark: usize,
    /// Nesting under earlier task items: 0 at the top.
    pub depth: usize,
    /// Kiro's `[ ]*`: the plan marks the task optional.
    pub optional: bool,
    /// Text after the box.
    pub rest: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Code {
    /// A fence's opening or closing line.
    Fence,
    /// A line inside a fenced block.
    Fenced,
    /// A line of a multi-line string or heredoc in a task's text.
    String,
    /// A line of an HTML comment: not read, not reported.
    Comment,
}

/// What one line of tasks.md is.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind<'a> {
    Code(Code, &'a str),
    Heading(&'a str),
    Task(Item<'a>),
    /// Any other line; `bracket`: it holds a `[` (else it cannot be a malformed box).
    Other {
        line: &'a str,
        bracket: bool,
    },
}

/// A fence that was never closed: its 1-based opening line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unclosed(pub Option<usize>);

/// The lines of `text`: (byte offset of line start, line without `\n`/`\r\n`). As
/// `split_inclusive('\n')`, with memchr: for the look-aheads (a fence's closer, a heredoc's
/// word); the scanner's own walk is `BlockLines`.
pub(super) struct Lines<'a> {
    text: &'a str,
    start: usize,
    /// The newlines of the whole text, found by one memchr iterator as the walk reaches them.
    ends: memchr::Memchr<'a>,
}

pub(super) fn lines_with_offsets(text: &str) -> Lines<'_> {
    Lines {
        text,
        start: 0,
        ends: memchr::memchr_iter(b'\n', text.as_bytes()),
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let text = self.text;
        if self.start >= text.len() {
            return None;
        }
        let end = self.ends.next().map_or(text.len(), |n| n + 1);
        let raw = &text[self.start..end];
        let line_start = std::mem::replace(&mut self.start, end);
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        Some((line_start, line.strip_suffix('\r').unwrap_or(line)))
    }
}

pub(super) fn indent_of(line: &str) -> usize {
    line.bytes()
        .take_while(|&b| b == b' ' || b == b'\t')
        .count()
}

#[derive(Clone, Copy)]
struct Fence {
    ch: u8,
    len: usize,
    indent: usize,
    line: usize,
    /// A closer follows somewhere: the fence runs to it whatever the indentation.
    closed: bool,
}

/// A fence opener/closer: ``` or ~~~ (3 or more) after any indent; a backtick fence's
/// info string holds no backtick (CommonMark), so "```a``` b" is an inline span.
fn fence_of(line: &str) -> Option<(u8, usize, usize)> {
    let indent = indent_of(line);
    let bytes = &line.as_bytes()[indent..];
    let ch = *bytes.first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let run = bytes.iter().take_while(|&&b| b == ch).count();
    let info_ok = ch == b'~' || !bytes[run..].contains(&b'`');
    (run >= 3 && info_ok).then_some((ch, run, indent))
}

fn closes(fence: &Fence, line: &str) -> bool {
    fence_of(line).is_some_and(|(c, l, _)| {
        c == fence.ch && l >= fence.len && line.trim().bytes().all(|b| b == c)
    })
}

/// An ATX heading at column 0: 1–6 `#` then a space, a tab or the end of the line
/// (`#hashtag` and `#5` are prose, as in CommonMark).
pub(super) fn is_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&hashes) && matches!(line.as_bytes().get(hashes), None | Some(b' ' | b'\t'))
}

/// The list marker at the start of `line` (after `indent`): its length with the one
/// space or tab after it. `-`, `*`, `+`, or 1–9 digits then `.` or `)`.
fn bullet_len(b: &[u8]) -> Option<usize> {
    let marker = match b.first()? {
        b'-' | b'*' | b'+' => 1,
        b'0'..=b'9' => {
            let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
            (digits <= 9 && matches!(b.get(digits), Some(b'.' | b')'))).then_some(digits + 1)?
        }
        _ => return None,
    };
    matches!(b.get(marker), Some(b' ' | b'\t')).then_some(marker + 1)
}

/// A task item line: (indent, offset of the mark in `line`, checked, optional, rest).
pub(super) fn checkbox(line: &str) -> Option<(usize, usize, bool, bool, &str)> {
    let indent = indent_of(line);
    let b = &line.as_bytes()[indent..];
    let box_at = bullet_len(b)?;
    let bx = b.get(box_at..box_at + 3)?;
    if bx[0] != b'[' || bx[2] != b']' {
        return None;
    }
    let checked = match bx[1] {
        b' ' | b'\t' | b'-' => false,
        b'x' | b'X' => true,
        _ => return None,
    };
    let mut after = box_at + 3;
    let optional = b.get(after) == Some(&b'*');
    if optional {
        after += 1;
    }
    match b.get(after) {
        None => Some((indent, indent + box_at + 1, checked, optional, "")),
        Some(b' ' | b'\t') => Some((
            indent,
            indent + box_at + 1,
            checked,
            optional,
            &line[indent + after + 1..],
        )),
        _ => None,
    }
}

/// The length of a backtick run left open on `line` (a code span continuing on later
/// lines), if any; `first` is the line's first backtick. A run closes at the next run of
/// the same length; `\`` is escaped.
fn open_code_span(line: &str, first: usize) -> Option<usize> {
    let b = line.as_bytes();
    let mut open: Option<usize> = None;
    let mut i = first;
    loop {
        let run = b[i..].iter().take_while(|&&c| c == b'`').count();
        let escaped = i > 0 && b[i - 1] == b'\\';
        if !escaped {
            open = match open {
                Some(len) if len == run => None,
                Some(len) => Some(len),
                None => Some(run),
            };
        }
        match find(b'`', &b[i + run..]) {
            Some(next) => i += run + next,
            None => return open,
        }
    }
}

/// The byte offset just past the line holding the next unescaped run of exactly `len`
/// backticks at or after `from`.
fn span_close(text: &str, from: usize, len: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = from;
    while let Some(found) = memchr::memchr(b'`', &b[i..]) {
        let at = i + found;
        let run = b[at..].iter().take_while(|&&c| c == b'`').count();
        if run == len && (at == 0 || b[at - 1] != b'\\') {
            return Some(line_end(text, at));
        }
        i = at + run;
    }
    None
}

fn line_end(text: &str, at: usize) -> usize {
    memchr::memchr(b'\n', &text.as_bytes()[at..]).map_or(text.len(), |n| at + n + 1)
}

/// The first `needle` in `hay`. The first 64 bytes are read a word at a time (the zero-byte
/// test of `word ^ needle`, exact for the lowest byte it marks), the rest by memchr: a plan's
/// lines are short, where memchr's set-up costs more than the search.
pub(super) fn find(needle: u8, hay: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let short = hay.len().min(64);
    if short < 8 {
        return hay.iter().position(|&c| c == needle);
    }
    let mut i = 0;
    loop {
        // The last word overlaps the one before it: those bytes hold no needle.
        let at = i.min(short - 8);
        let mut word = [0u8; 8];
        word.copy_from_slice(&hay[at..at + 8]);
        let x = u64::from_le_bytes(word) ^ (ONES * u64::from(needle));
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        i += 8;
        if i >= short {
            break;
        }
    }
    if short == hay.len() {
        return None;
    }
    memchr::memchr(needle, &hay[short..]).map(|n| short + n)
}

/// The delimiter of a heredoc `line` opens (`<<EOF`, `<<-'EOF'`, `<< "END"`) and does
/// not close on the same line.
fn heredoc_word(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    let mut at = find(b'<', b)?;
    while b.get(at + 1) != Some(&b'<') {
        at += 1 + find(b'<', &b[at + 1..])?;
    }
    let rest = line[at + 2..].trim_start_matches('-').trim_start();
    let quoted = rest.starts_with(['\'', '"']);
    let body = if quoted { &rest[1..] } else { rest };
    let len = body
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    let word = &body[..len];
    let after = &body[len..];
    (len > 0 && !word.as_bytes()[0].is_ascii_digit() && !after.contains(word)).then_some(word)
}

/// The byte offset just past the line that is `word` alone, at or after `from`.
fn heredoc_close(text: &str, from: usize, word: &str) -> Option<usize> {
    lines_with_offsets(&text[from..])
        .find(|(_, l)| l.trim() == word)
        .map(|(at, _)| line_end(text, from + at))
}

/// Where a multi-line string opened on `line` (ending at byte `next`) ends: just past
/// its closing line. `None` when the line opens none, or the string never closes.
/// `tick` is the line's first backtick, `lt` whether it holds a `<`: without either it
/// opens nothing.
fn string_end(text: &str, line: &str, next: usize, tick: Option<usize>, lt: bool) -> Option<usize> {
    let span = tick.and_then(|first| open_code_span(line, first));
    let heredoc = lt
        .then(|| heredoc_word(line))
        .flatten()
        .and_then(|w| heredoc_close(text, next, w));
    match (heredoc, span) {
        (Some(end), Some(len)) => Some(span_close(text, end, len).unwrap_or(end)),
        (Some(end), None) => Some(end),
        (None, Some(len)) => span_close(text, next, len),
        (None, None) => None,
    }
}

/// One line as the walk reads it, with what its block masks say about it.
#[derive(Clone, Copy)]
struct Line<'a> {
    /// Byte offset of the line's start in the whole text.
    offset: usize,
    /// The line without its `\n` or `\r\n`.
    text: &'a str,
    /// The line's first backtick.
    tick: Option<usize>,
    /// Whether it holds a `<`.
    lt: bool,
    /// Whether it holds a `[`.
    bracket: bool,
}

/// The line walk: each line's end and its backtick, `<` and `[` from two 64-byte blocks
/// of masks (`lo` at `base`, `hi` after it), so a short line costs a few bit operations.
struct BlockLines<'a> {
    text: &'a str,
    start: usize,
    base: usize,
    lo: Block,
    hi: Block,
}

impl<'a> BlockLines<'a> {
    fn new(text: &'a str) -> BlockLines<'a> {
        let b = text.as_bytes();
        BlockLines {
            text,
            start: 0,
            base: 0,
            lo: Block::at(b, 0),
            hi: Block::at(b, 64),
        }
    }

    /// The masks of the 64 bytes from `at`, which lies in `lo`.
    #[inline(always)]
    fn window(&self, at: usize) -> Block {
        let shift = at - self.base;
        let join = |lo: u64, hi: u64| ((u128::from(hi) << 64 | u128::from(lo)) >> shift) as u64;
        Block {
            newline: join(self.lo.newline, self.hi.newline),
            tick: join(self.lo.tick, self.hi.tick),
            lt: join(self.lo.lt, self.hi.lt),
            bracket: join(self.lo.bracket, self.hi.bracket),
        }
    }

    /// Moves the blocks on so that byte `at` lies in `lo`.
    #[inline(always)]
    fn reach(&mut self, at: usize) {
        if at < self.base + 64 {
            return;
        }
        let b = self.text.as_bytes();
        if at < self.base + 128 {
            self.lo = self.hi;
            self.base += 64;
        } else {
            self.base = at & !63;
            self.lo = Block::at(b, self.base);
        }
        self.hi = Block::at(b, self.base + 64);
    }

    #[inline(always)]
    fn next_line(&mut self) -> Option<Line<'a>> {
        let (text, start) = (self.text, self.start);
        if start >= text.len() {
            return None;
        }
        self.reach(start);
        let w = self.window(start);
        let left = text.len() - start;
        let (len, tick, lt, bracket) = if w.newline != 0 {
            // The bits below the line's newline.
            let len = w.newline.trailing_zeros() as usize;
            let inside = (w.newline & w.newline.wrapping_neg()) - 1;
            (
                len,
                w.tick & inside,
                w.lt & inside != 0,
                w.bracket & inside != 0,
            )
        } else if left <= 64 {
            (left, w.tick, w.lt != 0, w.bracket != 0)
        } else {
            return Some(self.long_line());
        };
        self.start = start + len + 1;
        let tick = (tick != 0).then(|| tick.trailing_zeros() as usize);
        let line = &text[start..start + len];
        let line = line.strip_suffix('\r').unwrap_or(line);
        Some(Line {
            offset: start,
            text: line,
            tick,
            lt,
            bracket,
        })
    }

    /// A line of 64 bytes or more: searched byte by byte.
    #[inline(never)]
    fn long_line(&mut self) -> Line<'a> {
        let (text, start) = (self.text, self.start);
        let b = text.as_bytes();
        let end = memchr::memchr(b'\n', &b[start..]).map_or(text.len(), |n| start + n);
        self.start = end + 1;
        let raw = &b[start..end];
        let line = &text[start..end];
        Line {
            offset: start,
            text: line.strip_suffix('\r').unwrap_or(line),
            tick: memchr::memchr(b'`', raw),
            lt: memchr::memchr(b'<', raw).is_some(),
            bracket: memchr::memchr(b'[', raw).is_some(),
        }
    }
}

/// The line classifier; an iterator so `count` allocates nothing per line.
pub(super) struct Scanner<'a> {
    text: &'a str,
    lines: BlockLines<'a>,
    /// The 1-based number of the last line read.
    number: usize,
    bom: bool,
    fence: Option<Fence>,
    /// Byte offset the current multi-line string ends at (lines before it are code).
    string_until: usize,
    /// Byte offset the current HTML comment ends at (lines before it are comment).
    comment_until: usize,
    /// A `-->` search from here found none: none follows any later opener either.
    no_comment_close: Option<usize>,
    /// Indents of the task items the current line may nest under.
    stack: Vec<usize>,
    in_task: bool,
    /// Per fence character, the shortest run no closer was found for past `.1`: a later
    /// opener at least that long has none either (keeps the look-ahead linear).
    no_closer: [Option<(usize, usize)>; 2],
    pub unclosed: Unclosed,
}

pub(super) fn scan(text: &str) -> Scanner<'_> {
    Scanner {
        text,
        lines: BlockLines::new(text),
        number: 0,
        bom: text.starts_with('\u{feff}'),
        fence: None,
        string_until: 0,
        comment_until: 0,
        no_comment_close: None,
        stack: Vec::new(),
        in_task: false,
        no_closer: [None, None],
        unclosed: Unclosed::default(),
    }
}

impl<'a> Scanner<'a> {
    /// Whether a closer for a fence of `len` `ch`s follows byte `from`.
    fn has_closer(&mut self, ch: u8, len: usize, from: usize) -> bool {
        let slot = usize::from(ch == b'~');
        if self.no_closer[slot].is_some_and(|(l, at)| len >= l && from >= at) {
            return false;
        }
        let probe = Fence {
            ch,
            len,
            indent: 0,
            line: 0,
            closed: false,
        };
        let found = lines_with_offsets(&self.text[from..]).any(|(_, l)| closes(&probe, l));
        if !found {
            self.no_closer[slot] = Some((len, from));
        }
        found
    }

    /// Where the HTML comment opened on this line ends: just past the line holding its
    /// `-->`; None when `line` opens none or it never closes.
    fn comment_end(&mut self, offset: usize, indent: usize, line: &str) -> Option<usize> {
        if indent > 3 || !line[indent..].starts_with("<!--") {
            return None;
        }
        let from = offset + indent + 4;
        if self.no_comment_close.is_some_and(|at| from >= at) {
            return None;
        }
        let bytes = self.text.as_bytes();
        let Some(at) = memchr::memmem::find(&bytes[from..], b"-->") else {
            self.no_comment_close = Some(from);
            return None;
        };
        let close = from + at + 3;
        Some(memchr::memchr(b'\n', &bytes[close..]).map_or(bytes.len(), |n| close + n + 1))
    }

    #[inline(always)]
    fn classify(&mut self, number: usize, at: Line<'a>) -> Kind<'a> {
        let (offset, line) = (at.offset, at.text);
        if offset < self.string_until {
            return Kind::Code(Code::String, line);
        }
        if offset < self.comment_until {
            return Kind::Code(Code::Comment, line);
        }
        let indent = indent_of(line);
        let blank = indent == line.len();
        // Just past this line (its `\r\n` or `\n` included): where look-aheads start.
        let text = self.text;
        let next = || {
            let b = text.as_bytes();
            let mut end = offset + line.len();
            end += usize::from(b.get(end) == Some(&b'\r'));
            end + usize::from(b.get(end) == Some(&b'\n'))
        };
        if let Some(f) = self.fence {
            let dedent = !f.closed && f.indent >= 2 && !blank && indent < f.indent;
            if !dedent {
                if closes(&f, line) {
                    self.fence = None;
                    return Kind::Code(Code::Fence, line);
                }
                // A heredoc in the block may dedent to column 0 without ending the block.
                if let Some(end) = at
                    .lt
                    .then(|| heredoc_word(line))
                    .flatten()
                    .and_then(|w| heredoc_close(self.text, next(), w))
                {
                    self.string_until = end;
                }
                return Kind::Code(Code::Fenced, line);
            }
            // A list item's fence ends with its item (CommonMark): read the line anew.
            self.fence = None;
        }
        match line.as_bytes().get(indent) {
            // One byte decides whether an HTML comment can open here: most lines are not one.
            Some(b'<') => {
                if let Some(end) = self.comment_end(offset, indent, line) {
                    self.comment_until = end;
                    return Kind::Code(Code::Comment, line);
                }
            }
            Some(b'`' | b'~') => {
                if let Some((ch, len, indent)) = fence_of(line) {
                    let closed = self.has_closer(ch, len, next());
                    self.fence = Some(Fence {
                        ch,
                        len,
                        indent,
                        line: number,
                        closed,
                    });
                    return Kind::Code(Code::Fence, line);
                }
            }
            Some(b'#') if indent == 0 && is_heading(line) => {
                self.stack.clear();
                self.in_task = false;
                return Kind::Heading(line);
            }
            // A bullet's box is 2 bytes on (`- [`): most field lines (`- **Verify**`) stop here.
            Some(b'-' | b'*' | b'+') if line.as_bytes().get(indent + 2) != Some(&b'[') => {}
            Some(b'-' | b'*' | b'+' | b'0'..=b'9') => {
                if let Some((indent, mark, checked, optional, rest)) = checkbox(line) {
                    return Kind::Task(self.item(indent, offset + mark, checked, optional, rest));
                }
            }
            _ => {}
        }
        if !blank {
            while self.stack.last().is_some_and(|&i| i >= indent) {
                self.stack.pop();
            }
            if self.in_task && (at.tick.is_some() || at.lt) {
                if let Some(end) = string_end(self.text, line, next(), at.tick, at.lt) {
                    self.string_until = end;
                }
            }
        }
        Kind::Other {
            line,
            bracket: at.bracket,
        }
    }

    /// A task item at `indent`: nested under the items before it that are less indented.
    fn item(
        &mut self,
        indent: usize,
        mark: usize,
        checked: bool,
        optional: bool,
        rest: &'a str,
    ) -> Item<'a> {
        while self.stack.last().is_some_and(|&i| i >= indent) {
            self.stack.pop();
        }
        let depth = self.stack.len();
        self.stack.push(indent);
        self.in_task = true;
        Item {
            checked,
            mark,
            depth,
            optional,
            rest,
        }
    }
}

impl<'a> Scanner<'a> {
    /// The next line and its kind; `next` and `fold` both run on it, so `count`'s loop
    /// holds the whole walk in one function.
    #[inline(always)]
    fn step(&mut self) -> Option<(usize, Kind<'a>)> {
        let Some(mut line) = self.lines.next_line() else {
            if let Some(f) = self.fence.take() {
                self.unclosed = Unclosed(Some(f.line));
            }
            return None;
        };
        self.number += 1;
        if self.number == 1 && self.bom {
            line.text = &line.text[3..];
            line.offset += 3;
            line.tick = line.tick.map(|t| t - 3);
        }
        Some((self.number, self.classify(self.number, line)))
    }
}

impl<'a> Iterator for Scanner<'a> {
    /// (1-based line number, kind).
    type Item = (usize, Kind<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        self.step()
    }

    fn fold<B, F>(mut self, init: B, mut f: F) -> B
    where
        F: FnMut(B, Self::Item) -> B,
    {
        let mut acc = init;
        while let Some(item) = self.step() {
            acc = f(acc, item);
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_walk_reads_every_line_as_a_byte_search_does() {
        // Lines of every length from 0 to 200 (across one, two and three blocks), with the
        // four bytes the masks hold at random places, `\r\n` endings and no final newline.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut rand = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n) as usize
        };
        for round in 0..300 {
            let mut text = String::new();
            for _ in 0..rand(12) {
                let len = rand(if round % 3 == 0 { 200 } else { 70 });
                for _ in 0..len {
                    text.push(['a', '`', '<', '[', ' ', 'é', '\r'][rand(7)]);
                }
                text.push_str(["\n", "\r\n"][rand(2)]);
            }
            if round % 2 == 0 {
                text.push_str("tail`[<");
            }
            let mut walk = BlockLines::new(&text);
            for (offset, line) in lines_with_offsets(&text) {
                let got = walk.next_line().expect("a line");
                assert_eq!((got.offset, got.text), (offset, line), "{text:?}");
                let raw = &text.as_bytes()[offset..offset + line.len()];
                assert_eq!(got.tick, raw.iter().position(|&b| b == b'`'), "{line:?}");
                assert_eq!(got.lt, raw.contains(&b'<'), "{line:?}");
                assert_eq!(got.bracket, raw.contains(&b'['), "{line:?}");
            }
            assert!(walk.next_line().is_none());
        }
    }

    #[test]
    fn find_agrees_with_memchr_at_every_length_and_place() {
        for len in 0..150 {
            for at in 0..=len {
                let mut hay = vec![b'a'; len];
                if at < len {
                    hay[at] = b'\n';
                    // A byte just above the needle and one equal to needle + 0x80 must not
                    // be taken for it.
                    if at + 1 < len {
                        hay[at + 1] = b'\x0b';
                    }
                }
                assert_eq!(find(b'\n', &hay), memchr::memchr(b'\n', &hay), "{len} {at}");
                assert_eq!(find(b'\x8a', &hay), None);
            }
        }
        let text = "a\r\nbb\n\nccc";
        let lines: Vec<_> = lines_with_offsets(text).collect();
        assert_eq!(lines, [(0, "a"), (3, "bb"), (6, ""), (7, "ccc")]);
    }
}
