//! A scripted fake of the Anthropic Messages API, enough for the real Claude Code (2.1.197
//! and 2.1.332) to run offline against it (contract §1): `POST /v1/messages?beta=true`, streamed back as
//! SSE. Every request is answered by the first matching rule of a script and logged, so a
//! test can assert on exactly what the model was sent.
//!
//! HTTP/1.1 on 127.0.0.1 with std only: a thread per connection, keep-alive, request
//! bodies by Content-Length or chunked, responses with Content-Length (the whole SSE body is
//! known before it is sent, so nothing needs chunking on the way out).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

/// Who sent a request, decided per request the way the contract (§1, §6) describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    /// The top-level session (offers tools, no agent-id header).
    Main,
    /// A subagent started with the Agent tool (header `x-claude-code-agent-id`).
    Sub,
    /// A tool-less request, such as the /goal evaluator.
    Side,
}

/// One content block of a scripted reply.
#[derive(Clone, Debug)]
pub enum Block {
    Text(String),
    Tool { name: String, input: Value },
}

pub fn text(s: impl Into<String>) -> Block {
    Block::Text(s.into())
}

pub fn tool(name: &str, input: Value) -> Block {
    Block::Tool {
        name: name.to_string(),
        input,
    }
}

pub fn bash(command: &str) -> Block {
    tool(
        "Bash",
        json!({ "command": command, "description": "scripted" }),
    )
}

/// A scripted answer: the first rule whose conditions all hold, and that has been used fewer
/// than `times` times (0 = unlimited), answers.
#[derive(Clone, Debug)]
pub struct Rule {
    agent: Option<Agent>,
    turn: Option<usize>,
    first_user_contains: Option<String>,
    last_user_contains: Option<String>,
    last_tool_result_contains: Option<String>,
    result_contains: Option<String>,
    delivered_contains: Vec<String>,
    system_contains: Option<String>,
    times: usize,
    reply: Vec<Block>,
    /// The reply's `usage.output_tokens` (10 unless set).
    output_tokens: Option<u64>,
    /// Hold the answer this long after logging the request (a model that never answers).
    stall: Option<Duration>,
}

impl Rule {
    fn for_agent(agent: Agent) -> Rule {
        Rule {
            agent: Some(agent),
            turn: None,
            first_user_contains: None,
            last_user_contains: None,
            last_tool_result_contains: None,
            result_contains: None,
            delivered_contains: Vec::new(),
            system_contains: None,
            times: 1,
            reply: Vec::new(),
            output_tokens: None,
            stall: None,
        }
    }
    pub fn main() -> Rule {
        Rule::for_agent(Agent::Main)
    }
    pub fn sub() -> Rule {
        Rule::for_agent(Agent::Sub)
    }
    pub fn side() -> Rule {
        Rule::for_agent(Agent::Side)
    }
    /// Number of assistant messages already in the request (0 = first call of an agent).
    pub fn turn(mut self, turn: usize) -> Rule {
        self.turn = Some(turn);
        self
    }
    /// The agent's first user message (for a subagent: the Agent tool's prompt).
    pub fn first_user(mut self, s: &str) -> Rule {
        self.first_user_contains = Some(s.to_string());
        self
    }
    /// The latest user message (text and tool results), e.g. `Stop hook feedback:`.
    pub fn last_user(mut self, s: &str) -> Rule {
        self.last_user_contains = Some(s.to_string());
        self
    }
    pub fn last_tool_result(mut self, s: &str) -> Rule {
        self.last_tool_result_contains = Some(s.to_string());
        self
    }
    /// A subagent's result holding `s` has just arrived, however the client delivered it:
    /// as the `Agent` tool result (a foreground subagent) or as a task-notification turn (a
    /// background one, Claude Code 2.1.198 and later). One script serves both clients.
    pub fn result(mut self, s: &str) -> Rule {
        self.result_contains = Some(s.to_string());
        self
    }
    /// Some result or notification so far holds `s` (repeatable: all must hold), e.g. every
    /// member of a parallel group has reported.
    pub fn delivered(mut self, s: &str) -> Rule {
        self.delivered_contains.push(s.to_string());
        self
    }
    /// The top-level system prompt (a plugin agent's body lands there for its subagent).
    pub fn system(mut self, s: &str) -> Rule {
        self.system_contains = Some(s.to_string());
        self
    }
    pub fn times(mut self, times: usize) -> Rule {
        self.times = times;
        self
    }
    /// Report `n` output tokens for this reply (a costly turn).
    pub fn output_tokens(mut self, n: u64) -> Rule {
        self.output_tokens = Some(n);
        self
    }
    /// Answer only after `d`: the request is logged at once, the reply held (a hang before
    /// the first response, as users report of headless runs).
    pub fn stall(mut self, d: Duration) -> Rule {
        self.stall = Some(d);
        self
    }
    pub fn reply(mut self, blocks: impl IntoIterator<Item = Block>) -> Rule {
        self.reply = blocks.into_iter().collect();
        self
    }

