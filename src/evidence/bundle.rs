//! A spec's state and evidence as one JSON bundle with a SHA-256 digest (`headless
//! export`), so a CI job can hand them to the next: every file under `specs/<spec>/`, the
//! spec's events.jsonl lines, the work-tree fingerprint the evidence is bound to, and for
//! a wave member's job the task and the commit its work is on. Reading one checks its
//! format and digest before anything of it is used.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::store;

pub(crate) const FORMAT: &str = "specrun-bundle/1";

/// The state file's name inside the spec directory.
pub(crate) const STATE_FILE: &str = ".specrun-state.json";

/// A wave member's job: the task it ran and the commit its work is on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MemberInfo {
    pub task: String,
    pub commit: String,
}

/// What the digest covers: everything but the digest itself. The optional parts are left
/// out when empty, so a bundle written before they existed keeps its digest.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Body {
    pub format: String,
    pub spec: String,
    /// The work-tree fingerprint (bookkeeping excluded) at export: what the evidence binds to.
    pub tree: String,
    /// Paths relative to the spec directory, and their text.
    pub files: BTreeMap<String, String>,
    /// The spec's events.jsonl lines, as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<MemberInfo>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Bundle {
    #[serde(flatten)]
    pub body: Body,
    pub digest: String,
}

pub(crate) fn digest(body: &Body) -> String {
    crate::support::sha256::hex(&serde_json::to_vec(body).unwrap_or_default())
}

impl Bundle {
    pub(crate) fn seal(body: Body) -> Bundle {
        Bundle {
            digest: digest(&body),
            body,
        }
    }
}

/// Read a bundle: refused, naming why, when it is not one, is another format, or its
/// digest does not match its contents.
pub(crate) fn read(path: &Path) -> Result<Bundle> {
    let text = store::read_user_text(path, "bundle")?;
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
    Ok(bundle)
}

/// Every regular file under `dir` (locks and the store's temp files left out), by relative path.
pub(crate) fn collect(
    dir: &Path,
    prefix: &str,
    files: &mut BTreeMap<String, String>,
) -> Result<()> {
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

/// Where each file of `body` goes under `spec_dir`, the state last (a crash before it
/// leaves the old execution, never a new state without its evidence files); refused
/// when a path would leave the spec directory.
pub(crate) fn targets<'a>(
    body: &'a Body,
    spec_dir: &Path,
    source: &Path,
) -> Result<Vec<(PathBuf, &'a String)>> {
    let mut targets: Vec<(PathBuf, &String)> = Vec::new();
    for (rel, content) in &body.files {
        let rel_path = Path::new(rel);
        if !rel_path
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
        {
            return Err(Error::Refused {
                message: format!(
                    "{}: file {rel:?} leaves the spec directory",
                    source.display()
                ),
            });
        }
        targets.push((spec_dir.join(rel_path), content));
    }
    targets.sort_by_key(|(p, _)| p.ends_with(STATE_FILE));
    Ok(targets)
}

/// Write `targets` (from `targets`), each atomically.
pub(crate) fn write_all(targets: &[(PathBuf, &String)]) -> Result<()> {
    for (target, content) in targets {
        if let Some(parent) = target.parent() {
            store::ensure_dir(parent)?;
        }
        store::write_atomic(target, content.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_without_events_or_member_keeps_the_digest_it_had() {
        let body = Body {
            format: FORMAT.into(),
            spec: "demo".into(),
            tree: "t".into(),
            files: BTreeMap::from([("tasks.md".to_string(), "x".to_string())]),
            events: Vec::new(),
            member: None,
        };
        let text = serde_json::to_string(&body).unwrap();
        assert_eq!(
            text,
            r#"{"format":"specrun-bundle/1","spec":"demo","tree":"t","files":{"tasks.md":"x"}}"#
        );
        let sealed = Bundle::seal(body);
        assert_eq!(sealed.digest, crate::support::sha256::hex(text.as_bytes()));
    }
}
