//! Runs the real, pinned Claude Code (`claude -p`) against the fake model, with this
//! repository as `--plugin-dir`, in a temp git project with a temp HOME (contract §7).

use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use specrun::api::claude::goal::parse_version;
use specrun::api::claude::releases as claude_code;

use super::fake_model::{Agent, Block, FakeModel, Request};

/// Names the Claude Code the e2e tests drive: a pinned release (`2.1.197`, `2.1.332`,
/// installed under `.claude-code/<version>/` by `scripts/install-claude-code`) or the path
/// of any other `claude` (a canary for the next release; any version is accepted). Unset:
/// the newest pinned release. `scripts/test` runs the suite once per pinned release.
pub const CLIENT_ENV: &str = "SPECRUN_E2E_CLIENT";

/// The Claude Code one run of the suite drives.
#[derive(Clone, Debug)]
pub struct Client {
    pub path: PathBuf,
    /// `2.1.332`, as `claude --version` printed it.
    pub version: String,
    /// Not one of the pinned releases.
    pub canary: bool,
}

impl Client {
    /// Whether its `Agent` tool runs a subagent in the background when the call does not
    /// say (`run_in_background` unset): then the delegation returns at once and the result
    /// arrives as a notification turn. Every supported release honours an explicit value.
    pub fn background_by_default(&self) -> bool {
        parse_version(&self.version) >= parse_version(claude_code::BACKGROUND_AGENTS_SINCE)
    }

    /// Whether it loads a plugin's hooks module (strict mode's `agent.spawn` guard).
    pub fn loads_hooks_modules(&self) -> bool {
        parse_version(&self.version) >= parse_version(claude_code::HOOKS_MODULES_SINCE)
    }

    /// `Claude Code 2.1.332` (or `canary Claude Code 2.1.400 at PATH`): failures name it.
    pub fn name(&self) -> String {
        if self.canary {
            format!(
                "canary Claude Code {} at {}",
                self.version,
                self.path.display()
            )
        } else {
            format!("Claude Code {}", self.version)
        }
    }
}

/// The repository root (its `plugin/` is the plugin, its `.claude-code/` the clients).
/// A clean environment for a Claude Code talking to the fake model at `base_url`, in
/// `project` with `home`: no telemetry or updates, and the `specrun` this `cargo test` built
/// (always fresh, still reached through the plugin's launcher, which honours SPECRUN_BIN).
pub fn fake_client_env(cmd: &mut Command, project: &Path, home: &Path, base_url: &str) {
    cmd.env_clear()
        .current_dir(project)
        .env("PATH", path_without_specrun())
        .env("HOME", home)
        .env("TERM", "dumb")
        .env("LANG", "C.UTF-8")
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "sk-ant-fake-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY", "1")
        .env("SPECRUN_BIN", env!("CARGO_BIN_EXE_specrun"));
    if running_as_root() {
        // Without it, --dangerously-skip-permissions is refused for root.
        cmd.env("IS_SANDBOX", "1");
    }
}

pub fn plugin_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Claude Code to drive, or None when the e2e tests were explicitly skipped outside CI.
///
/// A missing Claude Code never looks like a pass: under `CI=true` it is a failure, and
/// elsewhere it is a failure too unless `SPECRUN_E2E=skip` says the skip is deliberate.
pub fn client_or_skip(test: &str) -> Option<Client> {
    static FOUND: OnceLock<Result<Client, String>> = OnceLock::new();
    let found = FOUND.get_or_init(find_client);
    match found {
        Ok(client) => {
            // Captured by libtest and shown with a failure, so every failure names the client.
            println!("e2e `{test}` on {}", client.name());
            Some(client.clone())
        }
        Err(why) => {
            // Any CI value but an explicit no counts: CI=1 or CI=TRUE must not skip.
            let in_ci = std::env::var("CI").is_ok_and(|v| {
                !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "false" | "0")
            });
            let skip = std::env::var("SPECRUN_E2E").is_ok_and(|v| v == "skip");
            if skip && !in_ci {
                // Straight to fd 2: libtest captures eprintln! of passing tests, and this
                // must be seen.
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "\n########## E2E TEST `{test}` DID NOT RUN ##########\n{why}\n\
                     (SPECRUN_E2E=skip is set; this is NOT a pass. Run scripts/test to install Claude Code.)\n"
                );
                return None;
            }
            panic!(
                "{why}\nThe e2e tests need the pinned Claude Code releases: run scripts/test (it installs them into \
                 .claude-code/<version>/) or set {CLIENT_ENV} to a pinned version or a claude path. Outside CI, \
                 SPECRUN_E2E=skip skips them deliberately."
            );
        }
    }
}

