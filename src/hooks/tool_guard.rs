//! The PreToolUse guard on Bash, Write, Edit, MultiEdit and NotebookEdit (pure): what a
//! call does, read from its command text or file path alone, so that the hook reads the
//! state only for a call it may deny. A speed bump, not a sandbox: it reads the words a
//! shell would run, and a model that hides them (a script file, an interpreter, base64)
//! gets past it; docs/design.md "Threat model" says what that leaves.

/// What a tool call does, as far as the guard can tell without the state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// Reads only (`git status`, `cat`, `grep`, a specrun verb): allowed even after a halt.
    ReadOnly,
    /// May change the code (`cargo test` writes target/, an editor call): denied after a
    /// halt or a cancel, allowed while the execution runs.
    Changes,
    /// Denied during an execution: the rule and why.
    Forbidden(&'static str, String),
}

/// The tools the guard reads (hooks/hooks.json's matcher adds them to PreToolUse).
pub const GUARDED_TOOLS: &[&str] = &["Bash", "Write", "Edit", "MultiEdit", "NotebookEdit"];

/// Names under the project that only specrun's verbs write (a path holding one of these
/// as a component, or ending in one, is bookkeeping). `tasks.md` and `.progress.md` are
/// the plan and the notes, written by the model; the plan's changes are judged elsewhere.
const BOOKKEEPING: &[&str] = &[
    ".specrun-state.json",
    ".specrun-defaults.json",
    ".current-spec",
    "acceptance.json",
    "followups.json",
    "critique",
    "test-results",
    ".specrun",
];

/// Where the guard's record lives outside the project (`$SPECRUN_STATE_DIR`, or
/// `$XDG_STATE_HOME/specrun`, `~/.local/state/specrun`).
const RECORD_MARKERS: &[&str] = &["SPECRUN_STATE_DIR", "state/specrun", ".local/state/specrun"];

/// Programs that only read what they are given (a redirect still makes a write).
const READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "wc",
    "ls",
    "stat",
    "file",
    "diff",
    "cmp",
    "jq",
    "echo",
    "printf",
    "pwd",
    "which",
    "type",
    "true",
    "false",
    "test",
    "[",
    "date",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "sort",
    "uniq",
    "cut",
    "tr",
    "nl",
    "od",
    "xxd",
    "sha256sum",
    "md5sum",
    "tree",
    "du",
    "df",
    "env",
    "printenv",
    "id",
    "whoami",
    "uname",
    "sleep",
];

/// git subcommands that only read.
const GIT_READERS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
    "grep",
    "branch",
    "describe",
    "shortlog",
    "cat-file",
    "ls-tree",
    "rev-list",
    "reflog",
    "remote",
];

/// The verdict on a Bash command line.
pub fn bash(command: &str) -> Call {
    let mut worst = Call::ReadOnly;
    for simple in simple_commands(command) {
        match simple_call(&simple) {
            forbidden @ Call::Forbidden(..) => return forbidden,
            Call::Changes => worst = Call::Changes,
            Call::ReadOnly => {}
        }
    }
    worst
}

/// The verdict on a Write/Edit/MultiEdit/NotebookEdit of `path` (as the tool gave it).
pub fn file(path: &str) -> Call {
    if is_bookkeeping(path) {
        return Call::Forbidden(
            "bookkeeping-write",
            format!("{path} is specrun's bookkeeping, which only specrun's verbs write"),
        );
    }
    Call::Changes
}

/// The session id a command passes with `--session-id` (in any of its words, so
/// `sh -c "specrun …"` counts) when it is not `own`, the session making the call. Binding
/// an execution to another real session (whose start a hook saw, which is all `state init`
/// can check) would leave this session's turns unguarded.
pub fn foreign_session(command: &str, own: &str) -> Option<String> {
    if !command.contains("--session-id") {
        return None;
    }
    let words: Vec<String> = simple_commands(command).into_iter().flatten().collect();
    let mut it = words.iter();
    while let Some(w) = it.next() {
        let value = match w.strip_prefix("--session-id") {
            Some("") => it.next().map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        };
        if let Some(v) = value.filter(|v| *v != own) {
            return Some(clip(v));
        }
    }
    None
}

