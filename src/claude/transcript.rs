//! Token usage from a Claude Code transcript (`transcript_path`, one JSON object per line),
//! read incrementally: only the bytes after the stored offset, in bounded chunks, so a stop
//! costs O(new bytes) however long the session has run.
//!
//! Counted: lines of `"type":"assistant"`, `message.usage.input_tokens` / `output_tokens` /
//! `cache_read_input_tokens` / `cache_creation_input_tokens`, with `message.model`.
//! Every content block of one API message is its own line and repeats the message's usage,
//! so each `message.id` is counted once (the largest figure seen for it in this read).
//! For the cost ledger each message also reports its `Agent` delegations and the task ids
//! its Bash calls start (`specrun task start <id>`). A usage field that is negative or not
//! a number counts 0 and is reported (`invalid_usage`); the rest of the message counts.
//! Tolerated without error: a missing file, a partial last line (left for the next read),
//! non-UTF-8 bytes and lines that are not JSON (skipped), a file shorter than the offset
//! (rotated or rewritten: read again from 0).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::model::state::ledger::{MessageUsage, Tokens};

/// Bytes read per `read` call; memory stays bounded by this plus the longest line.
const CHUNK: usize = 64 * 1024;
/// The most one read consumes: past it, only the last `MAX_SPAN` bytes are read and the
/// usage before them is not counted (`skipped` says how many bytes).
pub(crate) const MAX_SPAN: u64 = 64 << 20;
/// A longer line is dropped unread (no Claude Code usage line comes near it).
pub(crate) const MAX_LINE: usize = 8 << 20;

/// What one incremental read found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TailRead {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Where the next read starts: just past the last complete line. `None` when the file
    /// could not be opened (the stored offset is then kept as it was).
    pub next_offset: Option<u64>,
    /// The id of the last assistant message counted, so a message whose lines straddle two
    /// reads is not counted twice.
    pub last_message_id: Option<String>,
    /// The file was shorter than the offset and was read from 0.
    pub restarted: bool,
    /// Assistant messages counted.
    pub messages: u64,
    /// Each message counted, in file order (for the cost ledger).
    pub per_message: Vec<MessageUsage>,
    /// Usage fields that were negative or not numbers (counted as 0).
    pub invalid_usage: u64,
    /// Bytes past the offset left unread because they exceeded `MAX_SPAN`.
    pub skipped: u64,
}

#[derive(Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Message {
    id: Option<String>,
    model: Option<String>,
    usage: Option<Usage>,
    content: Option<Vec<Block>>,
}

/// The same line without its content: what is still counted when the content has a shape
/// this reader does not expect.
#[derive(Deserialize)]
struct BareLine {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<BareMessage>,
}

#[derive(Deserialize)]
struct BareMessage {
    id: Option<String>,
    model: Option<String>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<Value>,
    output_tokens: Option<Value>,
    cache_read_input_tokens: Option<Value>,
    cache_creation_input_tokens: Option<Value>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: Option<String>,
    name: Option<String>,
    input: Option<ToolInput>,
}

#[derive(Deserialize)]
struct ToolInput {
    subagent_type: Option<String>,
    prompt: Option<String>,
    command: Option<String>,
}

impl Usage {
    /// The four counts, and how many fields were unusable (negative, fractional, text).
    fn tokens(&self) -> (Tokens, u64) {
        let mut bad = 0;
        let mut get = |v: &Option<Value>| match v {
            None | Some(Value::Null) => 0,
            Some(v) => v.as_u64().unwrap_or_else(|| {
                bad += 1;
                0
            }),
        };
        let t = Tokens {
            input: get(&self.input_tokens),
            output: get(&self.output_tokens),
            cache_read: get(&self.cache_read_input_tokens),
            cache_creation: get(&self.cache_creation_input_tokens),
        };
        (t, bad)
    }
}

/// The task ids a shell command starts: the first word that is not an option after each
/// `task start` (`specrun task start 1.2 --spec demo`, `… task start --spec demo 1.2`).
pub(crate) fn task_start_ids(command: &str) -> Vec<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let mut out = Vec::new();
    for i in 0..words.len().saturating_sub(2) {
        if words[i] != "task" || words[i + 1] != "start" {
            continue;
        }
        let mut j = i + 2;
        while j < words.len() {
            let w = words[j].trim_matches(|c| c == '"' || c == '\'');
            if matches!(w, "&&" | "||" | ";" | "|") {
                break;
            }
            if w.starts_with('-') {
                // `--spec X` and `--cwd X` take a value; `--spec=X` and `--json` do not.
                j += if matches!(w, "--spec" | "--cwd") {
                    2
                } else {
                    1
                };
                continue;
            }
            let id = w.trim_end_matches([';', '&', '|']);
            if !id.is_empty() {
                out.push(id.to_string());
            }
            break;
        }
    }
    out
}

