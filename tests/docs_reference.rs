//! The README and docs/ are checked against the binary like the markdown the model reads:
//! every `specrun …` they show as a command parses with the real clap definition; every
//! command synopsis in a docs/ table (`specrun verify run [--command C] …`) names a real
//! command and only flags it has; and docs/commands.md has a row for every command, so a
//! new verb or flag without its reference fails here.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use specrun::api::cli::Cli;

use crate::docs_contract::checker::{check_invocation, invocations_with, substitute};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn docs() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files
}

fn label(path: &Path) -> String {
    path.strip_prefix(root()).unwrap().display().to_string()
}

/// A docs/ table row whose first cell is a code span starting `specrun `: a synopsis.
fn synopses(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let cell = line.strip_prefix("| `specrun ")?;
            let end = cell.find("` |")?;
            Some((
                i + 1,
                format!("specrun {}", &cell[..end].replace("\\|", "|")),
            ))
        })
        .collect()
}

/// The command a synopsis names (its leading words that are subcommands) and its flags.
fn command_and_flags(synopsis: &str) -> (Vec<String>, Vec<String>) {
    let mut cmd = Cli::command();
    let mut path = Vec::new();
    let words: Vec<&str> = synopsis.split_whitespace().skip(1).collect();
    for word in &words {
        match cmd.find_subcommand(word) {
            Some(sub) => {
                path.push(word.to_string());
                cmd = sub.clone();
            }
            None => break,
        }
    }
    let flags = words
        .iter()
        .flat_map(|w| w.split(['[', ']', '|', '(', ')', ',']))
        .filter_map(|w| w.strip_prefix("--"))
        .map(|f| f.trim_end_matches(['.', ':']).to_string())
        .filter(|f| !f.is_empty())
        .collect();
    (path, flags)
}

/// The clap command at `path`, if there is one.
fn command_at(path: &[String]) -> Option<clap::Command> {
    let mut cmd = Cli::command();
    for word in path {
        cmd = cmd.find_subcommand(word)?.clone();
    }
    Some(cmd)
}

fn long_flags(cmd: &clap::Command) -> BTreeSet<String> {
    cmd.get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .chain(["help".to_string(), "cwd".to_string()])
        .collect()
}

/// Every command a person can run (hidden ones, such as `hook`, aside).
fn leaves(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
    let subs: Vec<&clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect();
    if subs.is_empty() {
        out.push(path);
        return;
    }
    for sub in subs {
        let mut p = path.clone();
        p.push(sub.get_name().to_string());
        leaves(sub, p, out);
    }
}

