//! The markdown the plugin ships is code: every `specrun …` it shows must parse with the
//! real clap definition, every plugin path it names must exist, and every skill, agent and
//! command must carry frontmatter Claude Code can load. A renamed flag fails here with the
//! file and line that still use the old one.

pub mod checker {
    use std::collections::BTreeMap;
    use std::fs;
    use std::path::{Path, PathBuf};

    use clap::error::ErrorKind;
    use clap::Parser;
    use specrun::api::cli::Cli;

    pub const MAX_SKILL_WORDS: usize = 600;

    /// A `specrun …` invocation found in a code span or a fenced block.
    #[derive(Debug, Clone)]
    pub struct Snippet {
        pub line: usize,
        pub text: String,
    }

    /// Every markdown file the plugin ships, sorted.
    pub fn shipped_markdown(root: &Path) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for dir in ["plugin/skills"] {
            for entry in read_dir_sorted(&root.join(dir)) {
                let skill = entry.join("SKILL.md");
                if skill.is_file() {
                    files.push(skill);
                }
            }
        }
        for dir in [
            "plugin/references",
            "plugin/agents",
            "plugin/commands",
            "plugin/templates",
        ] {
            files.extend(
                read_dir_sorted(&root.join(dir))
                    .into_iter()
                    .filter(|p| p.extension().is_some_and(|e| e == "md")),
            );
        }
        files
    }

    pub fn read_dir_sorted(dir: &Path) -> Vec<PathBuf> {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        entries
    }

    /// `specrun …` invocations: inline code spans (which may wrap across lines within a
    /// paragraph) and lines of fenced code blocks (one invocation per shell command).
    pub fn invocations(text: &str) -> Vec<Snippet> {
        invocations_with(text, &substitute)
    }

    /// `invocations`, with `fill` replacing the placeholders (before the shell split).
    pub fn invocations_with(text: &str, fill: &dyn Fn(&str) -> String) -> Vec<Snippet> {
        let mut found = Vec::new();
        let mut prose = String::new();
        let mut prose_lines = Vec::new();
        let mut fence: Option<String> = None;
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            let marker: String = trimmed
                .chars()
                .take_while(|c| *c == '`' || *c == '~')
                .collect();
            if let Some(open) = &fence {
                if trimmed.starts_with(open.as_str()) && trimmed.trim_end() == marker {
                    fence = None;
                } else {
                    found.extend(shell_invocations(line, i + 1, fill));
                }
                continue;
            }
            if marker.len() >= 3 && marker.chars().all(|c| c == marker.as_bytes()[0] as char) {
                found.extend(spans(&prose, &prose_lines, fill));
                prose.clear();
                prose_lines.clear();
                fence = Some(marker);
                continue;
            }
            prose.push_str(line);
            prose.push('\n');
            prose_lines.push(i + 1);
        }
        found.extend(spans(&prose, &prose_lines, fill));
        found.sort_by_key(|s| s.line);
        found
    }

    /// Code spans of prose text; `lines[k]` is the file line of the k-th prose line. A span
    /// does not cross a blank line (markdown ends the paragraph there).
    fn spans(prose: &str, lines: &[usize], fill: &dyn Fn(&str) -> String) -> Vec<Snippet> {
        let chars: Vec<char> = prose.chars().collect();
        let mut out = Vec::new();
        let mut line_no = 0;
        let mut i = 0;
        while i < chars.len() {
            if chars[i] == '\n' {
                line_no += 1;
                i += 1;
                continue;
            }
            if chars[i] != '`' {
                i += 1;
                continue;
            }
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            let start = i + run;
            let mut j = start;
            let mut close = None;
            while j < chars.len() {
                if chars[j] == '\n' && chars.get(j + 1) == Some(&'\n') {
                    break;
                }
                if chars[j] == '`' {
                    let r = chars[j..].iter().take_while(|c| **c == '`').count();
                    if r == run {
                        close = Some(j);
                        break;
                    }
                    j += r;
                    continue;
                }
                j += 1;
            }
            match close {
                Some(end) => {
                    let body: String = chars[start..end].iter().collect();
                    let line = lines.get(line_no).copied().unwrap_or(0);
                    out.extend(shell_invocations(&body.replace('\n', " "), line, fill));
                    line_no += chars[i..end].iter().filter(|c| **c == '\n').count();
                    i = end + run;
                }
                None => i = start,
            }
        }
        out
    }

    /// Each `specrun` command of one shell line (`a && specrun b | c` → `specrun b`).
    fn shell_invocations(
        line: &str,
        line_no: usize,
        fill: &dyn Fn(&str) -> String,
    ) -> Vec<Snippet> {
        let body = fill(line.trim_start().trim_start_matches("$ "));
        let mut out = Vec::new();
        for command in split_commands(&body) {
            if let Some(text) = as_specrun(&command) {
                out.push(Snippet {
                    line: line_no,
                    text,
                });
            }
        }
        out
    }

    /// The command as `specrun …` when it runs the binary: by name, by a path ending in
    /// `/specrun` (the plugin's launcher, a build output), or after `VAR=value` prefixes.
    /// None for any other program, so nothing that runs specrun escapes the check.
    pub fn as_specrun(command: &str) -> Option<String> {
        let mut rest = command.trim_start();
        loop {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let word = &rest[..end];
            if is_env_assignment(word) {
                rest = rest[end..].trim_start();
                continue;
            }
            let program = word.trim_matches(['"', '\'']);
            return (program == "specrun" || program.ends_with("/specrun"))
                .then(|| format!("specrun{}", &rest[end..]));
        }
    }

    fn is_env_assignment(word: &str) -> bool {
        word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        })
    }

    /// Splits a shell line at `&&`, `||`, `|`, `;` outside quotes, and drops redirections
    /// and here-documents (`<<'JSON'`, `> file`, `2>&1`) from each command.
    fn split_commands(line: &str) -> Vec<String> {
        let mut commands = Vec::new();
        let mut current = String::new();
        let mut quote: Option<char> = None;
        let mut chars = line.chars().peekable();
        let mut redirected = false;
        while let Some(c) = chars.next() {
            // Redirection targets (`> out`, `<<'JSON'`) are dropped, quotes and all.
            let keep = !redirected;
            match (quote, c) {
                (Some(q), _) if c == q => {
                    quote = None;
                    if keep {
                        current.push(c);
                    }
                }
                (Some(_), _) => {
                    if keep {
                        current.push(c);
                    }
                }
                (None, '\'' | '"') => {
                    quote = Some(c);
                    if keep {
                        current.push(c);
                    }
                }
                (None, '&' | '|' | ';') => {
                    if chars.peek() == Some(&c) {
                        chars.next();
                    }
                    commands.push(std::mem::take(&mut current));
                    redirected = false;
                }
                (None, '<' | '>') => {
                    // `2>&1`: the descriptor number belongs to the redirection.
                    let kept = current.trim_end_matches(|c: char| c.is_ascii_digit());
                    if kept.ends_with(' ') {
                        current.truncate(kept.len());
                    }
                    redirected = true;
                }
                _ if redirected => {}
                _ => current.push(c),
            }
        }
        commands.push(current);
        commands
            .into_iter()
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect()
    }

    /// Replaces the placeholders the docs use with values clap accepts.
    pub fn substitute(snippet: &str) -> String {
        let s = snippet
            .replace("${CLAUDE_SESSION_ID}", "session-0")
            .replace("$ARGUMENTS", "")
            .replace('…', " ")
            .replace("...", " ");
        // `<id>`, `<name>`, `<the full check>`: one value each.
        let s = fill_placeholders(&s, &|_| "x1".to_string());
        s.split_whitespace()
            .map(|w| if w == "N" { "5" } else { w })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Replaces each `<placeholder>` with `value(placeholder)`; a lone `<` or `>` stays.
    pub fn fill_placeholders(s: &str, value: &dyn Fn(&str) -> String) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(open) = rest.find('<') {
            let after = &rest[open + 1..];
            match after.find('>') {
                Some(close) if !after[..close].contains('<') && close > 0 => {
                    out.push_str(&rest[..open]);
                    out.push_str(&value(&after[..close]));
                    rest = &after[close + 1..];
                }
                _ => {
                    out.push_str(&rest[..=open]);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// Shell-style words: whitespace splits, quotes group and are removed.
    pub fn words(s: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut current = String::new();
        let mut quote: Option<char> = None;
        let mut in_word = false;
        for c in s.chars() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => current.push(c),
                None if c == '\'' || c == '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                None if c.is_whitespace() => {
                    if in_word {
                        words.push(std::mem::take(&mut current));
                        in_word = false;
                    }
                }
                None => {
                    current.push(c);
                    in_word = true;
                }
            }
        }
        if in_word {
            words.push(current);
        }
        words
    }

    /// Parses one snippet with the real CLI. A bare mention such as `specrun followup add`
    /// may leave out required arguments; anything with flags or values must be complete.
    pub fn check_invocation(snippet: &str) -> Result<(), String> {
        let argv = words(&substitute(snippet));
        match Cli::try_parse_from(&argv) {
            Ok(_) => Ok(()),
            Err(e) => match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Ok(()),
                ErrorKind::MissingRequiredArgument
                | ErrorKind::MissingSubcommand
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                    if argv[1..]
                        .iter()
                        .all(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
                        && argv[1..].iter().all(|w| !w.starts_with('-')) =>
                {
                    Ok(())
                }
                _ => Err(clap_message(&e)),
            },
        }
    }

    /// The error without its usage and help hints, on one line.
    fn clap_message(e: &clap::Error) -> String {
        e.to_string()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// All invocation failures of one file, as `path:line: `snippet`: reason`.
    pub fn check_file_invocations(path: &Path, label: &str) -> Vec<String> {
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{label}: {e}"));
        invocations(&text)
            .into_iter()
            .filter_map(|s| {
                check_invocation(&s.text)
                    .err()
                    .map(|why| format!("{label}:{}: `{}`: {why}", s.line, s.text))
            })
            .collect()
    }

    /// Plugin paths a file names that do not exist: `${CLAUDE_PLUGIN_ROOT}/…` anywhere,
    /// `references/<x>.md` anywhere (both under the plugin, the checkout's `plugin/`), and
    /// relative markdown links.
    pub fn missing_paths(root: &Path, file: &Path, label: &str) -> Vec<String> {
        let text = fs::read_to_string(file).expect("read");
        let plugin = root.join("plugin");
        let mut missing = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let mut named = Vec::new();
            for (at, _) in line.match_indices("${CLAUDE_PLUGIN_ROOT}/") {
                named.push(plugin.join(path_token(&line[at + "${CLAUDE_PLUGIN_ROOT}/".len()..])));
            }
            for (at, _) in line.match_indices("references/") {
                let before = line[..at].chars().last();
                if matches!(before, None | Some(' ' | '(' | '`' | '"' | '\'')) {
                    named.push(plugin.join(path_token(&line[at..])));
                }
            }
            for (at, _) in line.match_indices("](") {
                let target = path_token(&line[at + 2..]);
                if !target.is_empty() && !target.contains("://") && !target.starts_with('#') {
                    named.push(file.parent().expect("parent").join(target));
                }
            }
            for path in named {
                if !path.exists() {
                    missing.push(format!(
                        "{label}:{}: no such path {}",
                        i + 1,
                        path.display()
                    ));
                }
            }
        }
        missing
    }

    fn path_token(s: &str) -> &str {
        let end = s
            .find(|c: char| c.is_whitespace() || "`\"')<>,;".contains(c))
            .unwrap_or(s.len());
        s[..end].trim_end_matches(['.', ':'])
    }

    /// The frontmatter block as key → raw value, or an error naming the problem. Values
    /// must be what YAML reads as one plain or quoted scalar: an unquoted `: ` or ` #`
    /// would make Claude Code drop every field silently.
    pub fn frontmatter(text: &str) -> Result<(BTreeMap<String, String>, &str), String> {
        let rest = text
            .strip_prefix("---\n")
            .ok_or("no frontmatter: the file must start with a --- line")?;
        let end = rest
            .find("\n---\n")
            .ok_or("frontmatter is not closed by a --- line")?;
        let mut fields = BTreeMap::new();
        for (i, line) in rest[..end].lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let (key, value) = line
                .split_once(':')
                .ok_or(format!("frontmatter line {}: not `key: value`", i + 2))?;
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
                return Err(format!("frontmatter line {}: bad key `{key}`", i + 2));
            }
            let value = value.trim();
            let unquoted = if let Some(inner) = quoted(value, '"').or(quoted(value, '\'')) {
                inner.to_string()
            } else {
                if value.contains(": ") || value.contains(" #") {
                    return Err(format!(
                        "frontmatter line {}: `{key}` holds `: ` or ` #` unquoted (YAML would reject it)",
                        i + 2
                    ));
                }
                if value.starts_with(['[', '{', '&', '*', '!', '|', '>', '%', '@', '`']) {
                    return Err(format!(
                        "frontmatter line {}: `{key}` starts with a YAML indicator; quote it",
                        i + 2
                    ));
                }
                value.to_string()
            };
            fields.insert(key.to_string(), unquoted);
        }
        Ok((fields, &rest[end + "\n---\n".len()..]))
    }

    fn quoted(value: &str, q: char) -> Option<&str> {
        let inner = value.strip_prefix(q)?.strip_suffix(q)?;
        (!inner.contains(q)).then_some(inner)
    }

    /// Every fenced block that holds a self-critique record (a `"checklist"` key), validated
    /// by the binary's own validator, as `path:line: reason`. The stage follows from the ids
    /// the block uses. A record the binary would refuse fails here.
    pub fn check_file_records(path: &Path, label: &str) -> Vec<String> {
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{label}: {e}"));
        let mut failures = Vec::new();
        for (line, block) in fenced_blocks(&text) {
            if !block.contains("\"checklist\"") {
                continue;
            }
            let doc: serde_json::Value = match serde_json::from_str(&block) {
                Ok(doc) => doc,
                Err(e) => {
                    failures.push(format!(
                        "{label}:{line}: a critique record that is not JSON: {e}"
                    ));
                    continue;
                }
            };
            let stage = if block.contains("SC-6.5.") {
                "post-test"
            } else {
                "post-code"
            };
            if let Err(problems) = specrun::api::evidence::critique::validate(stage, "1.1", &doc) {
                failures.push(format!(
                    "{label}:{line}: `specrun critique record --stage {stage}` would refuse it: {}",
                    problems.join("; ")
                ));
            }
        }
        failures
    }

    /// Fenced blocks as (line of the opening fence, body).
    pub fn fenced_blocks(text: &str) -> Vec<(usize, String)> {
        let mut blocks = Vec::new();
        // (line of the opening fence, its marker, the body so far)
        let mut open: Option<(usize, String, String)> = None;
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            let marker: String = trimmed
                .chars()
                .take_while(|c| *c == '`' || *c == '~')
                .collect();
            let closes = open.as_ref().is_some_and(|(_, fence, _)| {
                trimmed.starts_with(fence.as_str()) && trimmed.trim_end() == marker
            });
            if closes {
                let (at, _, body) = open.take().expect("an open block");
                blocks.push((at, body));
            } else if let Some((_, _, body)) = &mut open {
                body.push_str(line);
                body.push('\n');
            } else if marker.len() >= 3 {
                open = Some((i + 1, marker, String::new()));
            }
        }
        blocks
    }

    /// `specrun:<item>` names a file mentions (a skill, command or agent), with their lines.
    pub fn plugin_item_names(text: &str) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("specrun:") {
                let name: String = line[at + "specrun:".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                    .collect();
                let name = name.trim_end_matches('-');
                if !name.is_empty() {
                    out.push((i + 1, name.to_string()));
                }
            }
        }
        out
    }

    pub fn word_count(text: &str) -> usize {
        text.split_whitespace().count()
    }

    /// `!`cmd`` runs only at the start of a line; anywhere else it stays literal text.
    pub fn misplaced_bang_commands(body: &str) -> Vec<usize> {
        body.lines()
            .enumerate()
            .filter(|(_, l)| l.contains("!`") && !l.starts_with("!`"))
            .map(|(i, _)| i + 1)
            .collect()
    }
}

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use checker::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn label(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn the_plugin_ships_the_expected_markdown() {
    let files: Vec<String> = shipped_markdown(&root()).iter().map(|p| label(p)).collect();
    for expected in [
        "plugin/skills/start/SKILL.md",
        "plugin/skills/implement/SKILL.md",
        "plugin/references/coordinator-pattern.md",
        "plugin/references/executor-workflow.md",
        "plugin/references/self-critique-checklist.md",
        "plugin/references/verification-layers.md",
        "plugin/references/failure-recovery.md",
        "plugin/references/phase-rules.md",
        "plugin/references/commit-discipline.md",
        "plugin/references/last-mile-autopilot.md",
        "plugin/agents/spec-executor.md",
        "plugin/agents/qa-engineer.md",
        "plugin/agents/spec-reviewer.md",
        "plugin/agents/task-planner.md",
        "plugin/commands/status.md",
        "plugin/commands/cancel.md",
        "plugin/commands/resume.md",
        "plugin/templates/tasks.md",
        "plugin/templates/progress.md",
    ] {
        assert!(files.contains(&expected.to_string()), "{expected} missing");
    }
}

#[test]
fn every_specrun_invocation_parses_with_the_real_cli() {
    let mut failures = Vec::new();
    let mut total = 0;
    for file in shipped_markdown(&root()) {
        let text = fs::read_to_string(&file).unwrap();
        total += invocations(&text).len();
        failures.extend(check_file_invocations(&file, &label(&file)));
    }
    println!("{total} specrun invocations checked");
    assert!(
        total >= 60,
        "only {total} invocations found: is the extractor broken?"
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn every_plugin_path_and_reference_link_exists() {
    let mut missing = Vec::new();
    for file in shipped_markdown(&root()) {
        missing.extend(missing_paths(&root(), &file, &label(&file)));
    }
    assert!(missing.is_empty(), "\n{}", missing.join("\n"));
}

#[test]
fn skills_have_complete_frontmatter_and_short_bodies() {
    for dir in read_dir_sorted(&root().join("plugin/skills")) {
        let path = dir.join("SKILL.md");
        let text = fs::read_to_string(&path).unwrap();
        let (fields, body) = frontmatter(&text).unwrap_or_else(|e| panic!("{}: {e}", label(&path)));
        let name = dir.file_name().unwrap().to_str().unwrap();
        assert_eq!(
            fields.get("name").map(String::as_str),
            Some(name),
            "{}",
            label(&path)
        );
        let description = fields.get("description").map(String::as_str).unwrap_or("");
        assert!(
            description.starts_with("Use when "),
            "{}: description must start with \"Use when\"",
            label(&path)
        );
        for key in ["argument-hint", "allowed-tools"] {
            assert!(
                fields.get(key).is_some_and(|v| !v.is_empty()),
                "{}: no {key}",
                label(&path)
            );
        }
        let words = word_count(body);
        assert!(
            words <= MAX_SKILL_WORDS,
            "{}: body has {words} words (max {MAX_SKILL_WORDS})",
            label(&path)
        );
    }
}

#[test]
fn agents_have_a_description_and_an_explicit_tool_list() {
    for path in read_dir_sorted(&root().join("plugin/agents")) {
        let text = fs::read_to_string(&path).unwrap();
        let (fields, body) = frontmatter(&text).unwrap_or_else(|e| panic!("{}: {e}", label(&path)));
        let stem = path.file_stem().unwrap().to_str().unwrap();
        assert_eq!(
            fields.get("name").map(String::as_str),
            Some(stem),
            "{}",
            label(&path)
        );
        assert!(
            fields
                .get("description")
                .is_some_and(|d| d.starts_with("Use ")),
            "{}: description must say when to use the agent",
            label(&path)
        );
        let tools = fields.get("tools").map(String::as_str).unwrap_or("");
        assert!(!tools.trim().is_empty(), "{}: no tools list", label(&path));
        assert!(!body.trim().is_empty(), "{}: empty body", label(&path));
    }
}

#[test]
fn commands_have_a_description_and_may_run_specrun() {
    for path in read_dir_sorted(&root().join("plugin/commands")) {
        let text = fs::read_to_string(&path).unwrap();
        let (fields, body) = frontmatter(&text).unwrap_or_else(|e| panic!("{}: {e}", label(&path)));
        assert!(
            fields.get("description").is_some_and(|d| !d.is_empty()),
            "{}: no description",
            label(&path)
        );
        assert_eq!(
            misplaced_bang_commands(body),
            Vec::<usize>::new(),
            "{}: !`…` only runs at the start of a line",
            label(&path)
        );
        if body.lines().any(|l| l.starts_with("!`specrun ")) {
            // Outside bypass mode Claude Code refuses the `!` line without this permission.
            assert!(
                fields
                    .get("allowed-tools")
                    .is_some_and(|t| t.contains("Bash(specrun:*)")),
                "{}: runs specrun with ! but allowed-tools lacks Bash(specrun:*)",
                label(&path)
            );
        }
    }
}

/// The manifest must name every agent file: a file under plugin/agents that is not listed
/// simply does not load, and `claude plugin validate` does not notice.
#[test]
fn the_manifest_lists_every_agent_and_the_commands_directory() {
    let manifest: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(root().join("plugin/.claude-plugin/plugin.json")).unwrap(),
    )
    .unwrap();
    let listed: Vec<String> = manifest["agents"]
        .as_array()
        .expect("plugin.json agents is an array of files")
        .iter()
        .map(|v| format!("plugin/{}", v.as_str().unwrap().trim_start_matches("./")))
        .collect();
    let on_disk: Vec<String> = read_dir_sorted(&root().join("plugin/agents"))
        .iter()
        .map(|p| label(p))
        .collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, on_disk);
    let commands = manifest["commands"].as_str().expect("commands path");
    assert!(root().join("plugin").join(commands).is_dir(), "{commands}");
}

#[test]
fn every_critique_record_example_is_one_the_binary_accepts() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in shipped_markdown(&root()) {
        let text = fs::read_to_string(&file).unwrap();
        checked += fenced_blocks(&text)
            .iter()
            .filter(|(_, b)| b.contains("\"checklist\""))
            .count();
        failures.extend(check_file_records(&file, &label(&file)));
    }
    assert!(
        checked >= 1,
        "no critique record example found: is the extractor broken?"
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The lines the hooks read and the agent names they gate on are the ones the markdown
/// tells the model to print and to delegate to.
#[test]
fn the_result_lines_and_agent_names_match_the_guard() {
    use specrun::api::hooks::{COMPLETION_TOKEN, EXECUTOR_AGENT, TASK_COMPLETE_TOKEN};

    let read = |rel: &str| fs::read_to_string(root().join(rel)).unwrap();
    let implement = read("plugin/skills/implement/SKILL.md");
    assert!(
        implement.lines().any(|l| l.trim() == COMPLETION_TOKEN),
        "skills/implement/SKILL.md never shows {COMPLETION_TOKEN} alone on a line"
    );
    let claim = format!("{TASK_COMPLETE_TOKEN} <id>");
    for rel in [
        "plugin/agents/spec-executor.md",
        "plugin/references/executor-workflow.md",
    ] {
        assert!(
            read(rel).lines().any(|l| l.trim() == claim),
            "{rel} never shows `{claim}` alone on a line"
        );
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&read("plugin/.claude-plugin/plugin.json")).unwrap();
    let (plugin, agent) = EXECUTOR_AGENT.split_once(':').expect("plugin:agent");
    assert_eq!(manifest["name"], plugin);
    let (fields, _) = frontmatter(&read(&format!("plugin/agents/{agent}.md"))).unwrap();
    assert_eq!(fields.get("name").map(String::as_str), Some(agent));

    // Every `specrun:<item>` the markdown names is a skill, a command or an agent.
    let mut items: Vec<String> = read_dir_sorted(&root().join("plugin/skills"))
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for dir in ["plugin/commands", "plugin/agents"] {
        items.extend(
            read_dir_sorted(&root().join(dir))
                .iter()
                .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned()),
        );
    }
    let mut unknown = Vec::new();
    for file in shipped_markdown(&root()) {
        let text = fs::read_to_string(&file).unwrap();
        for (line, name) in plugin_item_names(&text) {
            if !items.contains(&name) {
                unknown.push(format!("{}:{line}: specrun:{name}", label(&file)));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "no such skill, command or agent:\n{}",
        unknown.join("\n")
    );
}

/// References, agents and commands are read whole by the model on every use: keep them
/// short (skills have their own, stricter limit above).
#[test]
fn references_agents_and_commands_stay_short() {
    for (dir, max) in [
        ("plugin/references", 800),
        ("plugin/agents", 600),
        ("plugin/commands", 300),
    ] {
        for path in read_dir_sorted(&root().join(dir)) {
            let words = word_count(&fs::read_to_string(&path).unwrap());
            assert!(words <= max, "{}: {words} words (max {max})", label(&path));
        }
    }
}

#[test]
fn the_tasks_template_parses_with_the_canonical_parser() {
    let text = fs::read_to_string(root().join("plugin/templates/tasks.md")).unwrap();
    let list = specrun::api::model::tasks::parse(&text);
    let counts = list.counts();
    assert!(counts.total >= 4, "template has {} tasks", counts.total);
    assert_eq!(counts.completed, 0);
    assert!(list.duplicate_ids().is_empty());
    // What the planner copies must pass `state init`: no lint error (every task has Verify).
    let errors: Vec<_> = specrun::api::model::tasks::lint::lint(&text, &list)
        .into_iter()
        .filter(|f| f.severity == specrun::api::model::tasks::lint::Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// `task complete` and `learn` append under these headings; a template with other headings
/// would leave its own sections empty and grow a second one.
#[test]
fn the_progress_template_has_the_headings_the_binary_appends_to() {
    let text = fs::read_to_string(root().join("plugin/templates/progress.md")).unwrap();
    for heading in [
        specrun::api::protocol::COMPLETED_HEADING,
        specrun::api::protocol::LEARNINGS_HEADING,
    ] {
        assert!(
            text.lines().any(|l| l.trim_end() == heading),
            "plugin/templates/progress.md lacks the line {heading:?}"
        );
    }
}

// ---- the checker itself, on fixtures ----

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/docs_contract").join(name)
}

#[test]
fn the_bad_fixture_is_rejected_with_file_and_line() {
    let path = fixture("bad.md");
    let failures = check_file_invocations(&path, "bad.md");
    let expect = [
        ("bad.md:7:", "--tick"),
        ("bad.md:9:", "taks"),
        ("bad.md:13:", "--cmd"),
        ("bad.md:14:", "--stage"),
        ("bad.md:17:", "--reason"),
        ("bad.md:20:", "--max-global"),
        ("bad.md:27:", "nxt"),
        ("bad.md:28:", "stopp"),
        ("bad.md:29:", "--follow"),
    ];
    for (at, what) in expect {
        assert!(
            failures
                .iter()
                .any(|f| f.starts_with(at) && f.contains(what)),
            "expected a failure at {at} about {what}; got:\n{}",
            failures.join("\n")
        );
    }
    assert_eq!(failures.len(), expect.len(), "\n{}", failures.join("\n"));
}

#[test]
fn the_good_fixture_passes_the_same_checker() {
    let path = fixture("good.md");
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(invocations(&text).len(), 9);
    let failures = check_file_invocations(&path, "good.md");
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn a_critique_record_the_binary_refuses_is_rejected_with_file_and_line() {
    let failures = check_file_records(&fixture("bad.md"), "bad.md");
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].starts_with("bad.md:32:") && failures[0].contains("checklistId"),
        "{failures:?}"
    );
    assert_eq!(
        check_file_records(&fixture("good.md"), "good.md"),
        Vec::<String>::new()
    );
}

#[test]
fn specrun_run_by_path_or_with_env_prefixes_is_still_checked() {
    assert_eq!(
        as_specrun("SPECRUN_BIN=/x CI=true specrun status --json").as_deref(),
        Some("specrun status --json")
    );
    assert_eq!(
        as_specrun("\"${CLAUDE_PLUGIN_ROOT}/bin/specrun\" hook stop").as_deref(),
        Some("specrun hook stop")
    );
    assert_eq!(as_specrun("git commit -m specrun"), None);
    assert_eq!(as_specrun("specrunner x"), None);
}

#[test]
fn missing_plugin_paths_are_reported_with_file_and_line() {
    let missing = missing_paths(&root(), &fixture("bad.md"), "bad.md");
    assert_eq!(missing.len(), 2, "{missing:?}");
    assert!(missing[0].starts_with("bad.md:22:") && missing[0].contains("no-such-reference.md"));
    assert!(missing[1].starts_with("bad.md:23:") && missing[1].contains("nope.md"));
}

#[test]
fn frontmatter_that_yaml_would_reject_is_refused() {
    assert!(
        frontmatter("---\nname: x\ndescription: ends with TASK_FAILED <id>: why\n---\nbody\n")
            .is_err()
    );
    assert!(frontmatter("---\ndescription: \"quoted: fine\"\n---\nbody\n").is_ok());
    assert!(frontmatter("no frontmatter\n").is_err());
    assert!(frontmatter("---\ndescription: [a\n---\n").is_err());
}

#[test]
fn a_bang_command_in_the_middle_of_a_line_is_flagged() {
    assert_eq!(
        misplaced_bang_commands("!`specrun status`\nsee !`specrun status`\n"),
        vec![2]
    );
}

// ---- the documented sequences, walked against the binary ----

use crate::docs_walk::{
    doc_command, doc_command_where, doc_sequence, read_doc, table_row, Walk, SESSION, SPEC,
};
use serde_json::Value;

const SKILL: &str = "plugin/skills/implement/SKILL.md";
const LOOP: &str = "plugin/references/coordinator-pattern.md";
const RECOVERY: &str = "plugin/references/failure-recovery.md";
const LAST_MILE: &str = "plugin/references/last-mile-autopilot.md";

/// One plain task (a new file), a `[P]` pair and a `[VERIFY]` checkpoint.
const WALK_TASKS: &str = "# Tasks\n\n## Phase 1: Build\n\
- [ ] 1.1 Add one\n  - **Do**: write src/one.txt\n  - **Files**: src/one.txt\n  - **Done when**: src/one.txt exists\n  - **Verify**: `test -f src/one.txt`\n  - **Commit**: `feat(one): add one`\n\
- [ ] 1.2 [P] Add two\n  - **Do**: write src/two.txt\n  - **Files**: src/two.txt\n  - **Done when**: it exists\n  - **Verify**: `test -f src/two.txt`\n  - **Commit**: `feat(two): add two`\n\
- [ ] 1.3 [P] Add three\n  - **Do**: write src/three.txt\n  - **Files**: src/three.txt\n  - **Done when**: it exists\n  - **Verify**: `test -f src/three.txt`\n  - **Commit**: `feat(three): add three`\n\
- [ ] 1.4 [VERIFY] Check the phase\n  - **Do**: run the checks\n  - **Done when**: all pass\n  - **Verify**: `test -f src/one.txt && test -f src/two.txt`\n";

/// implement's step 2: each gate the snapshot reports must be one the skill handles, and
/// for a run that goes on, one of those it continues on.
fn implement_may_continue(w: &Walk) -> Value {
    let (_, snapshot) = doc_command(SKILL, "specrun snapshot", &[("name", SPEC)]);
    let doc = w.json(SKILL, &snapshot);
    let skill = read_doc(SKILL);
    let go_on = skill
        .lines()
        .find(|l| l.contains("no gate: continue"))
        .expect("implement step 2 names the gates it continues on");
    for gate in doc["gates"].as_array().expect("gates") {
        let g = format!("`{}`", gate.as_str().unwrap());
        assert!(
            skill.contains(&g),
            "{SKILL} does not say what to do on gate {g}"
        );
        assert!(
            go_on.contains(&g),
            "implement stops on {g}, but the walk must go on: {doc}"
        );
    }
    doc
}

/// implement's step 3 (its `state init` line), with `extra` flags from its step 1.
fn implement_init(w: &Walk, extra: &str) -> String {
    let (_, init) = doc_command(SKILL, "specrun state init --spec", &[("name", SPEC)]);
    assert!(
        init.contains(SESSION),
        "{SKILL}: state init does not bind the session: {init}"
    );
    w.ok(SKILL, &format!("{init} {extra}"), "")
}

/// coordinator-pattern step 1: (next id, parallel group).
fn tasks_next(w: &Walk) -> (Option<String>, Vec<String>) {
    let (_, next) = doc_command(LOOP, "specrun tasks next", &[]);
    let out = w.sh(&next, "");
    let doc: Value = serde_json::from_str(&out.stdout).expect("tasks next prints JSON");
    // Exit 1 is its well-formed "nothing left", which the loop reads as `"next": null`.
    assert_eq!(
        out.code,
        if doc["next"].is_null() { 1 } else { 0 },
        "{LOOP}: `{next}`: {doc}"
    );
    let group = doc["parallelGroup"]
        .as_array()
        .expect("parallelGroup")
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    (doc["next"]["id"].as_str().map(str::to_string), group)
}

/// coordinator-pattern steps 5–6: the SubagentStop hook lets the claim through, and the
/// binary confirms it (`tasks show --json` checked, `verify status --task` exits 0).
fn confirm(w: &Walk, id: &str, agent: &str, line: &str) {
    let stop = w.hook(
        "subagent-stop",
        serde_json::json!({"hook_event_name": "SubagentStop", "agent_id": "a1",
            "agent_type": agent, "last_assistant_message": format!("Done.\n{line} {id}")}),
    );
    assert!(
        !stop.contains("\"block\""),
        "SubagentStop refused {line} {id}: {stop}"
    );
    let show_json = format!("specrun tasks show {id} --json");
    let show = doc_sequence(
        LOOP,
        &[show_json.as_str(), "specrun verify status --task"],
        &[("id", id)],
    );
    let shown: Value = serde_json::from_str(&w.ok(LOOP, &show[0], "")).unwrap();
    assert_eq!(
        shown["checked"], true,
        "{LOOP}: `{}` after {line} {id}",
        show[0]
    );
    w.ok(LOOP, &show[1], "");
}

/// Delegate the group as coordinator-pattern step 4 says, and confirm each member.
fn delegate(w: &Walk, group: &[String]) {
    let ids: Vec<&str> = group.iter().map(String::as_str).collect();
    if w.task(ids[0]).is_verify() {
        w.qa_engineer(ids[0]);
        confirm(w, ids[0], "specrun:qa-engineer", "VERIFICATION_PASS");
    } else {
        w.executors(&ids);
        for id in ids {
            confirm(w, id, "specrun:spec-executor", "TASK_COMPLETE");
        }
    }
}

/// implement steps 2–7 and coordinator-pattern's loop and "Finishing", as written, to an
/// `ALL_TASKS_COMPLETE` the Stop hook accepts.
#[test]
fn walk_the_coordinator_loop_to_an_accepted_completion() {
    let w = Walk::new(WALK_TASKS);
    implement_may_continue(&w);
    implement_init(&w, "");
    let (_, last_mile) = doc_command(SKILL, "specrun last-mile", &[("name", SPEC)]);
    last_mile_row_agrees(&w.json(SKILL, &last_mile), "implementing");
    let mut rounds = 0;
    while let (Some(_), group) = tasks_next(&w) {
        let (_, status) = doc_command(LOOP, "specrun status", &[]);
        w.ok(LOOP, &status, "");
        for id in &group {
            let prefix = format!("specrun tasks show {id}");
            let (_, show) = doc_command(LOOP, &prefix, &[("id", id)]);
            w.ok(LOOP, &show, "");
        }
        delegate(&w, &group);
        rounds += 1;
        assert!(rounds < 10, "the loop does not end");
    }
    assert_eq!(rounds, 3, "1.1, the [P] pair 1.2+1.3, then 1.4");
    last_mile_row_agrees(&w.json(SKILL, &last_mile), "verifying");
    let (_, count) = doc_command(SKILL, "specrun tasks count", &[]);
    let counted = w.ok(SKILL, &count, "");
    assert!(
        counted.contains("\"pending\":0"),
        "{SKILL} waits for `\"pending\":0`; got {counted}"
    );
    let (_, full) = doc_command(SKILL, "specrun verify run --final", &[]);
    w.ok(SKILL, &full, "");
    let (_, last_mile) = doc_command(SKILL, "specrun last-mile", &[("name", SPEC)]);
    let (_, status) = doc_command(LOOP, "specrun verify status --phase execution", &[]);
    w.ok(LOOP, &status, "");
    // The bookkeeping is not committed yet: last-mile asks for that commit, never a push.
    last_mile_row_agrees(&w.json(SKILL, &last_mile), "releasing");
    // commit-discipline.md "At the end": the bookkeeping commit, before the last line.
    let bookkeeping = read_doc("plugin/references/commit-discipline.md");
    assert!(
        bookkeeping.contains("before the final\n`ALL_TASKS_COMPLETE`"),
        "commit-discipline.md: when to commit the bookkeeping"
    );
    w.ok(
        "plugin/references/commit-discipline.md",
        "git add -- specs/demo/tasks.md specs/demo/.progress.md && git commit -q -m 'chore(demo): record completed tasks'",
        "",
    );
    last_mile_row_agrees(&w.json(SKILL, &last_mile), "releasing");
    let stop = w.hook(
        "stop",
        serde_json::json!({"hook_event_name": "Stop",
            "last_assistant_message": "All tasks are verified.\nALL_TASKS_COMPLETE"}),
    );
    assert!(
        !stop.contains("\"block\""),
        "the Stop hook refused the completion: {stop}"
    );
    assert_eq!(w.state()["phase"], "completed");
    // Every task's commit holds its own new file, and only it (commit-discipline.md).
    let log = w.p.git_cmd(&["log", "--name-only", "--format=%s"]);
    for (subject, file) in [
        ("feat(one): add one", "src/one.txt"),
        ("feat(three): add three", "src/three.txt"),
    ] {
        assert!(log.contains(&format!("{subject}\n\n{file}\n")), "{log}");
    }
}

/// coordinator-pattern step 6 on a confirmed task whose evidence went stale (a later edit
/// outside its Files): `task fail` refuses a checked task, so the step re-runs the check
/// with the command `verify status` prints instead.
#[test]
fn walk_a_checked_task_whose_evidence_went_stale() {
    let w = Walk::new(WALK_TASKS);
    implement_init(&w, "");
    delegate(&w, &["1.1".into()]);
    w.p.write("notes.txt", "an edit outside every task's Files\n");
    let (_, status) = doc_command(LOOP, "specrun verify status --task", &[("id", "1.1")]);
    let stale = w.sh(&status, "");
    assert_ne!(stale.code, 0, "{}", stale.stdout);
    let steps = read_doc(LOOP);
    let fail_rule = steps
        .split(". ")
        .find(|s| s.contains("claimed complete"))
        .expect("step 6 says when a claim is a failure");
    assert!(
        fail_rule.contains("unchecked"),
        "{LOOP}: step 6 sends a checked task to `task fail`, which refuses it: {fail_rule}"
    );
    assert!(
        steps.contains("`re-run:`"),
        "{LOOP}: step 6 does not say how to re-run"
    );
    let printed = format!("{}{}", stale.stdout, stale.stderr);
    let rerun = printed
        .lines()
        .find_map(|l| l.strip_prefix("re-run: "))
        .unwrap_or_else(|| panic!("`{status}` prints no re-run command:\n{printed}"));
    w.ok(LOOP, rerun, "");
    w.ok(LOOP, &status, "");
}

/// failure-recovery.md, recovery mode: fail, retry, insert a fix task, run the fix, run the
/// original; and a refused `task start` is still a failure the coordinator records.
#[test]
fn walk_failure_fix_task_and_retry() {
    let w = Walk::new(WALK_TASKS);
    implement_init(&w, "--recovery-mode");
    let (_, start) = doc_command(
        "plugin/references/executor-workflow.md",
        "specrun task start",
        &[("id", "1.1"), ("name", SPEC)],
    );
    let fail = |id: &str| {
        let (_, c) = doc_command(
            LOOP,
            "specrun task fail",
            &[("id", id), ("reason", "tests red")],
        );
        w.ok(LOOP, &c, "");
    };
    // Attempt 1 fails; the retry (step 3) starts again and fails the same way.
    for _ in 0..2 {
        assert_eq!(tasks_next(&w).0.as_deref(), Some("1.1"));
        w.ok("plugin/references/executor-workflow.md", &start, "");
        fail("1.1");
    }
    // Step 4: the same reason twice becomes a fix task, which is next.
    let (_, insert) = doc_command_where(
        RECOVERY,
        "specrun task fail 1.1",
        &[("id", "1.1"), ("reason", "tests red")],
        |c| c.contains("--insert"),
    );
    w.ok(RECOVERY, &insert, "");
    assert_eq!(
        tasks_next(&w),
        (Some("1.1.1".into()), vec!["1.1.1".into()]),
        "{RECOVERY}: `tasks next` names the fix task"
    );
    // last-mile-autopilot.md: run again after a failed task; it must now send the fix task,
    // not ask for one.
    let (_, last_mile) = doc_command(SKILL, "specrun last-mile", &[("name", SPEC)]);
    let said = w.json(SKILL, &last_mile)["coordinatorInstruction"].to_string();
    assert!(said.contains("Delegate task 1.1.1"), "{LAST_MILE}: {said}");
    // Delegating anything else now: the executor's start is refused, it reports
    // TASK_FAILED, and the coordinator records that as it records any failure.
    let (_, refused) = doc_command(
        "plugin/references/executor-workflow.md",
        "specrun task start",
        &[("id", "1.2"), ("name", SPEC)],
    );
    assert_ne!(w.sh(&refused, "").code, 0);
    fail("1.2");
    delegate(&w, &["1.1.1".into()]);
    assert_eq!(
        tasks_next(&w).0.as_deref(),
        Some("1.1"),
        "{RECOVERY}: the original is next again"
    );
    // It fails once more: the second fix goes below the first and is next.
    w.ok("plugin/references/executor-workflow.md", &start, "");
    fail("1.1");
    w.ok(RECOVERY, &insert, "");
    let text = w.p.read("specs/demo/tasks.md");
    let order: Vec<String> = specrun::api::model::tasks::parse(&text)
        .tasks
        .iter()
        .map(|t| t.label())
        .collect();
    assert_eq!(order[..4], ["1.1", "1.1.1", "1.1.2", "1.2"]);
    assert_eq!(tasks_next(&w).0.as_deref(), Some("1.1.2"));
    delegate(&w, &["1.1.2".into()]);
    delegate(&w, &["1.1".into()]);
    assert_eq!(tasks_next(&w).0.as_deref(), Some("1.2"));
}

/// A cap halt, the resume command the binary prints, then implement again: the raise and
/// the counters survive, and work goes on. A cancel comes back the same way.
#[test]
fn walk_halt_resume_and_implement_again() {
    let w = Walk::new(WALK_TASKS);
    implement_init(&w, "--max-global-iterations 3");
    let (_, start) = doc_command(
        "plugin/references/executor-workflow.md",
        "specrun task start",
        &[("id", "1.1"), ("name", SPEC)],
    );
    w.ok("plugin/references/executor-workflow.md", &start, "");
    let stop =
        serde_json::json!({"hook_event_name": "Stop", "last_assistant_message": "still working"});
    for _ in 0..5 {
        if w.state()["halt"].is_null() {
            w.hook("stop", stop.clone());
        }
    }
    assert_eq!(w.state()["halt"]["kind"], "global-cap", "{}", w.state());
    let (_, snapshot) = doc_command(SKILL, "specrun snapshot", &[("name", SPEC)]);
    let gates = w.json(SKILL, &snapshot)["gates"].to_string();
    assert!(gates.contains("halted"), "{gates}");
    // The person runs what `specrun status` prints (failure-recovery "Halted").
    let status = w.ok(RECOVERY, "specrun status", "");
    let resume = status
        .lines()
        .find_map(|l| {
            l.find("specrun resume")
                .map(|at| l[at..].trim_end_matches(['`', ')', '.']).to_string())
        })
        .unwrap_or_else(|| panic!("`specrun status` prints no resume command:\n{status}"));
    // The model reads the reference: the person's command is status's to print, not its.
    assert!(
        read_doc(RECOVERY).contains("a person's decisions")
            && !read_doc(RECOVERY).contains("--raise-"),
        "{RECOVERY} names a person's command, or not whose decision it is"
    );
    w.ok(RECOVERY, &resume, "");
    let raised = w.state()["maxGlobalIterations"].clone();
    let used = w.state()["globalIteration"].clone();
    assert!(
        raised.as_u64() > used.as_u64(),
        "{resume} did not lift the cap"
    );
    // `/specrun:implement` again: snapshot, state init — the raise and the counters stay.
    implement_may_continue(&w);
    implement_init(&w, "");
    let s = w.state();
    assert_eq!(
        (
            s["maxGlobalIterations"].clone(),
            s["globalIteration"].clone()
        ),
        (raised, used),
        "{RECOVERY}: implement lost the raise"
    );
    assert_eq!(s["attempts"]["1.1"][0]["status"], "running");
    assert!(!w.hook("stop", stop.clone()).contains("\"continue\":false"));
    // cancel.md, resume.md, then implement: the same execution continues.
    let (_, cancel) = doc_command("plugin/commands/cancel.md", "specrun cancel", &[]);
    w.ok("plugin/commands/cancel.md", &cancel, "");
    // resume.md shows the status; the person lifts the cancel at a shell with the
    // command that status prints there (issue 23: refused inside Claude Code).
    let (_, status) = doc_command("plugin/commands/resume.md", "specrun status", &[]);
    let shown = w.ok("plugin/commands/resume.md", &status, "");
    let resume = shown
        .lines()
        .find_map(|l| {
            l.find("specrun resume")
                .map(|at| l[at..].trim().to_string())
        })
        .unwrap_or_else(|| panic!("`specrun status` prints no resume command:\n{shown}"));
    w.ok(RECOVERY, &resume, "");
    implement_may_continue(&w);
    implement_init(&w, "");
    assert_eq!(w.state()["phase"], "execution");
    assert_eq!(w.state()["attempts"]["1.1"][0]["status"], "running");
}

/// last-mile-autopilot.md's row for the decision's `phase` (which must be `expected`) asks
/// for what the binary's `coordinatorInstruction` asks for.
fn last_mile_row_agrees(decision: &Value, expected: &str) {
    let phase = decision["phase"].as_str().expect("phase");
    assert_eq!(phase, expected, "{decision}");
    let row = table_row(LAST_MILE, phase);
    let said = decision["coordinatorInstruction"]
        .as_str()
        .expect("instruction");
    // What the instruction may ask for, and the words a row uses for it.
    let asks: [(&str, &[&str]); 4] = [
        ("specrun state init", &["state init"]),
        ("/specrun:start", &["/specrun:start"]),
        ("--phase execution", &["Finishing", "verify run"]),
        ("ALL_TASKS_COMPLETE", &["Finishing", "ALL_TASKS_COMPLETE"]),
    ];
    // The doc's one rule about pushing holds for every instruction.
    assert!(read_doc(LAST_MILE).contains("never push by yourself"));
    assert!(
        !said.contains("push") || said.to_lowercase().contains("never push"),
        "{LAST_MILE} says never push by yourself; the binary asks for a push: {said}"
    );
    for (asked, words) in asks {
        assert!(
            !said.contains(asked) || words.iter().any(|w| row.contains(w)),
            "{LAST_MILE}: the `{phase}` row does not say what the binary asks for ({asked}): {said}\n{row}"
        );
    }
}

/// The `planning` the binary returns with and without a usable tasks.md.
#[test]
fn the_last_mile_planning_row_matches_what_the_binary_says() {
    let w = Walk::new(WALK_TASKS);
    let (_, last_mile) = doc_command(SKILL, "specrun last-mile", &[("name", SPEC)]);
    last_mile_row_agrees(
        &w.json(SKILL, &last_mile.replace(" --record", "")),
        "planning",
    );
    std::fs::remove_file(w.p.path("specs/demo/tasks.md")).unwrap();
    last_mile_row_agrees(
        &w.json(SKILL, &last_mile.replace(" --record", "")),
        "planning",
    );
}

// ---- every test runs where scripts/test means it to ----------------------------------

/// The `[[test]]` targets of Cargo.toml as (name, path), and whether `autotests = false`.
fn test_targets(cargo_toml: &str) -> (Vec<(String, String)>, bool) {
    let value = |line: &str, key: &str| -> Option<String> {
        let rest = line.strip_prefix(key)?.trim_start().strip_prefix('=')?;
        Some(rest.trim().trim_matches('"').to_string())
    };
    let mut targets = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut autotests_off = false;
    for line in cargo_toml.lines().map(str::trim) {
        if line.starts_with('[') {
            targets.extend(current.take());
            if line == "[[test]]" {
                current = Some(Default::default());
            }
        } else if let Some((name, path)) = current.as_mut() {
            if let Some(v) = value(line, "name") {
                *name = v;
            } else if let Some(v) = value(line, "path") {
                *path = v;
            }
        } else if value(line, "autotests").as_deref() == Some("false") {
            autotests_off = true;
        }
    }
    targets.extend(current);
    (targets, autotests_off)
}

/// The files the module tree rooted at `root` reaches, each with its module path ("" for the
/// root). A `mod x;` whose file is missing is reported in `gaps`.
fn module_tree(
    root: &str,
    files: &BTreeMap<String, String>,
    gaps: &mut Vec<String>,
) -> Vec<(String, String)> {
    let mut reached = Vec::new();
    let mut queue = vec![(root.to_string(), String::new())];
    while let Some((file, module)) = queue.pop() {
        let Some(text) = files.get(&file) else {
            continue;
        };
        // Children of a crate root or a mod.rs sit beside it; those of x.rs in x/.
        let dir = match file.rsplit_once('/') {
            Some((dir, "mod.rs")) => dir.to_string(),
            Some((dir, _)) if file == root => dir.to_string(),
            _ => file.trim_end_matches(".rs").to_string(),
        };
        for line in text.lines().map(str::trim) {
            let line = line
                .strip_prefix("pub(crate) ")
                .or_else(|| line.strip_prefix("pub "))
                .unwrap_or(line);
            let Some(name) = line.strip_prefix("mod ").and_then(|l| l.strip_suffix(';')) else {
                continue;
            };
            let child = [format!("{dir}/{name}.rs"), format!("{dir}/{name}/mod.rs")]
                .into_iter()
                .find(|f| files.contains_key(f));
            match child {
                Some(f) => {
                    let path = if module.is_empty() {
                        name.to_string()
                    } else {
                        format!("{module}::{name}")
                    };
                    queue.push((f, path));
                }
                None => gaps.push(format!("{file}: `mod {name};` has no file")),
            }
        }
        reached.push((file, module));
    }
    reached
}

/// Each `#[test]` function of `text`: its name and its text (signature and body).
fn test_functions(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.trim_start().starts_with("#[test]") {
            continue;
        }
        let Some(at) = (i + 1..lines.len()).find(|&j| lines[j].contains("fn ")) else {
            continue;
        };
        let head = lines[at];
        let name: String = head[head.find("fn ").unwrap() + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let indent = &head[..head.len() - head.trim_start().len()];
        let end = (at..lines.len())
            .find(|&j| lines[j] == format!("{indent}}}"))
            .unwrap_or(lines.len() - 1);
        found.push((name, lines[at..=end].join("\n")));
    }
    found
}

/// The functions of `text` that give a `Harness` (the one way a test reaches Claude Code),
/// `Harness::new` itself included.
fn harness_makers(text: &str) -> Vec<String> {
    let mut makers = vec!["Harness::new(".to_string()];
    for line in text.lines().map(str::trim_start) {
        let Some(rest) = line.strip_prefix("fn ").or(line.strip_prefix("pub fn ")) else {
            continue;
        };
        if rest
            .split_once("->")
            .is_some_and(|(_, ret)| ret.contains("Harness"))
        {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            makers.push(format!("{name}("));
        }
    }
    makers
}

/// What would keep a test from running where `scripts/test` means it to: the first pass runs
/// every test but those the filter `e2e_` selects, the per-client loop runs exactly those on
/// each pinned Claude Code. So: one test binary, every test file a module of it; the loop
/// naming that binary and the filter; every test that drives Claude Code named `e2e_…`; no
/// other test's full name (module path included) holding `e2e_`. `files` maps each
/// `tests/**/*.rs` (relative to the root) to its text.
fn per_client_gaps(
    cargo_toml: &str,
    script: &str,
    files: &BTreeMap<String, String>,
) -> Vec<String> {
    use crate::e2e::{is_e2e_name, NAME_FILTER};
    let mut gaps = Vec::new();
    let (targets, autotests_off) = test_targets(cargo_toml);
    if !autotests_off {
        gaps.push("Cargo.toml: autotests = false is not set".to_string());
    }
    let [(binary, root)] = &targets[..] else {
        gaps.push(format!(
            "Cargo.toml: one [[test]] target expected: {targets:?}"
        ));
        return gaps;
    };

    let first_pass = format!("cargo test --locked -- --skip {NAME_FILTER}");
    let per_client = format!(
        "SPECRUN_E2E_CLIENT=\"$version\" cargo test --locked --test {binary} -- {NAME_FILTER}"
    );
    let runs: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && l.contains("cargo test"))
        .collect();
    if !runs.contains(&per_client.as_str()) {
        gaps.push(format!("scripts/test: no per-client line `{per_client}`"));
    }
    // A run of named `#[ignore]`d tests (the corpus check, when the corpus is present):
    // ignored tests are skipped by both passes above, and no e2e test is ignored.
    let ignored_run = format!("cargo test --locked --test {binary} -- --ignored ");
    let ignored = |r: &str| r.contains(&ignored_run) && !r.contains(NAME_FILTER);
    for run in runs
        .iter()
        .filter(|r| **r != per_client && **r != first_pass && !ignored(r))
    {
        gaps.push(format!(
            "scripts/test: `{run}` is neither the first pass `{first_pass}` nor the per-client line"
        ));
    }

    let reached = module_tree(root, files, &mut gaps);
    for file in files.keys() {
        if !reached.iter().any(|(f, _)| f == file) {
            gaps.push(format!(
                "{file} is not a module of the test binary {binary}: it never compiles"
            ));
        }
    }
    let mut e2e_tests = 0;
    for (file, module) in &reached {
        let text = &files[file];
        let makers = harness_makers(text);
        for (name, body) in test_functions(text) {
            let full = format!("{module}::{name}");
            let e2e = is_e2e_name(&full);
            e2e_tests += usize::from(e2e);
            if !e2e && full.contains(NAME_FILTER) {
                gaps.push(format!(
                    "{file}: `{full}` holds {NAME_FILTER} but is no e2e test: the first pass skips it"
                ));
            }
            if !e2e && makers.iter().any(|m| body.contains(m.as_str())) {
                gaps.push(format!(
                    "{file}: `{full}` drives Claude Code but is not named {NAME_FILTER}…: it never runs once per pinned client"
                ));
            }
        }
    }
    if e2e_tests == 0 {
        gaps.push(format!("no test named {NAME_FILTER}… in {binary}"));
    }
    gaps
}

/// `tests/**/*.rs` (fixtures aside), relative to `root`, with their text.
fn test_sources(root: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![root.join("tests")];
    while let Some(dir) = dirs.pop() {
        for path in read_dir_sorted(&dir) {
            if path.is_dir() && !path.ends_with("fixtures") {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                files.insert(rel, fs::read_to_string(&path).unwrap());
            }
        }
    }
    files
}

/// Every end-to-end test runs once per pinned client, and every other test once: the gaps
/// `per_client_gaps` looks for are none in this repository.
#[test]
fn scripts_test_runs_every_end_to_end_test_per_client() {
    let root = root();
    let gaps = per_client_gaps(
        &fs::read_to_string(root.join("Cargo.toml")).unwrap(),
        &fs::read_to_string(root.join("scripts/test")).unwrap(),
        &test_sources(&root),
    );
    assert!(gaps.is_empty(), "{}", gaps.join("\n"));
}

/// The check above fails on each way an end-to-end test could miss its per-client runs.
#[test]
fn a_test_that_would_miss_its_per_client_runs_is_found() {
    let cargo = "[package]\nautotests = false\n\n[[test]]\nname = \"t\"\npath = \"tests/t.rs\"\n";
    let script = "cargo test --locked -- --skip e2e_\nfor v in $p; do\n    SPECRUN_E2E_CLIENT=\"$version\" cargo test --locked --test t -- e2e_\ndone\n";
    // Spelt in two parts: this test's own text must not look like a call (it is checked too).
    let new = ["Harness", "::new()"].concat();
    let e2e_test = format!("#[test]\nfn e2e_1_runs() {{\n    let Some(h) = {new} else {{\n        return;\n    }};\n}}\n");
    let e2e_test = e2e_test.as_str();
    // Later entries replace earlier ones of the same path.
    let tree = |extra: &[(&str, &str)]| -> BTreeMap<String, String> {
        let files: BTreeMap<String, String> = [
            ("tests/t.rs", "mod scenarios;\nmod support;\n"),
            ("tests/scenarios.rs", e2e_test),
            ("tests/support/mod.rs", "pub fn help() {}\n"),
        ]
        .iter()
        .chain(extra)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        files
    };
    assert_eq!(
        per_client_gaps(cargo, script, &tree(&[])),
        Vec::<String>::new()
    );

    let found = |cargo: &str, script: &str, files: BTreeMap<String, String>, wanted: &str| {
        let gaps = per_client_gaps(cargo, script, &files);
        assert!(
            gaps.iter().any(|g| g.contains(wanted)),
            "no gap saying {wanted:?}: {gaps:?}"
        );
    };
    let unfiltered = script.replace(" -- e2e_\n", "\n");
    found(cargo, &unfiltered, tree(&[]), "no per-client line");
    let other_binary = script.replace("--test t ", "--test other ");
    found(cargo, &other_binary, tree(&[]), "no per-client line");
    let narrowed = script.replace(
        "cargo test --locked -- --skip",
        "cargo test --lib -- --skip",
    );
    found(cargo, &narrowed, tree(&[]), "neither the first pass");
    found(
        &cargo.replace("autotests = false\n", ""),
        script,
        tree(&[]),
        "autotests",
    );
    let two = format!("{cargo}\n[[test]]\nname = \"u\"\npath = \"tests/u.rs\"\n");
    found(&two, script, tree(&[]), "one [[test]] target");
    found(
        cargo,
        script,
        tree(&[("tests/loose.rs", e2e_test)]),
        "tests/loose.rs is not a module",
    );
    found(
        cargo,
        script,
        tree(&[("tests/t.rs", "mod scenarios;\nmod support;\nmod gone;\n")]),
        "`mod gone;` has no file",
    );
    let misnamed = e2e_test.replace("fn e2e_1_runs", "fn scenario_runs");
    found(
        cargo,
        script,
        tree(&[("tests/scenarios.rs", misnamed.as_str())]),
        "drives Claude Code but is not named",
    );
    let helper = format!("fn make() -> Option<Harness> {{\n    {new}\n}}\n\n");
    let indirect = e2e_test
        .replace("fn e2e_1_runs", "fn indirect")
        .replace(&new, "make()");
    let through_helper = format!("{helper}{e2e_test}\n{indirect}");
    found(
        cargo,
        script,
        tree(&[("tests/scenarios.rs", through_helper.as_str())]),
        "`scenarios::indirect` drives Claude Code",
    );
    let e2e_module = [
        (
            "tests/t.rs",
            "mod e2e_scenarios;\nmod scenarios;\nmod support;\n",
        ),
        ("tests/e2e_scenarios.rs", "#[test]\nfn plain() {}\n"),
    ];
    found(
        cargo,
        script,
        tree(&e2e_module),
        "holds e2e_ but is no e2e test",
    );
    let no_e2e = e2e_test
        .replace("e2e_1_runs", "runs")
        .replace(&new, "None::<()>");
    found(
        cargo,
        script,
        tree(&[("tests/scenarios.rs", no_e2e.as_str())]),
        "no test named e2e_",
    );
}

// ---------------------------------------------------------------------------------------
// Design citations: the documents the code cites are in the repository, and so are the
// sections it names.

pub mod citations {
    use std::collections::BTreeSet;
    use std::path::Path;

    /// The spec's own files in a user's project (`specs/<name>/…`): named in comments as
    /// formats, not as documents of this repository.
    const SPEC_FILES: &[&str] = &[
        "tasks.md",
        ".progress.md",
        "progress.md",
        "requirements.md",
        "design.md",
        "research.md",
    ];

    /// The text of the whole-line `//` comments of a Rust source, one line each (numbered).
    pub fn comments(text: &str) -> Vec<(usize, String)> {
        text.lines()
            .enumerate()
            .filter_map(|(i, line)| {
                let body = line.trim_start().strip_prefix("//")?;
                let body = body.trim_start_matches(['/', '!']);
                Some((i + 1, body.to_string()))
            })
            .collect()
    }

    /// The `*.md` paths a comment line names (an `#anchor` kept), placeholders and the
    /// spec's own files left out.
    pub fn md_paths(line: &str) -> Vec<String> {
        line.split(|c: char| c.is_whitespace() || "()[],;\"'`".contains(c))
            .map(|w| w.trim_end_matches(['.', ':']))
            .filter(|w| {
                let file = w.split('#').next().unwrap_or("");
                file.ends_with(".md")
                    && !file.starts_with("specs/")
                    && !file.contains(['$', '*', '{', '<'])
                    && !SPEC_FILES.contains(&file)
            })
            .map(str::to_string)
            .collect()
    }

    /// GitHub's anchor of a markdown heading: lower case, spaces to `-`, punctuation
    /// other than `-` and `_` dropped.
    pub fn anchor(heading: &str) -> String {
        heading
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect()
    }

    /// The anchors of a markdown text's headings.
    pub fn anchors(markdown: &str) -> BTreeSet<String> {
        markdown
            .lines()
            .filter_map(|l| l.strip_prefix('#'))
            .map(|l| anchor(l.trim_start_matches('#')))
            .collect()
    }

    /// Why a cited `path` (from `file`, a repository path) does not resolve: not a file
    /// of `repo` (by path, or by name when it has no directory), or a missing anchor.
    pub fn unresolved(
        file: &str,
        path: &str,
        repo: &BTreeSet<String>,
        read: &dyn Fn(&str) -> Option<String>,
    ) -> Option<String> {
        let (target, anchor) = match path.split_once('#') {
            Some((t, a)) => (t, Some(a)),
            None => (path, None),
        };
        let target = if target.starts_with("../") || target.starts_with("./") {
            let dir = Path::new(file).parent().unwrap_or(Path::new(""));
            normalise(&dir.join(target).display().to_string())
        } else {
            target.to_string()
        };
        let found = if target.contains('/') {
            repo.contains(&target).then(|| target.clone())
        } else {
            repo.iter()
                .find(|p| p.rsplit('/').next() == Some(target.as_str()))
                .cloned()
        };
        let Some(found) = found else {
            return Some(format!("`{path}` is not a file of this repository"));
        };
        let anchor = anchor?;
        let text = read(&found).unwrap_or_default();
        (!anchors(&text).contains(anchor))
            .then(|| format!("`{path}`: {found} has no heading with the anchor #{anchor}"))
    }

    fn normalise(path: &str) -> String {
        let mut parts: Vec<&str> = Vec::new();
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                p => parts.push(p),
            }
        }
        parts.join("/")
    }

    /// The section names cited as `DESIGN-NOTES "Name"` (also `DESIGN-NOTES, "Name"`,
    /// `DESIGN-NOTES ("Name")`, `DESIGN-NOTES.md, "Name"`), across line breaks and comment
    /// markers.
    pub fn notes_sections(text: &str) -> Vec<String> {
        let flat: String = text
            .lines()
            .map(|l| {
                let t = l.trim_start();
                let t = t
                    .strip_prefix("//")
                    .map_or(t, |r| r.trim_start_matches(['/', '!']));
                t.strip_prefix('#')
                    .filter(|_| !t.starts_with("##"))
                    .unwrap_or(t)
            })
            .collect::<Vec<_>>()
            .join(" ");
        let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut found = Vec::new();
        for (at, _) in flat.match_indices("DESIGN-NOTES") {
            let rest = &flat[at + "DESIGN-NOTES".len()..];
            let rest = rest.strip_prefix(".md").unwrap_or(rest);
            let rest = rest.trim_start_matches([',', ' ', '(']);
            if let Some(quoted) = rest.strip_prefix('"') {
                if let Some(end) = quoted.find('"') {
                    found.push(quoted[..end].to_string());
                }
            }
        }
        found
    }

    /// What a DESIGN-NOTES citation may name: an area (`## ` heading), one of its topics
    /// (`### `) or the bold lead of one of its entries (`- **Lead.** …`), without the
    /// final period.
    pub fn notes_names(notes: &str) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for line in notes.lines() {
            if let Some(h) = line
                .strip_prefix("## ")
                .or_else(|| line.strip_prefix("### "))
            {
                names.insert(h.trim().to_string());
            } else if let Some(rest) = line.trim_start().strip_prefix("- **") {
                if let Some(end) = rest.find("**") {
                    names.insert(rest[..end].trim_end_matches(['.', ':']).to_string());
                }
            }
        }
        names
    }
}