    fn matches(&self, r: &Request) -> bool {
        let has = |field: &str, want: &Option<String>| {
            want.as_ref().is_none_or(|w| field.contains(w.as_str()))
        };
        self.agent.is_none_or(|a| a == r.agent)
            && self.turn.is_none_or(|t| t == r.turn)
            && has(&r.first_user, &self.first_user_contains)
            && has(&r.last_user, &self.last_user_contains)
            && has(&r.system, &self.system_contains)
            && self
                .last_tool_result_contains
                .as_ref()
                .is_none_or(|w| r.last_tool_results.iter().any(|t| t.contains(w.as_str())))
            && self
                .result_contains
                .as_ref()
                .is_none_or(|w| r.last_delivered.iter().any(|t| t.contains(w.as_str())))
            && self
                .delivered_contains
                .iter()
                .all(|w| r.delivered.iter().any(|t| t.contains(w.as_str())))
    }
}

/// What one model request looked like, for rules and for assertions.
#[derive(Clone, Debug)]
pub struct Request {
    /// 1-based arrival order.
    pub n: usize,
    pub agent: Agent,
    pub agent_id: Option<String>,
    pub turn: usize,
    pub first_user: String,
    pub last_user: String,
    pub last_tool_results: Vec<String>,
    /// Results delivered in the latest user message: its tool results and its
    /// `<task-notification>` blocks (a background subagent's result).
    pub last_delivered: Vec<String>,
    /// The same over every user message so far.
    pub delivered: Vec<String>,
    /// The top-level `system` blocks joined.
    pub system: String,
    /// The `role:"system"` messages inside `messages` (agent and skill listings, hook context).
    pub mid_system: String,
    /// Index of the rule that answered, None when the default answered.
    pub rule: Option<usize>,
    pub reply: Vec<Block>,
    pub body: Value,
}

impl Request {
    fn from_body(body: Value, agent_id: Option<String>) -> Request {
        let system = match &body["system"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let users: Vec<&Value> = messages.iter().filter(|m| m["role"] == "user").collect();
        let all_user: Vec<String> = users.iter().map(|m| message_text(m)).collect();
        let last_tool_results = users
            .last()
            .and_then(|m| m["content"].as_array())
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_result")
                    .map(block_text)
                    .collect()
            })
            .unwrap_or_default();
        let delivered_in = |m: &Value| {
            let mut found: Vec<String> = m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "tool_result")
                .map(block_text)
                .collect();
            found.extend(notifications(&message_text(m)));
            found
        };
        let last_delivered = users.last().map(|m| delivered_in(m)).unwrap_or_default();
        let delivered = users.iter().flat_map(|m| delivered_in(m)).collect();
        let mid_system = messages
            .iter()
            .filter(|m| m["role"] == "system")
            .map(message_text)
            .collect::<Vec<_>>()
            .join("\n");
        let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        let agent = if agent_id.is_some() || system.contains("cc_is_subagent=true") {
            Agent::Sub
        } else if has_tools {
            Agent::Main
        } else {
            Agent::Side
        };
        Request {
            n: 0,
            agent,
            agent_id,
            turn: messages.iter().filter(|m| m["role"] == "assistant").count(),
            first_user: all_user.first().cloned().unwrap_or_default(),
            last_user: all_user.last().cloned().unwrap_or_default(),
            last_tool_results,
            last_delivered,
            delivered,
            system,
            mid_system,
            rule: None,
            reply: Vec::new(),
            body,
        }
    }
}

