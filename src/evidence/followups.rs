//! Follow-up items found while executing (`specs/<name>/followups.json`,
//! docs/design.md#records): pure operations over the parsed store, and `load`, which reads
//! it for the verbs, the gates and the report. An open `VERIFY`/`high` item blocks
//! completion; the guard asks `blocking_open`.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::io::project::Spec;
use crate::io::store;

pub(crate) const STORE_VERSION: u64 = 1;
/// Open items allowed per task (items without a task share one bucket).
pub(crate) const MAX_OPEN_PER_TASK: usize = 10;
pub(crate) const CATEGORIES: &[&str] = &["VERIFY", "REFAC", "IDEA"];
pub(crate) const PRIORITIES: &[&str] = &["high", "medium", "low"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Item {
    pub id: String,
    pub category: String,
    pub priority: String,
    pub title: String,
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub files: Vec<String>,
    pub status: String,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Item {
    pub(crate) fn is_open(&self) -> bool {
        self.status == "open"
    }

    /// Open, VERIFY and high: completion waits for it.
    pub(crate) fn is_blocking(&self) -> bool {
        self.is_open() && self.category == "VERIFY" && self.priority == "high"
    }

    /// `F3 [VERIFY/high] open: title (task 1.2)`.
    pub(crate) fn summary(&self) -> String {
        let task = self
            .task
            .as_ref()
            .map(|t| format!(" (task {t})"))
            .unwrap_or_default();
        format!(
            "{} [{}/{}] {}: {}{task}",
            self.id,
            self.category,
            self.priority,
            self.status,
            crate::support::visible::line(&self.title)
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Store {
    pub version: u64,
    pub items: Vec<Item>,
}

impl Default for Store {
    fn default() -> Self {
        Store {
            version: STORE_VERSION,
            items: Vec::new(),
        }
    }
}

/// What `add` was asked for.
#[derive(Debug, Clone)]
pub(crate) struct NewItem {
    pub category: String,
    pub priority: String,
    pub title: String,
    pub task: Option<String>,
    pub files: Vec<String>,
}

impl Store {
    /// Parse a followups.json document at `path` (`None` = no file yet). The error names
    /// the file and what is wrong.
    pub(crate) fn from_json(doc: Option<&Value>, path: &Path) -> Result<Store> {
        let shape = |message: String| Error::Shape {
            path: path.to_path_buf(),
            message,
        };
        let Some(doc) = doc else {
            return Ok(Store::default());
        };
        let store: Store = serde_json::from_value(doc.clone()).map_err(|e| shape(e.to_string()))?;
        for item in &store.items {
            if !CATEGORIES.contains(&item.category.as_str()) {
                return Err(shape(format!(
                    "item {} has unknown category {:?}",
                    item.id, item.category
                )));
            }
            if !PRIORITIES.contains(&item.priority.as_str()) {
                return Err(shape(format!(
                    "item {} has unknown priority {:?}",
                    item.id, item.priority
                )));
            }
            if item.status != "open" && item.status != "resolved" {
                return Err(shape(format!(
                    "item {} has unknown status {:?}",
                    item.id, item.status
                )));
            }
        }
        Ok(store)
    }

    pub(crate) fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("the store always serialises")
    }

    pub(crate) fn open(&self) -> impl Iterator<Item = &Item> {
        self.items.iter().filter(|i| i.is_open())
    }

    pub(crate) fn blocking_open(&self) -> Vec<&Item> {
        self.items.iter().filter(|i| i.is_blocking()).collect()
    }

    /// Next free id: `F<max+1>`, so a resolved item's id is never reused.
    fn next_id(&self) -> String {
        let max = self
            .items
            .iter()
            .filter_map(|i| i.id.strip_prefix('F')?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        format!("F{}", max.saturating_add(1))
    }

    /// Add an open item; refused when its task already has `MAX_OPEN_PER_TASK` open items.
    pub(crate) fn add(&mut self, new: NewItem, now: &str) -> Result<&Item> {
        if !CATEGORIES.contains(&new.category.as_str()) {
            return Err(refused(format!(
                "category must be one of {}",
                CATEGORIES.join(", ")
            )));
        }
        if !PRIORITIES.contains(&new.priority.as_str()) {
            return Err(refused(format!(
                "priority must be one of {}",
                PRIORITIES.join(", ")
            )));
        }
        let title = new.title.trim();
        if title.is_empty() {
            return Err(refused("the title is empty".into()));
        }
        let open_for_task = self.open().filter(|i| i.task == new.task).count();
        if open_for_task >= MAX_OPEN_PER_TASK {
            let whose = match &new.task {
                Some(t) => format!("task {t}"),
                None => "items without a task".into(),
            };
            return Err(refused(format!(
                "{whose} already has {open_for_task} open follow-ups (at most {MAX_OPEN_PER_TASK}); resolve one first"
            )));
        }
        let item = Item {
            id: self.next_id(),
            category: new.category,
            priority: new.priority,
            title: title.to_string(),
            task: new.task,
            files: new.files,
            status: "open".into(),
            created_at: now.to_string(),
            resolved_at: None,
            note: None,
        };
        self.items.push(item);
        Ok(self.items.last().expect("just pushed"))
    }

    /// Resolve an item. `Ok(false)` when it was already resolved (nothing changes).
    pub(crate) fn resolve(&mut self, id: &str, note: &str, now: &str) -> Result<bool> {
        let item = self
            .items
            .iter_mut()
            .find(|i| i.id == id)
            .ok_or_else(|| refused(format!("no follow-up with id {id}")))?;
        if !item.is_open() {
            return Ok(false);
        }
        if note.trim().is_empty() {
            return Err(refused("the note is empty: say how it was resolved".into()));
        }
        item.status = "resolved".into();
        item.resolved_at = Some(now.to_string());
        item.note = Some(note.trim().to_string());
        Ok(true)
    }
}

/// The store `doc` holds (absent = empty), or an error naming the spec's file.
pub(crate) fn parse_store(spec: &Spec, doc: Option<&Value>) -> Result<Store> {
    Store::from_json(doc, &spec.followups_path())
}

/// A change to the store refused: the sentence says why.
fn refused(message: String) -> Error {
    Error::Refused { message }
}

/// The spec's follow-ups as stored (an absent file is an empty store).
pub(crate) fn load(spec: &Spec) -> Result<Store> {
    let doc = store::read_json(&spec.followups_path())?;
    parse_store(spec, doc.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn new(cat: &str, pri: &str, task: Option<&str>) -> NewItem {
        NewItem {
            category: cat.into(),
            priority: pri.into(),
            title: "look at it".into(),
            task: task.map(str::to_string),
            files: vec!["src/a.rs".into()],
        }
    }

    #[test]
    fn add_numbers_items_and_caps_open_per_task() {
        let mut s = Store::default();
        for _ in 0..MAX_OPEN_PER_TASK {
            s.add(new("IDEA", "low", Some("1.2")), "t").unwrap();
        }
        let err = s
            .add(new("IDEA", "low", Some("1.2")), "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("task 1.2 already has 10 open"), "{err}");
        // Another task and the no-task bucket are separate.
        assert_eq!(
            s.add(new("IDEA", "low", Some("1.3")), "t").unwrap().id,
            "F11"
        );
        s.add(new("IDEA", "low", None), "t").unwrap();
        // Resolving one frees a slot; ids are never reused.
        assert!(s.resolve("F1", "done", "t2").unwrap());
        assert_eq!(
            s.add(new("REFAC", "low", Some("1.2")), "t").unwrap().id,
            "F13"
        );
    }

    #[test]
    fn bad_values_are_refused() {
        let mut s = Store::default();
        assert!(s
            .add(new("BUG", "low", None), "t")
            .unwrap_err()
            .to_string()
            .contains("category"));
        assert!(s
            .add(new("IDEA", "urgent", None), "t")
            .unwrap_err()
            .to_string()
            .contains("priority"));
        let mut blank = new("IDEA", "low", None);
        blank.title = "  ".into();
        assert!(s.add(blank, "t").unwrap_err().to_string().contains("title"));
        assert!(s.items.is_empty());
    }

    #[test]
    fn resolve_is_idempotent_and_names_unknown_ids() {
        let mut s = Store::default();
        s.add(new("VERIFY", "high", None), "t").unwrap();
        assert!(s
            .resolve("F9", "x", "t")
            .unwrap_err()
            .to_string()
            .contains("no follow-up with id F9"));
        assert!(s
            .resolve("F1", " ", "t")
            .unwrap_err()
            .to_string()
            .contains("note"));
        assert!(s.resolve("F1", "checked by hand", "t2").unwrap());
        assert!(!s.resolve("F1", "again", "t3").unwrap());
        assert_eq!(s.items[0].note.as_deref(), Some("checked by hand"));
        assert_eq!(s.items[0].resolved_at.as_deref(), Some("t2"));
    }

    #[test]
    fn only_open_verify_high_blocks() {
        let mut s = Store::default();
        s.add(new("VERIFY", "high", Some("1")), "t").unwrap();
        s.add(new("VERIFY", "medium", Some("1")), "t").unwrap();
        s.add(new("REFAC", "high", Some("1")), "t").unwrap();
        assert_eq!(s.blocking_open().len(), 1);
        let doc = s.to_json();
        assert_eq!(
            Store::from_json(Some(&doc), Path::new("f.json"))
                .unwrap()
                .blocking_open()[0]
                .id,
            "F1"
        );
        s.resolve("F1", "ok", "t").unwrap();
        assert!(s.blocking_open().is_empty());
        assert!(Store::from_json(None, Path::new("f.json"))
            .unwrap()
            .blocking_open()
            .is_empty());
    }

    #[test]
    fn round_trips_the_shared_format_and_rejects_bad_stores() {
        let doc = json!({"version": 1, "items": [{"id": "F1", "category": "VERIFY", "priority": "high",
            "title": "t", "task": null, "files": [], "status": "open", "createdAt": "x"}]});
        let s = Store::from_json(Some(&doc), Path::new("f.json")).unwrap();
        assert_eq!(s.to_json(), doc);
        let bad = json!({"version": 1, "items": [{"id": "F1", "category": "BUG", "priority": "high",
            "title": "t", "status": "open", "createdAt": "x"}]});
        assert!(Store::from_json(Some(&bad), Path::new("f.json"))
            .unwrap_err()
            .to_string()
            .contains("category"));
        assert!(Store::from_json(Some(&json!([])), Path::new("f.json")).is_err());
    }
}