fn is_bookkeeping(text: &str) -> bool {
    let text = inside_member_worktree(text);
    let parts = text.split(['/', '\\']);
    parts
        .map(|p| p.trim_matches(|c: char| c == '"' || c == '\'' || c == '`'))
        .any(|p| BOOKKEEPING.contains(&p))
        || RECORD_MARKERS.iter().any(|m| text.contains(m))
}

/// The part of `text` below an isolated member's worktree (`.specrun/worktrees/<spec>/<id>/`),
/// which is a checkout of the code the executor works in, not bookkeeping; `text` itself
/// when it names no member worktree.
fn inside_member_worktree(text: &str) -> &str {
    const WORKTREES: &str = ".specrun/worktrees/";
    match text.find(WORKTREES) {
        Some(at) => text[at + WORKTREES.len()..]
            .splitn(3, '/')
            .nth(2)
            .unwrap_or(""),
        None => text,
    }
}

/// The simple commands of a line: split at `;`, `&`, `|`, newlines, `(`, `)`, `` ` `` and
/// `$(`, each as its words (quotes kept off the words' ends; no full shell grammar).
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    // `2>&1` duplicates a descriptor: not a separator, and no file is written.
    line.replace(">&", ">%")
        .split([';', '&', '|', '\n', '(', ')', '`'])
        .map(|part| part.trim().trim_start_matches('$').trim())
        .filter(|part| !part.is_empty())
        .map(|part: &str| {
            part.split_whitespace()
                .map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string())
                .collect()
        })
        .collect()
}

/// The verdict on one simple command.
fn simple_call(words: &[String]) -> Call {
    if let Some(call) = variable_override(words) {
        return call;
    }
    let (program, args) = program_of(words);
    let Some(program) = program else {
        return Call::ReadOnly;
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    if let Some(call) = forbidden_program(name, args) {
        return call;
    }
    let writes_out = words.iter().any(|w| writes_to(w));
    let touched = words.iter().find(|w| is_bookkeeping(w));
    let reads = is_reader(name, args);
    if let Some(path) = touched.filter(|_| (writes_out || !reads) && name != "specrun") {
        return Call::Forbidden(
            "bookkeeping-write",
            format!(
                "`{name}` on {} may write specrun's bookkeeping, which only specrun's verbs write",
                clip(path)
            ),
        );
    }
    if reads && !writes_out {
        Call::ReadOnly
    } else {
        Call::Changes
    }
}

/// A word that redirects output into a file (`>`, `>>`, `1>f`), not `2>&1` or `>/dev/null`.
fn writes_to(word: &str) -> bool {
    let Some(at) = word.find('>') else {
        return false;
    };
    let target = word[at..].trim_start_matches('>');
    !(target.starts_with('%') || target == "/dev/null")
}

/// Variables that move where specrun keeps the guard's record or reads the person's
/// settings (any `SPECRUN_…`, the XDG homes); `HOME` too, but only for a command that runs
/// specrun (`sh -c 'specrun …'` included) or a change that outlives the command (`export`,
/// `unset`, `env -u`): `HOME=… npm test` is how some projects test.
const STATE_VARIABLES: &[&str] = &["XDG_STATE_HOME", "XDG_CONFIG_HOME"];

/// Builtins whose arguments set or clear variables beyond the command itself.
const LASTING: &[&str] = &["export", "unset", "declare", "typeset", "readonly", "local"];

/// A simple command that sets, unsets or clears a variable specrun trusts, in any form a
/// shell accepts (`NAME=v cmd`, `env NAME=v`, `env -u NAME` / `-uNAME` / `--unset[=]NAME`,
/// `export`/`unset`/`declare …`, `env -i`): `CLAUDECODE` (how Claude Code marks the
/// model's commands) anywhere, reading `$CLAUDECODE` excepted; `SPECRUN_…`, the XDG homes
/// and `HOME` as `STATE_VARIABLES` says.
fn variable_override(words: &[String]) -> Option<Call> {
    let lasting = words.first().is_some_and(|w| LASTING.contains(&w.as_str()));
    let env = words.first().is_some_and(|w| w == "env");
    let cleared = env
        && words
            .iter()
            .skip(1)
            .take_while(|w| w.starts_with('-') || w.contains('='))
            .any(|w| w == "-i" || w == "-" || w == "--ignore-environment" || w.starts_with("-i"));
    let claudecode = words.iter().any(|w| {
        w.contains("CLAUDECODE") && !w.starts_with("$CLAUDECODE") && !w.starts_with("${CLAUDECODE")
    });
    if claudecode || cleared {
        let why = "it overrides or clears CLAUDECODE, which marks the model's commands for specrun";
        return Some(Call::Forbidden("claudecode-override", why.into()));
    }
    let specrun = words
        .iter()
        .any(|w| w.rsplit('/').next() == Some("specrun"));
    let named = named_variables(words, lasting);
    let (name, unset) = named.into_iter().find(|&(name, unset)| {
        let home = name == "HOME" && (specrun || lasting || env && unset);
        name.starts_with("SPECRUN_") || STATE_VARIABLES.contains(&name) || home
    })?;
    let how = if unset { "clears" } else { "sets" };
    Some(Call::Forbidden(
        "environment-override",
        format!("it {how} {name}, which moves where specrun keeps the guard's record or reads the person's settings"),
    ))
}

/// The variables a simple command sets or clears, each with whether it is cleared: `NAME=`
/// words, the operand of `-u`/`--unset` and `-uNAME`/`--unset=NAME`, and (`lasting`: the
/// command is `export`/`unset`/…) every operand.
fn named_variables(words: &[String], lasting: bool) -> Vec<(&str, bool)> {
    let unset_flag = |w: &str| w == "-u" || w == "--unset";
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let flag_before = i > 0 && unset_flag(&words[i - 1]);
        let flagged = w.strip_prefix("--unset=").or_else(|| {
            w.strip_prefix("-u")
                .filter(|n| n.starts_with(is_name_start))
        });
        if let Some(name) = flagged {
            out.push((name, true));
        } else if let Some((name, _)) = w.split_once('=') {
            if !name.is_empty() && !name.starts_with(['-', '$']) {
                out.push((name, false));
            }
        } else if flag_before || (lasting && i > 0 && !w.starts_with('-')) {
            out.push((w.as_str(), flag_before || words[0] == "unset"));
        }
    }
    out
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_uppercase() || c == '_'
}