/// The `<task-notification>…</task-notification>` blocks of a user message: how Claude Code
/// 2.1.198 and later deliver a background subagent's result (its `<result>` inside).
pub fn notifications(text: &str) -> Vec<String> {
    const OPEN: &str = "<task-notification>";
    const CLOSE: &str = "</task-notification>";
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let tail = &rest[start..];
        let end = tail.find(CLOSE).map_or(tail.len(), |e| e + CLOSE.len());
        found.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    found
}

fn block_text(b: &Value) -> String {
    match b {
        Value::String(s) => s.clone(),
        _ => match b["type"].as_str() {
            Some("text") => b["text"].as_str().unwrap_or_default().to_string(),
            Some("tool_result") => match &b["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts.iter().map(block_text).collect::<Vec<_>>().join("\n"),
                _ => String::new(),
            },
            _ => String::new(),
        },
    }
}

fn message_text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().map(block_text).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

struct Shared {
    rules: Vec<Rule>,
    default: Vec<Block>,
    used: Mutex<Vec<usize>>,
    log: Mutex<Vec<Request>>,
    ids: AtomicU64,
}

/// A running fake model. Dropping it stops accepting connections.
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stopped: Arc<AtomicBool>,
}

/// What the fake answers when no rule matches: visible in transcripts and in `describe()`.
pub const UNSCRIPTED: &str = "FAKE_MODEL_UNSCRIPTED";