fn find_client() -> Result<Client, String> {
    let wanted = std::env::var(CLIENT_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| claude_code::NEWEST_TESTED.to_string());
    let pinned = claude_code::PINNED.contains(&wanted.as_str());
    let path = if pinned {
        plugin_root().join(format!(".claude-code/{wanted}/node_modules/.bin/claude"))
    } else {
        PathBuf::from(&wanted)
    };
    let out = Command::new(&path).arg("--version").output().map_err(|e| {
        format!(
            "Claude Code not found at {} ({CLIENT_ENV}={wanted}): {e}",
            path.display()
        )
    })?;
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let version = printed
        .split_whitespace()
        .next()
        .filter(|v| parse_version(v).is_some())
        .ok_or_else(|| {
            format!(
                "{} --version printed {printed:?}: no version",
                path.display()
            )
        })?
        .to_string();
    if pinned && version != wanted {
        return Err(format!(
            "{} --version printed {printed:?}; expected the pinned {wanted}",
            path.display()
        ));
    }
    Ok(Client {
        path,
        version,
        canary: !pinned,
    })
}

/// One `claude -p` invocation.
pub struct Session {
    pub prompt: String,
    /// `--session-id`: lets a test bind the execution to this session beforehand.
    pub session_id: Option<String>,
    /// A hang fails the test after this long instead of stalling the suite.
    pub timeout: Duration,
    /// Variables set in Claude Code's environment on top of the clean one (a person's
    /// opt-in such as SPECRUN_STRICT).
    pub env: Vec<(String, String)>,
}

impl Session {
    pub fn new(prompt: &str) -> Session {
        Session {
            prompt: prompt.to_string(),
            session_id: None,
            timeout: Duration::from_secs(180),
            env: Vec::new(),
        }
    }
    pub fn env(mut self, name: &str, value: &str) -> Session {
        self.env.push((name.to_string(), value.to_string()));
        self
    }
    pub fn session_id(mut self, id: &str) -> Session {
        self.session_id = Some(id.to_string());
        self
    }
}

/// Everything a run left behind.
pub struct Run {
    /// Which Claude Code ran (`Client::name`).
    pub client: String,
    pub rc: Option<i32>,
    pub wall: Duration,
    pub stderr: String,
    pub events: Vec<Value>,
    pub requests: Vec<Request>,
    pub home: PathBuf,
    pub session_id: Option<String>,
}

impl Run {
    pub fn init(&self) -> &Value {
        self.events
            .iter()
            .find(|e| e["type"] == "system" && e["subtype"] == "init")
            .unwrap_or_else(|| panic!("no init event\n{}", self.describe()))
    }

    pub fn result(&self) -> &Value {
        self.events
            .iter()
            .rev()
            .find(|e| e["type"] == "result")
            .unwrap_or_else(|| panic!("no result event\n{}", self.describe()))
    }

    pub fn terminal_reason(&self) -> &str {
        self.result()["terminal_reason"]
            .as_str()
            .unwrap_or_default()
    }

    pub fn requests_of(&self, agent: Agent) -> Vec<&Request> {
        self.requests.iter().filter(|r| r.agent == agent).collect()
    }

    /// The first tool result sent to `agent` (any agent when None) that contains `needle`;
    /// panics with the run's account when there is none.
    pub fn tool_result(&self, agent: Option<Agent>, needle: &str) -> &str {
        self.requests
            .iter()
            .filter(|r| agent.is_none_or(|a| r.agent == a))
            .flat_map(|r| r.last_tool_results.iter())
            .find(|t| t.contains(needle))
            .unwrap_or_else(|| panic!("no tool result with {needle:?}\n{}", self.describe()))
    }

    /// The prompts of the Agent calls the coordinator made, in order.
    pub fn delegations(&self) -> Vec<String> {
        self.requests_of(Agent::Main)
            .into_iter()
            .flat_map(|r| r.reply.iter())
            .filter_map(|b| match b {
                Block::Tool { name, input } if name == "Agent" => {
                    Some(input["prompt"].as_str().unwrap_or_default().to_string())
                }
                _ => None,
            })
            .collect()
    }