/// The program and its arguments, past variable assignments and wrappers (`env`, `exec`,
/// `nohup`, `time`, `nice`, `timeout N`, `sudo`, `command`).
fn program_of(words: &[String]) -> (Option<&str>, &[String]) {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let wrapper = matches!(
            w,
            "env" | "exec" | "nohup" | "time" | "sudo" | "command" | "builtin"
        );
        if w.contains('=') && !w.starts_with('-') || wrapper || (i > 0 && w.starts_with('-')) {
            i += 1;
        } else if matches!(w, "nice" | "timeout" | "stdbuf" | "setsid") {
            i += 1;
            while i < words.len() && (words[i].starts_with('-') || words[i].parse::<f64>().is_ok())
            {
                i += 1;
            }
        } else {
            return (Some(w), &words[i + 1..]);
        }
    }
    (None, &[])
}

/// A nested Claude Code, a hook verb, or a person's verb.
fn forbidden_program(name: &str, args: &[String]) -> Option<Call> {
    if name == "claude" || args.iter().any(|a| a.contains("claude-code")) {
        return Some(Call::Forbidden(
            "nested-claude",
            "it starts another Claude Code session, which no hook of this one guards".into(),
        ));
    }
    if name != "specrun" {
        return None;
    }
    let mut verb = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'));
    let (first, second) = (verb.next(), verb.next());
    if first == Some("hook") {
        return Some(Call::Forbidden(
            "hook-verb",
            "`specrun hook …` is Claude Code's to run, not the model's".into(),
        ));
    }
    let persons = match (first, second) {
        (Some("resume"), _) => true,
        (Some("ac"), Some("confirm")) | (Some("task"), Some("justify")) => true,
        (Some("verify"), Some("run")) => args.iter().any(|a| a.starts_with("--accept-other")),
        (Some("state"), Some("init")) => args.iter().any(|a| a == "--restart" || a == "--force"),
        _ => false,
    };
    persons.then(|| {
        Call::Forbidden(
            "persons-verb",
            "it is a person's decision, made at a shell".into(),
        )
    })
}

