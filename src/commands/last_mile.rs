//! `specrun last-mile`: gather the facts (snapshot, evidence tree, git, PATH, optional
//! helpers) and print the coordinator's autopilot contract decided by `crate::next::last_mile`.
//! `--record` appends the decision to .specrun/events.jsonl.

use std::path::Path;

use serde_json::{Map, Value};

use crate::claude::goal::SettingsContent;
use crate::claude::probe::{find_on_path, read_settings};
use crate::cli::LastMileArgs;
use crate::error::{ExitStatus, Result};
use crate::evidence::criteria;
use crate::evidence::verify;
use crate::io::events;
use crate::io::events::{By, Event, Tag};
use crate::io::git;
use crate::io::output;
use crate::io::project::Project;
use crate::next::facts::{self, StateRead};
use crate::next::gates;
use crate::next::last_mile::{self, Availability, Capability, GitFacts, Inputs};

pub(crate) fn run(project: &Project, args: LastMileArgs) -> Result<ExitStatus> {
    let facts = facts::collect(project, args.spec.spec.as_deref())?;
    let spec = facts.spec.as_ref();
    let current_tree = match (spec, &facts.state) {
        (Some(spec), StateRead::Valid(_)) => verify::current_tree(project, spec).ok(),
        _ => None,
    };
    let git = facts.git.available.then(|| git_facts(project, &facts));
    // The spec's bookkeeping and everything `bookkeeping::roots` protects (all of specs/,
    // .specrun/, the spec directory): planning documents are not code a task drifts into. Without a spec
    // there are no tasks, so nothing is judged against it.
    let bookkeeping = spec
        .map(|spec| {
            let mut paths = verify::bookkeeping_paths(project, spec);
            paths.extend(crate::io::bookkeeping::roots(project, Some(spec)));
            paths
        })
        .unwrap_or_default();
    let root = project.root.clone();
    let runnable = move |program: &str| runnable(&root, program);
    let decision = last_mile::decide(&Inputs {
        spec: facts.input(),
        current_tree: current_tree.as_deref(),
        git,
        bookkeeping,
        runnable: &runnable,
        capabilities: capabilities(project, facts.git.available),
        blocking_followups: spec
            .map(|spec| {
                gates::blocking_followups_items(spec)
                    .into_iter()
                    .map(|i| (i.id, i.title))
                    .collect()
            })
            .unwrap_or_default(),
        uncovered_criteria: match (spec, &facts.state, facts.tasks.as_ref()) {
            (Some(spec), StateRead::Valid(s), Some(list)) if criteria::enforced(Some(s)) => {
                criteria::matrix_with(project, spec, list, Some(s))
                    .map(|m| {
                        m.uncovered()
                            .map(|r| (r.id.clone(), r.status.as_str().to_string()))
                            .collect()
                    })
                    .unwrap_or_else(|e| vec![("(unreadable)".into(), e.to_string())])
            }
            _ => Vec::new(),
        },
    });
    let value = serde_json::to_value(&decision).unwrap_or(Value::Null);
    if args.record {
        let empty = Map::new();
        let line = Event::LastMile {
            kind: Tag("last-mile"),
            decision: value.as_object().unwrap_or(&empty),
        };
        events::append(project, By::Nobody, &line)?;
    }
    output::json_pretty(&value);
    Ok(ExitStatus::Success)
}

/// A program named in a Verify command: a path relative to the project root, or a name on
/// PATH.
fn runnable(root: &Path, program: &str) -> bool {
    if program.contains('/') {
        let path = if Path::new(program).is_absolute() {
            program.into()
        } else {
            root.join(program)
        };
        return find_on_path(&path.to_string_lossy()).is_some();
    }
    find_on_path(program).is_some()
}

fn git_facts(project: &Project, facts: &facts::Facts) -> GitFacts {
    let root = &project.root;
    let mut committed_since_start = Vec::new();
    if let (Some(list), Some(state)) = (&facts.tasks, facts.state_doc()) {
        for task in list.parallel_group(list.next_index()) {
            let start = last_mile::attempts(Some(state), &task.label())
                .last()
                .filter(|a| last_mile::status_of(a) == Some("running"))
                .and_then(|a| a.start_commit.get());
            if let Some(start) = start {
                if let Ok(out) = git::run(
                    root,
                    &["diff", "--name-only", "-z", start, "HEAD", "--"],
                    &[],
                ) {
                    committed_since_start.extend(
                        out.split('\0')
                            .filter(|p| !p.is_empty())
                            .map(str::to_string),
                    );
                }
            }
        }
    }
    let has_remote = git::run(root, &["remote"], &[]).is_ok_and(|r| !r.trim().is_empty());
    let unpushed = if has_remote {
        git::run(
            root,
            &["rev-list", "--count", "HEAD", "--not", "--remotes"],
            &[],
        )
        .ok()
        .and_then(|n| n.trim().parse().ok())
    } else {
        None
    };
    // Every untracked file, not the collapsed directories `info` reports, so a new file
    // under the spec directory is recognised as bookkeeping.
    let uncommitted = git::run(
        root,
        &["status", "--porcelain=v2", "-z", "--untracked-files=all"],
        &[],
    )
    .map(|out| git::parse_status_v2(&out).changed_files)
    .unwrap_or_else(|_| facts.git.changed_files.clone());
    GitFacts {
        uncommitted,
        committed_since_start,
        unpushed,
    }
}