/// Read the usage added to `path` since `offset`.
///
/// `offset: None` means this execution has not read the transcript yet: its history is
/// not this execution's, so the read starts (and counts nothing) at the current end.
/// `last_message_id` is the value a previous read returned.
pub(crate) fn read_usage(
    path: &Path,
    offset: Option<u64>,
    last_message_id: Option<&str>,
) -> TailRead {
    // The store's open: never blocking, a regular file only (a FIFO or a device here is
    // unreadable and the stored offset is kept).
    let mut file = match crate::io::store::open_foreign(path) {
        Ok(Some(file)) => file,
        // Claude Code creates the file late (not yet there at the first Stop of a short
        // session): all it will hold is this execution's, so start at 0.
        found => {
            let not_yet = matches!(found, Ok(None)) && offset.is_none();
            return TailRead {
                next_offset: not_yet.then_some(0),
                last_message_id: last_message_id.map(str::to_string),
                ..TailRead::default()
            };
        }
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let Some(offset) = offset else {
        return TailRead {
            next_offset: Some(len),
            last_message_id: last_message_id.map(str::to_string),
            ..TailRead::default()
        };
    };
    let (start, restarted) = if len < offset {
        (0, true)
    } else {
        (offset, false)
    };
    // Past the bound, read only the last MAX_SPAN bytes; the line cut there is dropped.
    let skipped = (len - start).saturating_sub(MAX_SPAN);
    let mut counter = Counter::new(if restarted { None } else { last_message_id });
    let mut consumed = start + skipped;
    if file.seek(SeekFrom::Start(consumed)).is_ok() {
        let mut lines = Lines {
            carry: Vec::new(),
            pending: 0,
            dropping: skipped > 0,
        };
        let mut chunk = vec![0u8; CHUNK];
        let mut budget = MAX_SPAN;
        while budget > 0 {
            let want = CHUNK.min(usize::try_from(budget).unwrap_or(CHUNK));
            let n = match file.read(&mut chunk[..want]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            budget -= n as u64;
            consumed += lines.feed(&chunk[..n], &mut counter);
        }
    }
    let mut read = counter.finish(consumed, restarted);
    read.skipped = skipped;
    read
}

/// Splits bytes into lines across chunks, holding at most `MAX_LINE` of a partial line.
struct Lines {
    carry: Vec<u8>,
    /// Bytes fed since the last newline (held in `carry` or dropped).
    pending: u64,
    /// Inside a line that is being dropped (too long, or cut by the span bound).
    dropping: bool,
}

impl Lines {
    /// Feed one chunk; returns the bytes consumed (up to and including the last newline).
    fn feed(&mut self, bytes: &[u8], counter: &mut Counter) -> u64 {
        let Some(last_nl) = bytes.iter().rposition(|&b| b == b'\n') else {
            self.pending += bytes.len() as u64;
            if !self.dropping {
                self.carry.extend_from_slice(bytes);
                if self.carry.len() > MAX_LINE {
                    self.carry = Vec::new();
                    self.dropping = true;
                }
            }
            return 0;
        };
        let held = std::mem::replace(&mut self.pending, (bytes.len() - last_nl - 1) as u64);
        let mut complete = std::mem::take(&mut self.carry);
        complete.extend_from_slice(&bytes[..last_nl]);
        let mut parts = complete.split(|&b| b == b'\n');
        if std::mem::take(&mut self.dropping) {
            parts.next();
        }
        for line in parts {
            counter.line(line);
        }
        self.carry.extend_from_slice(&bytes[last_nl + 1..]);
        held + last_nl as u64 + 1
    }
}

/// Sums usage per message id; lines of one message are adjacent in the file.
struct Counter {
    input: u64,
    output: u64,
    messages: u64,
    invalid: u64,
    done: Vec<MessageUsage>,
    /// The message being summed: its id and the largest usage seen on its lines.
    current: Option<(String, MessageUsage)>,
    /// Counted by an earlier read: its remaining lines are skipped.
    previous: Option<String>,
}

/// What one assistant line holds.
struct Parsed {
    id: String,
    model: Option<String>,
    usage: Usage,
    blocks: Vec<Block>,
}

fn parse_line(bytes: &[u8]) -> Option<Parsed> {
    let assistant = |kind: &Option<String>| kind.as_deref() == Some("assistant");
    if let Ok(line) = serde_json::from_slice::<Line>(bytes) {
        let message = line.message.filter(|_| assistant(&line.kind))?;
        return Some(Parsed {
            id: message.id.unwrap_or_default(),
            model: message.model,
            usage: message.usage?,
            blocks: message.content.unwrap_or_default(),
        });
    }
    let line = serde_json::from_slice::<BareLine>(bytes).ok()?;
    let message = line.message.filter(|_| assistant(&line.kind))?;
    Some(Parsed {
        id: message.id.unwrap_or_default(),
        model: message.model,
        usage: message.usage?,
        blocks: Vec::new(),
    })
}

/// The delegations and task starts of a message's tool calls.
fn calls(blocks: &[Block], into: &mut MessageUsage) {
    for b in blocks
        .iter()
        .filter(|b| b.kind.as_deref() == Some("tool_use"))
    {
        let Some(input) = &b.input else { continue };
        match b.name.as_deref() {
            Some("Agent" | "Task") => into.delegations.push((
                input.subagent_type.clone().unwrap_or_default(),
                input.prompt.clone().unwrap_or_default(),
            )),
            Some("Bash") => {
                if let Some(c) = &input.command {
                    into.task_starts.extend(task_start_ids(c));
                }
            }
            _ => {}
        }
    }
}

impl Counter {
    fn new(previous: Option<&str>) -> Self {
        Counter {
            input: 0,
            output: 0,
            messages: 0,
            invalid: 0,
            done: Vec::new(),
            current: None,
            previous: previous.map(str::to_string),
        }
    }

    fn line(&mut self, bytes: &[u8]) {
        // Most lines (tool results, attachments) are not assistant lines; skip them
        // without a JSON parse.
        if !contains(bytes, b"\"assistant\"") {
            return;
        }
        let Some(parsed) = parse_line(bytes) else {
            return;
        };
        let (tokens, bad) = parsed.usage.tokens();
        let id = parsed.id;
        if !id.is_empty() && self.previous.as_deref() == Some(id.as_str()) {
            return;
        }
        self.invalid += bad;
        match &mut self.current {
            Some((cur, m)) if !id.is_empty() && *cur == id => {
                let t = &mut m.tokens;
                t.input = t.input.max(tokens.input);
                t.output = t.output.max(tokens.output);
                t.cache_read = t.cache_read.max(tokens.cache_read);
                t.cache_creation = t.cache_creation.max(tokens.cache_creation);
                if m.model.is_none() {
                    m.model = parsed.model;
                }
                calls(&parsed.blocks, m);
            }
            _ => {
                self.flush();
                let mut m = MessageUsage {
                    model: parsed.model,
                    tokens,
                    ..Default::default()
                };
                calls(&parsed.blocks, &mut m);
                self.current = Some((id, m));
            }
        }
    }

    fn flush(&mut self) {
        if let Some((id, m)) = self.current.take() {
            // Figures come from the file: an absurd one must not overflow the sum.
            self.input = self.input.saturating_add(m.tokens.input);
            self.output = self.output.saturating_add(m.tokens.output);
            self.messages += 1;
            self.done.push(m);
            self.previous = Some(id).filter(|id| !id.is_empty());
        }
    }

    fn finish(mut self, next_offset: u64, restarted: bool) -> TailRead {
        self.flush();
        TailRead {
            input_tokens: self.input,
            output_tokens: self.output,
            next_offset: Some(next_offset),
            last_message_id: self.previous,
            restarted,
            messages: self.messages,
            per_message: self.done,
            invalid_usage: self.invalid,
            skipped: 0,
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn assistant(id: &str, input: u64, output: u64) -> String {
        format!(
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"{id}\",\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"x\"}}],\"usage\":{{\"input_tokens\":{input},\"output_tokens\":{output}}}}}}}\n"
        )
    }

    fn file_with(content: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(content).unwrap();
        f
    }

    #[test]
    fn no_offset_starts_at_the_end_and_counts_nothing() {
        let f = file_with(assistant("m1", 10, 20).as_bytes());
        let r = read_usage(f.path(), None, None);
        assert_eq!((r.input_tokens, r.output_tokens), (0, 0));
        assert_eq!(r.next_offset, Some(f.as_file().metadata().unwrap().len()));
    }

    /// A span past the bound: only its last `MAX_SPAN` bytes are read, in bounded memory,
    /// and the offset still reaches the end.
    #[test]
    fn a_huge_span_reads_only_its_tail() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let filler = vec![b'x'; 1 << 20];
        f.write_all(assistant("early", 1000, 1000).as_bytes())
            .unwrap();
        for _ in 0..(MAX_SPAN >> 20) + 2 {
            f.write_all(&filler).unwrap();
        }
        f.write_all(b"\n").unwrap();
        f.write_all(assistant("late", 1, 2).as_bytes()).unwrap();
        let len = f.as_file().metadata().unwrap().len();
        let r = read_usage(f.path(), Some(0), None);
        assert_eq!((r.input_tokens, r.output_tokens), (1, 2), "{r:?}");
        assert_eq!(r.skipped, len - MAX_SPAN);
        assert_eq!(r.next_offset, Some(len));
    }

    #[test]
    fn a_line_past_the_bound_is_dropped_and_the_next_counted() {
        let mut text = vec![b'y'; MAX_LINE + CHUNK * 3];
        text.push(b'\n');
        text.extend_from_slice(assistant("m1", 3, 4).as_bytes());
        let f = file_with(&text);
        let r = read_usage(f.path(), Some(0), None);
        assert_eq!((r.input_tokens, r.output_tokens), (3, 4));
        assert_eq!(r.next_offset, Some(text.len() as u64));
    }

    #[test]
    fn counts_each_message_id_once() {
        let text = [
            assistant("m1", 10, 5),
            assistant("m1", 10, 7),
            "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"assistant\"}}\n"
                .into(),
            assistant("m2", 3, 4),
        ]
        .concat();
        let f = file_with(text.as_bytes());
        let r = read_usage(f.path(), Some(0), None);
        assert_eq!((r.input_tokens, r.output_tokens, r.messages), (13, 11, 2));
        assert_eq!(r.next_offset, Some(text.len() as u64));
        assert_eq!(r.last_message_id.as_deref(), Some("m2"));
    }

    #[test]
    fn partial_last_line_is_left_for_next_time() {
        let full = assistant("m1", 1, 2);
        let partial = &assistant("m2", 100, 200)[..30];
        let f = file_with(format!("{full}{partial}").as_bytes());
        let r = read_usage(f.path(), Some(0), None);
        assert_eq!((r.input_tokens, r.output_tokens), (1, 2));
        assert_eq!(r.next_offset, Some(full.len() as u64));
    }

    #[test]
    fn a_message_split_across_reads_is_counted_once() {
        let first = assistant("m1", 10, 5);
        let f = file_with(first.as_bytes());
        let r1 = read_usage(f.path(), Some(0), None);
        let mut file = f.reopen().unwrap();
        use std::io::Seek;
        file.seek(SeekFrom::End(0)).unwrap();
        file.write_all(assistant("m1", 10, 5).as_bytes()).unwrap();
        file.write_all(assistant("m2", 1, 1).as_bytes()).unwrap();
        let r2 = read_usage(f.path(), r1.next_offset, r1.last_message_id.as_deref());
        assert_eq!((r2.input_tokens, r2.output_tokens), (1, 1));
    }

    #[test]
    fn garbage_and_non_utf8_lines_are_skipped() {
        let mut bytes =
            b"not json at all\n{\"type\":\"assistant\" broken\n\xff\xfe\"assistant\"\n".to_vec();
        bytes.extend_from_slice(assistant("m9", 2, 3).as_bytes());
        let f = file_with(&bytes);
        let r = read_usage(f.path(), Some(0), None);
        assert_eq!((r.input_tokens, r.output_tokens), (2, 3));
        assert_eq!(r.next_offset, Some(bytes.len() as u64));
    }

    #[test]
    fn shorter_than_offset_restarts_from_zero() {
        let f = file_with(assistant("m1", 4, 6).as_bytes());
        let r = read_usage(f.path(), Some(1_000_000), Some("m1"));
        assert!(r.restarted);
        assert_eq!((r.input_tokens, r.output_tokens), (4, 6));
    }

    #[test]
    fn a_missing_file_without_offset_starts_at_zero() {
        let r = read_usage(Path::new("/nonexistent/specrun/t.jsonl"), None, None);
        assert_eq!(r.next_offset, Some(0));
    }

    #[test]
    fn a_directory_is_not_read_and_keeps_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        for offset in [None, Some(3)] {
            let r = read_usage(dir.path(), offset, Some("m"));
            assert_eq!(r.next_offset, None);
            assert_eq!(r.last_message_id.as_deref(), Some("m"));
        }
    }

    #[test]
    fn missing_file_keeps_the_offset() {
        let r = read_usage(
            Path::new("/nonexistent/specrun/t.jsonl"),
            Some(7),
            Some("m"),
        );
        assert_eq!(r.next_offset, None);
        assert_eq!(r.last_message_id.as_deref(), Some("m"));
        assert_eq!((r.input_tokens, r.output_tokens), (0, 0));
    }

    #[test]
    fn lines_longer_than_a_chunk_are_read_whole() {
        let big = "y".repeat(3 * CHUNK);
        let line = format!(
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"big\",\"content\":[{{\"type\":\"text\",\"text\":\"{big}\"}}],\"usage\":{{\"input_tokens\":1,\"output_tokens\":9}}}}}}\n"
        );
        let f = file_with(line.as_bytes());
        let r = read_usage(f.path(), Some(0), None);
        assert_eq!(r.output_tokens, 9);
    }

    #[test]
    fn cache_fields_models_delegations_and_task_starts_are_reported() {
        let lines = [
            r#"{"type":"assistant","message":{"id":"a","model":"claude-x","content":[{"type":"tool_use","name":"Agent","input":{"subagent_type":"specrun:spec-executor","prompt":"[task 1.2] go"}}],"usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":500,"cache_creation_input_tokens":60}}}"#,
            r#"{"type":"assistant","message":{"id":"a","model":"claude-x","content":[{"type":"tool_use","name":"Agent","input":{"subagent_type":"specrun:spec-executor","prompt":"[task 1.3] go"}}],"usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":500,"cache_creation_input_tokens":60}}}"#,
            r#"{"type":"assistant","message":{"id":"b","content":[{"type":"tool_use","name":"Bash","input":{"command":"cd /p && specrun task start --spec demo 2.1 && echo"}}],"usage":{"input_tokens":1,"output_tokens":1}}}"#,
        ];
        let text = lines.join("\n") + "\n";
        let f = file_with(text.as_bytes());
        let r = read_usage(f.path(), Some(0), None);
        assert_eq!(r.per_message.len(), 2);
        let a = &r.per_message[0];
        assert_eq!(a.model.as_deref(), Some("claude-x"));
        assert_eq!(
            a.tokens,
            Tokens {
                input: 3,
                output: 9,
                cache_read: 500,
                cache_creation: 60
            }
        );
        assert_eq!(a.delegations.len(), 2);
        assert_eq!(a.delegations[1].1, "[task 1.3] go");
        assert_eq!(r.per_message[1].task_starts, vec!["2.1".to_string()]);
        assert_eq!(r.per_message[1].model, None);
    }

    #[test]
    fn negative_missing_and_odd_usage_fields_count_zero_and_are_reported() {
        let lines = [
            r#"{"type":"assistant","message":{"id":"a","content":[],"usage":{"input_tokens":-5,"output_tokens":7}}}"#,
            r#"{"type":"assistant","message":{"id":"b","content":"a string","usage":{"output_tokens":"9","cache_read_input_tokens":2.5,"input_tokens":1}}}"#,
            r#"{"type":"assistant","message":{"id":"c","content":[],"usage":{}}}"#,
            r#"{"type":"assistant","message":{"id":"d","content":[]}}"#,
        ];
        let text = lines.join("\n") + "\n";
        let f = file_with(text.as_bytes());
        let r = read_usage(f.path(), Some(0), None);
        assert_eq!((r.input_tokens, r.output_tokens, r.messages), (1, 7, 3));
        assert_eq!(r.invalid_usage, 3);
    }

    #[test]
    fn task_start_ids_skip_options() {
        assert_eq!(
            task_start_ids("specrun task start 1.2 --spec demo"),
            vec!["1.2"]
        );
        assert_eq!(
            task_start_ids("specrun task start --cwd /p --json '3'"),
            vec!["3"]
        );
        assert_eq!(task_start_ids("specrun task start --spec=d 4;"), vec!["4"]);
        assert!(task_start_ids("specrun task complete 1.2").is_empty());
        assert!(task_start_ids("specrun task start && true").is_empty());
    }
}