fn is_reader(name: &str, args: &[String]) -> bool {
    match name {
        "git" => args
            .iter()
            .find(|a| !a.starts_with('-'))
            .is_some_and(|sub| GIT_READERS.contains(&sub.as_str())),
        "sed" => !args
            .iter()
            .any(|a| a.starts_with("-i") || a == "--in-place"),
        "find" => !args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-delete" | "-exec" | "-execdir" | "-ok" | "-fprint"
            )
        }),
        // specrun's own verbs write only through their locks; the binary judges them.
        "specrun" => true,
        _ => READERS.contains(&name),
    }
}

fn clip(word: &str) -> String {
    crate::support::chars::clip(word, 120, "…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_sessions_id_is_foreign_and_the_callers_own_is_not() {
        let own = "11111111-aaaa";
        for (cmd, want) in [
            (
                "specrun state init --spec demo --session-id 22222222-bbbb",
                Some("22222222-bbbb"),
            ),
            (
                "specrun state init --session-id=22222222-bbbb",
                Some("22222222-bbbb"),
            ),
            (
                "sh -c \"specrun state init --session-id 2222\"",
                Some("2222"),
            ),
            (
                "cd x && specrun state init --session-id '2222' --spec d",
                Some("2222"),
            ),
            // A variable or a background process: the words still name another id.
            ("S=2222; specrun state init --session-id \"$S\"", Some("$S")),
            ("nohup specrun state init --session-id 2222 &", Some("2222")),
            // The honest control: this session's own id, or no id at all.
            (
                "specrun state init --spec demo --session-id 11111111-aaaa",
                None,
            ),
            ("specrun state init --session-id=11111111-aaaa", None),
            ("specrun state init --spec demo", None),
            ("cargo test session_id", None),
        ] {
            assert_eq!(foreign_session(cmd, own).as_deref(), want, "{cmd}");
        }
    }

    fn rule(call: Call) -> &'static str {
        match call {
            Call::Forbidden(rule, _) => rule,
            Call::Changes => "changes",
            Call::ReadOnly => "read-only",
        }
    }

    #[test]
    fn each_dishonest_command_is_forbidden_and_the_honest_ones_are_not() {
        for (cmd, expected) in [
            (
                "env -u CLAUDECODE specrun resume --raise-global 99",
                "claudecode-override",
            ),
            (
                "CLAUDECODE= specrun ac confirm 1/AC1 --reason x",
                "claudecode-override",
            ),
            ("unset CLAUDECODE; specrun resume", "claudecode-override"),
            ("export CLAUDECODE=", "claudecode-override"),
            ("env -i PATH=$PATH specrun resume", "claudecode-override"),
            (
                "echo '{}' > specs/demo/.specrun-state.json",
                "bookkeeping-write",
            ),
            (
                "sed -i 's/a/b/' specs/demo/.specrun-state.json",
                "bookkeeping-write",
            ),
            ("rm specs/.current-spec", "bookkeeping-write"),
            ("mv specs/demo/acceptance.json /tmp/x", "bookkeeping-write"),
            ("cp /tmp/x specs/demo/followups.json", "bookkeeping-write"),
            ("truncate -s 0 .specrun/events.jsonl", "bookkeeping-write"),
            (
                "echo x | tee specs/demo/critique/1.1-post-code.json",
                "bookkeeping-write",
            ),
            ("rm -rf ~/.local/state/specrun", "bookkeeping-write"),
            ("specrun hook stop < fake.json", "hook-verb"),
            ("./bin/specrun hook pre-tool-use", "hook-verb"),
            ("claude -p 'do it'", "nested-claude"),
            ("timeout 60 claude -p hi", "nested-claude"),
            ("npx @anthropic-ai/claude-code -p hi", "nested-claude"),
            ("specrun resume --spec demo", "persons-verb"),
            ("specrun ac confirm 1.1/AC1 --reason x", "persons-verb"),
            (
                "specrun task justify 1.1 --finding F1 --reason x",
                "persons-verb",
            ),
            ("specrun state init --restart", "persons-verb"),
            (
                "specrun verify run --task 1 --command true --accept-other x",
                "persons-verb",
            ),
            (
                "SPECRUN_STATE_DIR=/tmp/x specrun status",
                "environment-override",
            ),
            ("export XDG_STATE_HOME=/tmp/x", "environment-override"),
            (
                "unset XDG_CONFIG_HOME SPECRUN_NOTIFY",
                "environment-override",
            ),
            (
                "env -u SPECRUN_STATE_DIR specrun status",
                "environment-override",
            ),
            (
                "env --unset=XDG_STATE_HOME specrun status",
                "environment-override",
            ),
            (
                "SPECRUN_NOTIFY='specrun resume' cargo test",
                "environment-override",
            ),
            (
                "HOME=/tmp/h specrun task complete 1.1",
                "environment-override",
            ),
            ("export HOME=/tmp/h", "environment-override"),
            ("env -u HOME ls", "environment-override"),
            // Every form of setting the person's settings for a specrun verb.
            (
                "SPECRUN_NOTIFY='touch x' specrun state init --spec demo",
                "environment-override",
            ),
            (
                "env XDG_CONFIG_HOME=/tmp/c specrun state init",
                "environment-override",
            ),
            (
                "env -uSPECRUN_NOTIFY specrun task complete 1.1",
                "environment-override",
            ),
            (
                "env -uXDG_CONFIG_HOME specrun state init",
                "environment-override",
            ),
            (
                "HOME=/tmp/h sh -c 'specrun state init --spec demo'",
                "environment-override",
            ),
            (
                "HOME=/tmp/h bash -c \"./target/release/specrun status\"",
                "environment-override",
            ),
            ("env -uHOME specrun status", "environment-override"),
            ("local HOME=/tmp/h", "environment-override"),
            ("readonly XDG_CONFIG_HOME=/tmp/c", "environment-override"),
            ("env -uCLAUDECODE specrun resume", "claudecode-override"),
            ("HOME=/tmp/h npm test", "changes"),
            ("sudo -u root make install", "changes"),
            ("env | grep SPECRUN_", "read-only"),
            ("printenv HOME XDG_CONFIG_HOME", "read-only"),
            ("echo ${SPECRUN_NOTIFY} $HOME", "read-only"),
            ("echo $SPECRUN_STATE_DIR $XDG_STATE_HOME", "read-only"),
            ("cargo test", "changes"),
            ("git add -A && git commit -m 'feat: x'", "changes"),
            ("mkdir -p src && echo hi > src/a.rs", "changes"),
            ("git status", "read-only"),
            ("git diff HEAD~1 -- src", "read-only"),
            ("cat specs/demo/.specrun-state.json", "read-only"),
            ("grep -q 1 one.txt 2>&1", "read-only"),
            ("specrun task complete 1.1 --check --spec demo", "read-only"),
            ("specrun status --spec demo", "read-only"),
            ("ls -la specs/demo | head", "read-only"),
            ("echo $CLAUDECODE", "read-only"),
            ("sed -n 1,5p src/a.rs", "read-only"),
        ] {
            assert_eq!(rule(bash(cmd)), expected, "{cmd}");
        }
    }

    #[test]
    fn writing_the_bookkeeping_with_an_editor_tool_is_forbidden() {
        for path in [
            "/p/specs/demo/.specrun-state.json",
            "specs/.current-spec",
            "/p/.specrun/config.json",
            "/p/specs/demo/critique/1.1-post-test.json",
            "/home/u/.local/state/specrun/abc/record.json",
            // The person's default Verify of a spec-kit, Kiro or OpenSpec spec.
            "/p/.kiro/specs/albums/.specrun-defaults.json",
            "specs/001-users/.specrun-defaults.json",
        ] {
            assert_eq!(rule(file(path)), "bookkeeping-write", "{path}");
        }
        for path in [
            "/p/src/main.rs",
            "specs/demo/tasks.md",
            "/p/specs/demo/.progress.md",
            "/p/.specrun/worktrees/demo/1.1/src/main.rs",
        ] {
            assert_eq!(rule(file(path)), "changes", "{path}");
        }
        // A member's worktree is code; its own bookkeeping paths are still bookkeeping.
        let member_state = "/p/.specrun/worktrees/demo/1.1/specs/demo/.specrun-state.json";
        assert_eq!(rule(file(member_state)), "bookkeeping-write");
        for cmd in [
            "cd /p/.specrun/worktrees/demo/1.1 && cargo test",
            "printf x > /p/.specrun/worktrees/demo/1.2/notes/a.txt",
        ] {
            assert_eq!(rule(bash(cmd)), "changes", "{cmd}");
        }
    }
}