const BROWSERS: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "microsoft-edge",
    "firefox",
];

/// Optional helpers on this machine and in the Claude Code configuration.
fn capabilities(project: &Project, git_available: bool) -> Vec<Capability> {
    let mut caps = Vec::new();
    let browser = std::env::var("CHROME_PATH")
        .ok()
        .filter(|p| find_on_path(p).is_some())
        .or_else(|| {
            BROWSERS
                .iter()
                .find_map(|b| find_on_path(b))
                .map(|p| p.display().to_string())
        });
    caps.push(Capability {
        id: "browser".into(),
        used_for: "UI evidence: load the page, check the console, the network and what renders"
            .into(),
        availability_state: if browser.is_some() {
            Availability::Available
        } else {
            Availability::Missing
        },
        detail: browser.unwrap_or_else(|| {
            format!("none of {} on PATH and no CHROME_PATH", BROWSERS.join(", "))
        }),
        fallback_when_missing: "prove UI behaviour with the project's automated tests and say in .progress.md that no browser evidence was collected".into(),
    });
    caps.extend(mcp_servers(project));
    caps.push(Capability {
        id: "git".into(),
        used_for: "evidence fingerprints, scope-drift and release checks".into(),
        availability_state: if git_available {
            Availability::Available
        } else {
            Availability::Missing
        },
        detail: if git_available {
            "the project is a git repository".into()
        } else {
            "git is missing or the project is not a repository".into()
        },
        fallback_when_missing: "evidence binds to a content hash of the files; scope-drift and release-risk cannot be checked".into(),
    });
    let gh = find_on_path("gh");
    caps.push(Capability {
        id: "gh".into(),
        used_for: "opening the pull request when releasing".into(),
        availability_state: if gh.is_some() {
            Availability::Available
        } else {
            Availability::Missing
        },
        detail: gh
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "gh is not on PATH".into()),
        fallback_when_missing: "push with git and open the pull request by hand".into(),
    });
    caps
}

/// MCP servers declared in `.mcp.json`, the Claude Code settings files and `~/.claude.json`
/// (user scope, and this project's entry). Declared is not connected: `configured`.
fn mcp_servers(project: &Project) -> Vec<Capability> {
    let mut sources: Vec<(String, Value)> = Vec::new();
    let mut problems = Vec::new();
    let mut read = |path: &Path, pick: &dyn Fn(&Value) -> Option<Value>| {
        match crate::io::store::read_user_file(path, "MCP settings") {
            Err(_) => {}
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(doc) => {
                    if let Some(servers) = pick(&doc) {
                        sources.push((path.display().to_string(), servers));
                    }
                }
                Err(e) => problems.push(format!("{} is not valid JSON: {e}", path.display())),
            },
        }
    };
    let top = |doc: &Value| doc.get("mcpServers").cloned();
    read(&project.root.join(".mcp.json"), &top);
    if let Some(home) = std::env::var_os("HOME") {
        let root = project.root.display().to_string();
        read(&Path::new(&home).join(".claude.json"), &|doc: &Value| {
            let mut all = serde_json::Map::new();
            for servers in [
                doc.get("mcpServers"),
                doc.get("projects")
                    .and_then(|p| p.get(&root))
                    .and_then(|p| p.get("mcpServers")),
            ]
            .into_iter()
            .flatten()
            {
                if let Value::Object(map) = servers {
                    all.extend(map.clone());
                }
            }
            (!all.is_empty()).then_some(Value::Object(all))
        });
    }
    for file in read_settings(project) {
        if let SettingsContent::Parsed(doc) = &file.content {
            if let Some(servers) = top(doc) {
                sources.push((file.path.clone(), servers));
            }
        }
    }
    let mut caps: Vec<Capability> = Vec::new();
    for (source, servers) in &sources {
        let Some(map) = servers.as_object() else {
            continue;
        };
        for name in map.keys() {
            let id = format!("mcp:{name}");
            if caps.iter().any(|c| c.id == id) {
                continue;
            }
            caps.push(Capability {
                id,
                used_for: "tools the MCP server offers (documentation, browser, memory …)".into(),
                availability_state: Availability::Configured,
                detail: format!("declared in {source}; connection is checked by Claude Code"),
                fallback_when_missing: format!(
                    "work without {name} and say in .progress.md which evidence it would have given"
                ),
            });
        }
    }
    if caps.is_empty() {
        let mut detail =
            "no MCP server in .mcp.json, ~/.claude.json or the settings files".to_string();
        if !problems.is_empty() {
            detail = format!("{detail} ({})", problems.join("; "));
        }
        caps.push(Capability {
            id: "mcp".into(),
            used_for: "extra tools (documentation lookup, browser automation)".into(),
            availability_state: Availability::Missing,
            detail,
            fallback_when_missing: "use the repository's docs and tests as evidence".into(),
        });
    } else if !problems.is_empty() {
        for c in &mut caps {
            c.detail = format!("{}; also {}", c.detail, problems.join("; "));
        }
    }
    caps
}
