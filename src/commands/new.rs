//! `specrun new NAME [--goal TEXT]`: the spec folder from the plugin's templates, made the
//! active spec, with the ignore rules that keep machine-local bookkeeping out of git.

use crate::cli::NewArgs;
use crate::error::{Error, ExitStatus, Result};
use crate::io::output;
use crate::io::project::{validate_spec_name, Project, EVENTS_DIR, SPECS_DIR};
use crate::io::store;

const TASKS_TEMPLATE: &str = include_str!("../../plugin/templates/tasks.md");
const PROGRESS_TEMPLATE: &str = include_str!("../../plugin/templates/progress.md");

/// What stays on this machine (specs/.gitignore): the state (rewritten every turn, holds
/// session ids and transcript offsets), lock sidecars, temp files of interrupted writes,
/// copies set aside by `state init --force`, and the active-spec pointer. The plan
/// (tasks.md), .progress.md, followups.json and critique/ are the record: committed.
pub const SPECS_IGNORE: &[&str] = &[
    ".current-spec",
    "*.lock",
    ".*.specrun-tmp-*",
    "*/.specrun-state.json",
    "*/.specrun-state.json.corrupt-*",
];
const IGNORE_HEADER: &str =
    "# specrun bookkeeping that stays on this machine (see specrun's README)";

pub fn run(project: &Project, args: NewArgs) -> Result<ExitStatus> {
    let name = args.name.as_str();
    check_name(name)?;
    let specs = project.specs_dir();
    let dir = specs.join(name);
    if dir.exists() || dir.is_symlink() {
        return Err(Error::Refused {
            message: format!(
                "{} already exists: see it with `specrun status {}`",
                dir.display(),
                crate::support::shell::spec_flag(name)
            ),
        });
    }
    std::fs::create_dir_all(&specs).map_err(|e| Error::io(&specs, "create directory", e))?;
    std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, "create directory", e))?;
    store::write_atomic(
        &dir.join(crate::io::project::TASKS_FILE),
        tasks_text(name).as_bytes(),
    )?;
    let goal = args
        .goal
        .as_deref()
        .unwrap_or("<the goal, in the user's words>");
    store::write_atomic(
        &dir.join(crate::io::project::PROGRESS_FILE),
        progress_text(name, goal).as_bytes(),
    )?;
    write_ignore_rules(project)?;
    store::write_atomic(&project.current_spec_path(), format!("{name}\n").as_bytes())?;
    output::line(&format!(
        "created {SPECS_DIR}/{name}/ (tasks.md, .progress.md); {name} is now the active spec."
    ));
    output::line(&format!(
        "next: write the tasks in {SPECS_DIR}/{name}/tasks.md (its comment holds one example task: one `- [ ] 1.1 Title` line each, with a **Verify** line), check them with `specrun tasks lint --spec {flag}`, then run `specrun state init --spec {flag}`; inside Claude Code, /specrun:start plans it for you.",
        flag = crate::support::shell::word(name)
    ));
    Ok(ExitStatus::Success)
}

/// Stricter than a spec name must be: a new name is a plain word others will type.
fn check_name(name: &str) -> Result<()> {
    validate_spec_name(name)?;
    let plain = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !plain {
        return Err(Error::SpecName {
            name: name.to_string(),
            reason: "use only letters, digits, `-`, `_` and `.`",
        });
    }
    Ok(())
}

/// The template's header and format notes, without its example tasks.
fn tasks_text(name: &str) -> String {
    let head = TASKS_TEMPLATE
        .split("\n## ")
        .next()
        .unwrap_or(TASKS_TEMPLATE)
        .replace("<feature>", name);
    format!("{}\n", head.trim_end())
}

fn progress_text(name: &str, goal: &str) -> String {
    PROGRESS_TEMPLATE
        .replace("<name>", name)
        .replace("<the goal as the user stated it>", goal.trim())
}

/// specs/.gitignore gains the rules it lacks; .specrun/ ignores itself whole.
pub fn write_ignore_rules(project: &Project) -> Result<()> {
    let path = project.specs_dir().join(".gitignore");
    // Through the store: a FIFO or a device here is an error, and rules that are not UTF-8
    // are refused rather than overwritten.
    let current = match store::read_optional(&path)? {
        None => String::new(),
        Some(bytes) => {
            String::from_utf8(bytes).map_err(|_| Error::NotUtf8 { path: path.clone() })?
        }
    };
    let missing = missing_rules(&current);
    if !missing.is_empty() {
        let mut text = current.clone();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        if !text.contains(IGNORE_HEADER) {
            text.push_str(IGNORE_HEADER);
            text.push('\n');
        }
        for rule in missing {
            text.push_str(rule);
            text.push('\n');
        }
        store::write_atomic(&path, text.as_bytes())?;
    }
    let events_dir = project.root.join(EVENTS_DIR);
    std::fs::create_dir_all(&events_dir)
        .map_err(|e| Error::io(&events_dir, "create directory", e))?;
    let own = events_dir.join(".gitignore");
    if !own.exists() {
        store::write_atomic(
            &own,
            b"# specrun's events log and local config: never committed\n*\n",
        )?;
    }
    Ok(())
}

fn missing_rules(current: &str) -> Vec<&'static str> {
    SPECS_IGNORE
        .iter()
        .copied()
        .filter(|rule| !current.lines().any(|l| l.trim() == *rule))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tasks_file_keeps_the_format_notes_and_one_commented_example_task() {
        let text = tasks_text("demo");
        assert!(text.starts_with("# Tasks: demo\n"), "{text}");
        assert!(
            text.contains("[VERIFY] tasks go to the qa-engineer"),
            "{text}"
        );
        assert!(
            text.contains("\n- [ ] 1.1 Add the greeting function\n"),
            "{text}"
        );
        // Inside the comment: neither a task nor a line that looks like one.
        let list = crate::model::tasks::parse(&text);
        assert_eq!(list.tasks.len(), 0);
        assert!(list.unread.is_empty(), "{:?}", list.unread);
    }

    #[test]
    fn names_must_be_plain_words() {
        for bad in ["", "a b", "x/y", ".hidden", "a*b", "..", "é"] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        check_name("my-feature_2.1").unwrap();
    }

    #[test]
    fn rules_are_added_once() {
        assert_eq!(missing_rules("").len(), SPECS_IGNORE.len());
        let all = SPECS_IGNORE.join("\n");
        assert!(missing_rules(&all).is_empty());
    }
}
