//! `specrun headless export` / `import` (issue 29): a spec's state and evidence — every file
//! under `specs/<spec>/` (tasks.md, the state with its evidence records, critiques,
//! .progress.md) — as one JSON bundle with a SHA-256 digest, so a CI job can hand them to
//! the next. Import checks the digest and that this checkout's tree is the one the bundle
//! was exported from (the evidence is bound to it) before it writes anything.

use std::collections::BTreeMap;

use crate::cli::{HeadlessExportArgs, HeadlessImportArgs};
use crate::commands::exec::Exec;
use crate::error::{Error, ExitStatus, Result};
use crate::evidence::bundle::{self, Body, Bundle, MemberInfo, FORMAT};
use crate::evidence::verify;
use crate::io::output;
use crate::io::project::{Project, Spec};
use crate::io::store;

pub(crate) fn export(project: &Project, args: HeadlessExportArgs) -> Result<ExitStatus> {
    let ex = Exec::existing(project, args.spec.spec.as_deref())?;
    let mut files = BTreeMap::new();
    bundle::collect(&ex.spec.dir, "", &mut files)?;
    let member = match &args.task {
        Some(id) => {
            ex.require_task(id)?;
            Some(member_info(project, &ex.spec, id)?)
        }
        None => None,
    };
    let body = Body {
        format: FORMAT.into(),
        spec: ex.spec.name.clone(),
        tree: verify::current_tree(project, &ex.spec)?,
        files,
        events: crate::io::events::spec_lines(project, &ex.spec.name)?,
        member,
    };
    let bundle = Bundle::seal(body);
    let bytes = store::to_pretty_bytes(&bundle);
    match args.out {
        Some(path) => {
            store::write_atomic(&project.cwd.join(&path), &bytes)?;
            output::line(&format!(
                "exported spec {} ({} files, {} events, tree {}, digest {}) to {}",
                bundle.body.spec,
                bundle.body.files.len(),
                bundle.body.events.len(),
                bundle.body.tree,
                bundle.digest,
                path.display()
            ));
        }
        None => output::raw(&String::from_utf8_lossy(&bytes)),
    }
    Ok(ExitStatus::Success)
}

/// A member job's task and HEAD: its work must be committed (nothing changed outside the
/// bookkeeping), so the commit's tree is the tree its evidence is bound to.
fn member_info(project: &Project, spec: &Spec, id: &str) -> Result<MemberInfo> {
    let info = crate::io::git::info(&project.root);
    let Some(commit) = info.head.clone().filter(|_| info.available) else {
        return Err(Error::Refused {
            message: format!(
                "{} has no git commit: a member's work travels as a commit (`git commit` it first)",
                project.root.display()
            ),
        });
    };
    let dirty = crate::isolation::worktree::dirty_files(project, spec, &info.changed_files);
    if !dirty.is_empty() {
        return Err(Error::Refused {
            message: format!(
                "task {id}'s work is not all committed ({}): commit it, so the merge job gets what the evidence saw; nothing exported",
                crate::isolation::worktree::list_some(&dirty)
            ),
        });
    }
    Ok(MemberInfo {
        task: id.to_string(),
        commit,
    })
}

pub(crate) fn import(project: &Project, args: HeadlessImportArgs) -> Result<ExitStatus> {
    let path = project.cwd.join(&args.file);
    let bundle = bundle::read(&path)?;
    let body = &bundle.body;
    let ex = Exec::new(project, Some(&body.spec))?;
    let tree = verify::current_tree(project, &ex.spec)?;
    if tree != body.tree {
        return Err(Error::Refused {
            message: format!(
                "spec {}: this checkout's tree is {tree}, the bundle's evidence is bound to {}: check out the commit the bundle was exported from; nothing imported",
                body.spec, body.tree
            ),
        });
    }
    let targets = bundle::targets(body, &ex.spec.dir, &path)?;
    bundle::write_all(&targets)?;
    let events = crate::io::events::adopt(project, &body.spec, &body.events)?;
    output::line(&format!(
        "imported spec {} ({} files, {events} new events) on tree {}",
        body.spec,
        targets.len(),
        tree
    ));
    Ok(ExitStatus::Success)
}
