//! `specrun headless export` / `import` (issue 29): a spec's state and evidence — every file
//! under `specs/<spec>/` (tasks.md, the state with its evidence records, critiques,
//! .progress.md) — as one JSON bundle with a SHA-256 digest, so a CI job can hand them to
//! the next. Import checks the digest and that this checkout's tree is the one the bundle
//! was exported from (the evidence is bound to it) before it writes anything.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cli::{HeadlessExportArgs, HeadlessImportArgs};
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::verify;
use crate::io::output;
use crate::io::project::Project;
use crate::io::store;

const FORMAT: &str = "specrun-bundle/1";

/// What the digest covers: everything but the digest itself.
#[derive(Debug, Serialize, Deserialize)]
struct Body {
    format: String,
    spec: String,
    /// The work-tree fingerprint (bookkeeping excluded) at export: what the evidence binds to.
    tree: String,
    /// Paths relative to the spec directory, and their text.
    files: BTreeMap<String, String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Bundle {
    #[serde(flatten)]
    body: Body,
    digest: String,
}

fn digest(body: &Body) -> String {
    crate::support::sha256::hex(&serde_json::to_vec(body).unwrap_or_default())
}

pub(crate) fn export(project: &Project, args: HeadlessExportArgs) -> Result<ExitStatus> {
    let ex = Exec::existing(project, args.spec.spec.as_deref())?;
    let mut files = BTreeMap::new();
    collect(&ex.spec.dir, "", &mut files)?;
    let body = Body {
        format: FORMAT.into(),
        spec: ex.spec.name.clone(),
        tree: verify::current_tree(project, &ex.spec)?,
        files,
    };
    let bundle = Bundle {
        digest: digest(&body),
        body,
    };
    let bytes = store::to_pretty_bytes(&bundle);
    match args.out {
        Some(path) => {
            store::write_atomic(&project.cwd.join(&path), &bytes)?;
            output::line(&format!(
                "exported spec {} ({} files, tree {}, digest {}) to {}",
                bundle.body.spec,
                bundle.body.files.len(),
                bundle.body.tree,
                bundle.digest,
                path.display()
            ));
        }
        None => output::raw(&String::from_utf8_lossy(&bytes)),
    }
    Ok(ExitStatus::Success)
}

/// Every regular file under `dir` (locks and the store's temp files left out), by relative path.
fn collect(dir: &Path, prefix: &str, files: &mut BTreeMap<String, String>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, "list", e))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = format!("{prefix}{name}");
        let kind = entry
            .file_type()
            .map_err(|e| Error::io(entry.path(), "stat", e))?;
        if kind.is_dir() {
            collect(&entry.path(), &format!("{rel}/"), files)?;
        } else if kind.is_file() && !name.ends_with(".lock") && !store::is_temp_name(&name) {
            files.insert(rel, store::read_text(&entry.path(), "bundle file")?);
        }
    }
    Ok(())
}

pub(crate) fn import(project: &Project, args: HeadlessImportArgs) -> Result<ExitStatus> {
    let path = project.cwd.join(&args.file);
    let text = store::read_user_text(&path, "bundle")?;
    let bundle: Bundle = serde_json::from_str(&text).map_err(|e| Error::BadInput {
        what: "bundle",
        message: format!("{}: {e}", path.display()),
    })?;
    let body = &bundle.body;
    let refuse = |message: String| Err(Error::Refused { message });
    if body.format != FORMAT {
        return refuse(format!(
            "{}: format {:?}, not {FORMAT}",
            path.display(),
            body.format
        ));
    }
    let actual = digest(body);
    if actual != bundle.digest {
        return refuse(format!(
            "{}: the digest does not match its contents (recorded {}, computed {actual}): nothing imported",
            path.display(),
            bundle.digest
        ));
    }
    crate::io::project::validate_spec_name(&body.spec)?;
    let ex = Exec::new(project, Some(&body.spec))?;
    let tree = verify::current_tree(project, &ex.spec)?;
    if tree != body.tree {
        return refuse(format!(
            "spec {}: this checkout's tree is {tree}, the bundle's evidence is bound to {}: check out the commit the bundle was exported from; nothing imported",
            body.spec, body.tree
        ));
    }
    let mut targets: Vec<(PathBuf, &String)> = Vec::new();
    for (rel, content) in &body.files {
        let rel_path = Path::new(rel);
        if !rel_path
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
        {
            return refuse(format!(
                "{}: file {rel:?} leaves the spec directory",
                path.display()
            ));
        }
        targets.push((ex.spec.dir.join(rel_path), content));
    }
    // The state last: a crash before it leaves the old execution, never a new state
    // without its evidence files.
    targets.sort_by_key(|(p, _)| p.ends_with(".specrun-state.json"));
    for (target, content) in &targets {
        if let Some(parent) = target.parent() {
            store::ensure_dir(parent)?;
        }
        store::write_atomic(target, content.as_bytes())?;
    }
    output::line(&format!(
        "imported spec {} ({} files) on tree {}",
        body.spec,
        targets.len(),
        tree
    ));
    Ok(ExitStatus::Success)
}