#[test]
fn every_specrun_command_in_the_readme_and_docs_parses_with_the_real_cli() {
    let mut failures = Vec::new();
    let mut total = 0;
    for file in std::iter::once(root().join("README.md")).chain(docs()) {
        let text = fs::read_to_string(&file).unwrap();
        // Table synopses (`[--flag X]`) are checked below; everything else must parse.
        // A shell comment (`cmd   # why`) is no argument.
        let prose: String = text
            .lines()
            .map(|l| match l {
                l if l.starts_with("| `specrun ") => "",
                l => l.find("  # ").map_or(l, |at| &l[..at]),
            })
            .collect::<Vec<_>>()
            .join("\n");
        // `specrun hook <event>`: the placeholder is one of the events.
        let fill = |s: &str| substitute(&s.replace("<event>", "stop"));
        for snippet in invocations_with(&prose, &fill) {
            total += 1;
            if let Err(why) = check_invocation(&snippet.text) {
                failures.push(format!(
                    "{}:{}: `{}`: {why}",
                    label(&file),
                    snippet.line,
                    snippet.text
                ));
            }
        }
    }
    assert!(total >= 50, "only {total} invocations found");
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn every_synopsis_in_docs_names_a_real_command_and_only_its_flags() {
    let mut failures = Vec::new();
    let mut total = 0;
    for file in docs() {
        let text = fs::read_to_string(&file).unwrap();
        for (line, synopsis) in synopses(&text) {
            total += 1;
            let (path, flags) = command_and_flags(&synopsis);
            let cmd = command_at(&path).unwrap();
            if cmd.has_subcommands() {
                failures.push(format!(
                    "{}:{line}: `{synopsis}` names no command",
                    label(&file)
                ));
                continue;
            }
            let known = long_flags(&cmd);
            for flag in flags.iter().filter(|f| !known.contains(*f)) {
                failures.push(format!(
                    "{}:{line}: `specrun {}` has no --{flag}",
                    label(&file),
                    path.join(" ")
                ));
            }
        }
    }
    assert!(total >= 30, "only {total} synopses found");
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn the_command_reference_has_a_row_for_every_command_and_flag() {
    let text = fs::read_to_string(root().join("docs/commands.md")).unwrap();
    let rows: Vec<(Vec<String>, Vec<String>)> = synopses(&text)
        .iter()
        .map(|(_, s)| command_and_flags(s))
        .collect();
    let mut all = Vec::new();
    leaves(&Cli::command(), Vec::new(), &mut all);
    let mut missing = Vec::new();
    for path in &all {
        let documented: BTreeSet<&String> = rows
            .iter()
            .filter(|(p, _)| p == path)
            .flat_map(|(_, f)| f)
            .collect();
        if !rows.iter().any(|(p, _)| p == path) {
            missing.push(format!("specrun {}: no row", path.join(" ")));
            continue;
        }
        let cmd = command_at(path).unwrap();
        for flag in long_flags(&cmd) {
            // Every command takes these; the page says so once.
            let common = ["help", "cwd", "spec", "json"].contains(&flag.as_str());
            if !common && !documented.contains(&flag) {
                missing.push(format!(
                    "specrun {}: --{flag} is not in its row",
                    path.join(" ")
                ));
            }
        }
    }
    assert!(all.len() >= 30, "only {} commands", all.len());
    assert!(
        missing.is_empty(),
        "docs/commands.md:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_synopsis_reader_finds_commands_and_flags() {
    let (path, flags) =
        command_and_flags("specrun verify run [--command C] [--phase P | --task ID]");
    assert_eq!(path, ["verify", "run"]);
    assert_eq!(flags, ["command", "phase", "task"]);
    let rows = synopses("| `specrun completions bash\\|zsh` | x |\n| other | y |\n");
    assert_eq!(rows, [(1, "specrun completions bash|zsh".to_string())]);
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim_start_matches('#')
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

/// Relative links (`[x](docs/a.md#b)`): the file exists and, with an anchor, has that heading.
fn broken_links(file: &Path) -> Vec<String> {
    let text = fs::read_to_string(file).unwrap();
    let mut broken = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices("](") {
            let target = &line[at + 2..];
            let target = &target[..target.find(')').unwrap_or(target.len())];
            if target.contains("://") || target.is_empty() {
                continue;
            }
            let (rel, frag) = target.split_once('#').unwrap_or((target, ""));
            let path = if rel.is_empty() {
                file.to_path_buf()
            } else {
                file.parent().unwrap().join(rel)
            };
            let ok = match fs::read_to_string(&path) {
                Err(_) => path.is_dir() && frag.is_empty(),
                Ok(_) if frag.is_empty() => true,
                Ok(doc) => doc
                    .lines()
                    .filter(|l| l.starts_with('#'))
                    .any(|h| anchor(h) == frag),
            };
            if !ok {
                broken.push(format!("{}:{}: {target}", label(file), i + 1));
            }
        }
    }
    broken
}

#[test]
fn every_link_in_the_readme_and_docs_leads_somewhere() {
    let mut broken = Vec::new();
    for file in std::iter::once(root().join("README.md")).chain(docs()) {
        broken.extend(broken_links(&file));
        broken.extend(
            crate::docs_contract::checker::missing_paths(&root(), &file, &label(&file))
                .into_iter()
                .filter(|m| !m.contains(".md#")),
        );
    }
    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
    assert_eq!(anchor("## The shell flow"), "the-shell-flow");
}

/// The README is for a person's first screen: short, the two commands near the top.
#[test]
fn the_readme_is_short_and_starts_with_the_two_commands() {
    let text = fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() <= 200, "README has {} lines", lines.len());
    for command in ["cargo install --locked --path .", "scripts/test"] {
        let at = lines.iter().position(|l| l.starts_with(command));
        assert!(
            at.is_some_and(|i| i < 40),
            "`{command}` is not in the README's first 40 lines (line {at:?})"
        );
    }
}