impl FakeModel {
    pub fn start(rules: Vec<Rule>) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            used: Mutex::new(vec![0; rules.len()]),
            rules,
            default: vec![text(UNSCRIPTED)],
            log: Mutex::new(Vec::new()),
            ids: AtomicU64::new(1),
        });
        let stopped = Arc::new(AtomicBool::new(false));
        let (accept_shared, accept_stopped) = (shared.clone(), stopped.clone());
        thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = accept_shared.clone();
                thread::spawn(move || {
                    let _ = serve_connection(stream, &shared);
                });
            }
        });
        FakeModel {
            addr,
            shared,
            stopped,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every model request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.log.lock().unwrap().clone()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

struct HttpRequest {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl HttpRequest {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn serve_connection(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    // An idle keep-alive connection must not pin a thread for the rest of the test run.
    stream.set_read_timeout(Some(Duration::from_secs(300)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    while let Some(request) = read_request(&mut reader)? {
        let (status, content_type, body) = respond(&request, shared);
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\ncache-control: no-cache\r\nconnection: keep-alive\r\n\r\n",
            body.len()
        );
        writer.write_all(head.as_bytes())?;
        writer.write_all(&body)?;
        writer.flush()?;
        if request
            .header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"))
        {
            break;
        }
    }
    Ok(())
}

fn read_line(reader: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim_end_matches(['\r', '\n']).to_string()))
}

fn read_request(reader: &mut impl BufRead) -> std::io::Result<Option<HttpRequest>> {
    let request_line = loop {
        match read_line(reader)? {
            None => return Ok(None),
            Some(line) if line.is_empty() => continue,
            Some(line) => break line,
        }
    };
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    while let Some(line) = read_line(reader)? {
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let mut request = HttpRequest {
        method,
        path,
        headers,
        body: Vec::new(),
    };
    if request
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
    {
        loop {
            let size_line = read_line(reader)?.unwrap_or_default();
            let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("0").trim(), 16)
                .unwrap_or(0);
            if size == 0 {
                // Trailers, up to the empty line.
                while read_line(reader)?.is_some_and(|l| !l.is_empty()) {}
                break;
            }
            let mut chunk = vec![0; size];
            reader.read_exact(&mut chunk)?;
            request.body.extend_from_slice(&chunk);
            read_line(reader)?;
        }
    } else if let Some(len) = request
        .header("content-length")
        .and_then(|l| l.parse::<usize>().ok())
    {
        request.body = vec![0; len];
        reader.read_exact(&mut request.body)?;
    }
    Ok(Some(request))
}

fn respond(request: &HttpRequest, shared: &Shared) -> (&'static str, &'static str, Vec<u8>) {
    let json_reply = |status, v: Value| (status, "application/json", v.to_string().into_bytes());
    if request.method != "POST" {
        return json_reply("200 OK", json!({}));
    }
    if request.path.contains("count_tokens") {
        return json_reply("200 OK", json!({ "input_tokens": 10 }));
    }
    if !request.path.starts_with("/v1/messages") {
        return json_reply(
            "404 Not Found",
            json!({"type": "error", "error": {"type": "not_found_error", "message": request.path}}),
        );
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let streaming = body["stream"].as_bool().unwrap_or(false);
    let model = body["model"].as_str().unwrap_or("fake").to_string();
    let mut logged = Request::from_body(
        body,
        request.header("x-claude-code-agent-id").map(str::to_string),
    );
    let (rule, reply, output_tokens) = choose(shared, &logged);
    let mut message = assistant_message(shared, &model, &reply);
    if let Some(n) = output_tokens {
        message["usage"]["output_tokens"] = json!(n);
    }
    logged.rule = rule;
    logged.reply = reply;
    {
        let mut log = shared.log.lock().unwrap();
        logged.n = log.len() + 1;
        log.push(logged);
    }
    if let Some(d) = rule.and_then(|i| shared.rules[i].stall) {
        thread::sleep(d);
    }
    if !streaming {
        return json_reply("200 OK", message);
    }
    ("200 OK", "text/event-stream", sse(&message).into_bytes())
}

fn choose(shared: &Shared, request: &Request) -> (Option<usize>, Vec<Block>, Option<u64>) {
    let mut used = shared.used.lock().unwrap();
    for (i, rule) in shared.rules.iter().enumerate() {
        if rule.times != 0 && used[i] >= rule.times {
            continue;
        }
        if rule.matches(request) {
            used[i] += 1;
            return (Some(i), rule.reply.clone(), rule.output_tokens);
        }
    }
    (None, shared.default.clone(), None)
}

fn assistant_message(shared: &Shared, model: &str, reply: &[Block]) -> Value {
    let content: Vec<Value> = reply
        .iter()
        .map(|b| match b {
            Block::Text(t) => json!({"type": "text", "text": t}),
            Block::Tool { name, input } => json!({
                "type": "tool_use",
                "id": format!("toolu_fake_{:06}", shared.ids.fetch_add(1, Ordering::SeqCst)),
                "name": name,
                "input": input,
            }),
        })
        .collect();
    let stop_reason = if content.iter().any(|b| b["type"] == "tool_use") {
        "tool_use"
    } else {
        "end_turn"
    };
    json!({
        "id": format!("msg_fake_{:06}", shared.ids.fetch_add(1, Ordering::SeqCst)),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    })
}

/// The minimal event sequence the binary accepts (contract §1): message_start, one
/// start/delta/stop triple per block (a tool's whole input in one input_json_delta),
/// message_delta with the stop reason, message_stop.
fn sse(message: &Value) -> String {
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    event(
        "message_start",
        json!({"type": "message_start", "message": start}),
    );
    for (index, block) in message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if block["type"] == "text" {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
            );
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": block["text"]}}),
            );
        } else {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block":
                    {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}),
            );
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta":
                    {"type": "input_json_delta", "partial_json": block["input"].to_string()}}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null},
               "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}