/// The file holding the citation patterns and their fixtures: not itself scanned.
const CITATION_CHECKER: &str = "tests/docs_contract.rs";

/// Files of the repository: tracked, or new and not ignored.
fn repo_files(root: &Path) -> std::collections::BTreeSet<String> {
    let out = std::process::Command::new("git")
        .args(["ls-files", "--cached", "--others", "--exclude-standard"])
        .current_dir(root)
        .output()
        .expect("git ls-files");
    assert!(out.status.success(), "git ls-files failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|p| root.join(p).is_file())
        .map(str::to_string)
        .collect()
}

/// Every `*.md` document a comment in src/ cites is a file of this repository (with the
/// heading its `#anchor` names), and no source cites the design by `DESIGN §`: a design
/// the code relies on lives here, in docs/design.md.
#[test]
fn every_document_the_code_cites_is_in_the_repository() {
    let root = root();
    let repo = repo_files(&root);
    let read = |p: &str| fs::read_to_string(root.join(p)).ok();
    let mut problems = Vec::new();
    let mut cited = 0;
    for file in repo
        .iter()
        .filter(|p| p.starts_with("src/") && p.ends_with(".rs"))
    {
        let text = read(file).unwrap();
        for (line, comment) in citations::comments(&text) {
            for path in citations::md_paths(&comment) {
                cited += 1;
                if let Some(why) = citations::unresolved(file, &path, &repo, &read) {
                    problems.push(format!("{file}:{line}: {why}"));
                }
            }
        }
    }
    let scanned = |p: &&String| p.as_str() != CITATION_CHECKER;
    for file in repo
        .iter()
        .filter(|p| p.ends_with(".rs") || p.ends_with(".md"))
        .filter(scanned)
    {
        let text = read(file).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if line.contains("DESIGN §") || line.contains("DESIGN.md") {
                problems.push(format!(
                    "{file}:{}: cites DESIGN, which is not in this repository (docs/design.md is)",
                    i + 1
                ));
            }
        }
    }
    assert!(
        cited > 0,
        "no document citations found: is the extractor broken?"
    );
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// Every DESIGN-NOTES section the code, the tests, the manifest or the docs name exists.
#[test]
fn every_design_notes_section_cited_exists() {
    let root = root();
    let repo = repo_files(&root);
    let names = citations::notes_names(&fs::read_to_string(root.join("DESIGN-NOTES.md")).unwrap());
    let mut problems = Vec::new();
    let mut cited = 0;
    for file in repo.iter().filter(|p| {
        let kind = [".rs", ".md", ".toml"].iter().any(|e| p.ends_with(e));
        (kind || p.starts_with("scripts/")) && p.as_str() != CITATION_CHECKER
    }) {
        let text = fs::read_to_string(root.join(file)).unwrap_or_default();
        for name in citations::notes_sections(&text) {
            cited += 1;
            if !names.contains(&name) {
                problems.push(format!("{file}: DESIGN-NOTES has no section \"{name}\""));
            }
        }
    }
    assert!(
        cited > 0,
        "no DESIGN-NOTES citations found: is the extractor broken?"
    );
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The citation checks above find what they look for.
#[test]
fn a_citation_of_a_missing_document_or_section_is_found() {
    use citations::*;
    let repo: std::collections::BTreeSet<String> =
        ["docs/design.md", "src/a.rs", "references/x.md"]
            .map(String::from)
            .into();
    let read = |p: &str| (p == "docs/design.md").then(|| "# D\n\n## State file\n".to_string());
    let text = "//! The state (docs/design.md#state-file), see x.md and DESIGN.md.\n\
                let s = \"docs/guide.md\"; // not a whole-line comment\n\
                /// tasks.md, specs/<name>/tasks.md and ../../references/x.md\n\
                // docs/design.md#gone and docs/missing.md\n";
    let cited: Vec<String> = comments(text)
        .iter()
        .flat_map(|(_, c)| md_paths(c))
        .collect();
    assert_eq!(
        cited,
        [
            "docs/design.md#state-file",
            "x.md",
            "DESIGN.md",
            "../../references/x.md",
            "docs/design.md#gone",
            "docs/missing.md"
        ]
    );
    let bad: Vec<&String> = cited
        .iter()
        .filter(|p| unresolved("src/a/b.rs", p, &repo, &read).is_some())
        .collect();
    assert_eq!(bad, ["DESIGN.md", "docs/design.md#gone", "docs/missing.md"]);
    assert_eq!(
        anchor("Hooks: the contract (Stop)"),
        "hooks-the-contract-stop"
    );

    let notes = "# Notes\n\n## Guard\n- **The Stop rules are one ordered list.** …\n";
    let names = notes_names(notes);
    let code = "// see DESIGN-NOTES \"Guard\" and (DESIGN-NOTES, \"The Stop\n// rules are one ordered list\"), DESIGN-NOTES.md, \"Gone\"; DESIGN-NOTES (\"Also gone\")\n# DESIGN-NOTES \"Toml\"\n";
    let sections = notes_sections(code);
    assert_eq!(
        sections,
        [
            "Guard",
            "The Stop rules are one ordered list",
            "Gone",
            "Also gone",
            "Toml"
        ]
    );
    let missing: Vec<&String> = sections.iter().filter(|s| !names.contains(*s)).collect();
    assert_eq!(missing, ["Gone", "Also gone", "Toml"]);
}