    /// `hook_response` events for one hook event name (e.g. "Stop").
    pub fn hook_responses(&self, event: &str) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["subtype"] == "hook_response" && e["hook_event"] == event)
            .collect()
    }

    /// The main transcript (one JSON object per line), read after the run.
    pub fn transcript(&self) -> Vec<Value> {
        let id = self
            .session_id
            .as_deref()
            .expect("transcript needs a pinned session id");
        let projects = self.home.join(".claude/projects");
        let file = fs::read_dir(&projects)
            .into_iter()
            .flatten()
            .flatten()
            .map(|d| d.path().join(format!("{id}.jsonl")))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("no transcript for {id} under {}", projects.display()));
        fs::read_to_string(&file)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// A readable account of the run for failure messages: every request with what it was
    /// sent last and what it got back, the hook responses, and the tail of stderr.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "--- {} rc={:?} wall={:.1}s, {} model requests ---\n",
            self.client,
            self.rc,
            self.wall.as_secs_f64(),
            self.requests.len()
        );
        for r in &self.requests {
            let reply: Vec<String> = r
                .reply
                .iter()
                .map(|b| match b {
                    Block::Text(t) => format!("text {:?}", clip(t, 160)),
                    Block::Tool { name, input } => {
                        format!("{name} {}", clip(&input.to_string(), 200))
                    }
                })
                .collect();
            out.push_str(&format!(
                "#{} {:?} turn {} rule {:?}\n    last user: {:?}\n    reply: {}\n",
                r.n,
                r.agent,
                r.turn,
                r.rule,
                clip_middle(&r.last_user, 300),
                reply.join(" | ")
            ));
        }
        for e in self
            .events
            .iter()
            .filter(|e| e["subtype"] == "hook_response")
        {
            out.push_str(&format!(
                "hook {} exit {} stdout {:?} stderr {:?}\n",
                e["hook_name"],
                e["exit_code"],
                clip(e["stdout"].as_str().unwrap_or_default(), 400),
                clip(e["stderr"].as_str().unwrap_or_default(), 400)
            ));
        }
        if let Some(result) = self.events.iter().rev().find(|e| e["type"] == "result") {
            out.push_str(&format!("result: {}\n", clip(&result.to_string(), 600)));
        }
        out.push_str(&format!("stderr tail: {}\n", clip_tail(&self.stderr, 1500)));
        out
    }
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    format!("{}…", s.chars().take(max).collect::<String>())
}

/// The start and the end of `s` (an error's cause is often its last words).
fn clip_middle(s: &str, each: usize) -> String {
    let n = s.chars().count();
    if n <= 2 * each {
        return s.to_string();
    }
    let head: String = s.chars().take(each).collect();
    format!("{head}…{}", s.chars().skip(n - each).collect::<String>())
}

fn clip_tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    format!("…{}", s.chars().skip(n - max).collect::<String>())
}

pub fn running_as_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// PATH without any directory that holds a `specrun`, so the model's `specrun` commands go
/// through the plugin's bin/ launcher (Claude Code appends it to the Bash tool's PATH) and
/// not an older installed copy.
pub fn path_without_specrun() -> String {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_string());
    std::env::split_paths(&path)
        .filter(|dir| !dir.join("specrun").exists())
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// Runs one session of the real binary in `project` (cwd) with `home` as HOME.
pub fn run_claude(
    client: &Client,
    model: &FakeModel,
    project: &Path,
    home: &Path,
    session: Session,
) -> Run {
    fs::create_dir_all(home).unwrap();
    let logs = home.join("run-logs");
    fs::create_dir_all(&logs).unwrap();
    let mut cmd = Command::new(&client.path);
    fake_client_env(&mut cmd, project, home, &model.base_url());
    cmd.envs(session.env.iter().map(|(k, v)| (k, v)));
    cmd.arg("--plugin-dir")
        .arg(plugin_root().join("plugin"))
        .args([
            "--dangerously-skip-permissions",
            "--setting-sources",
            "project,local",
        ])
        .arg("--debug-file")
        .arg(logs.join("debug.log"));
    if let Some(id) = &session.session_id {
        cmd.args(["--session-id", id]);
    }
    cmd.args(["-p", &session.prompt])
        .args([
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-hook-events",
        ])
        .stdin(Stdio::null())
        .stdout(fs::File::create(logs.join("stdout")).unwrap())
        .stderr(fs::File::create(logs.join("stderr")).unwrap());

    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn claude");
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for claude") {
            break Some(status);
        }
        if started.elapsed() > session.timeout {
            timed_out = true;
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    let stdout = fs::read_to_string(logs.join("stdout")).unwrap_or_default();
    let run = Run {
        client: client.name(),
        rc: status.and_then(|s| s.code()),
        wall: started.elapsed(),
        events: stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
        stderr: fs::read_to_string(logs.join("stderr")).unwrap_or_default(),
        requests: model.requests(),
        home: home.to_path_buf(),
        session_id: session.session_id.clone(),
    };
    assert!(
        !timed_out,
        "claude did not finish within {:?}\n{}",
        session.timeout,
        run.describe()
    );
    run
}
