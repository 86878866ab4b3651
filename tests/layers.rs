//! The house's dependency rule, read from the sources (ARCHITECTURE.md "Layers"): every
//! `crate::…` and `super::…` path of every file in `src/` is resolved to the module it
//! names, and
//! - a folder directly in `src/` imports only the folders below it in `LAYERS`;
//! - inside a folder, the files and subfolders import each other without a circle;
//! - `src/` itself holds only the entry points (`ENTRY_POINTS`) and the layer folders.
//!
//! A module and its own submodules may name each other (a `mod.rs` re-exports its children,
//! a child uses its parent's types through `super::`): that is one unit seen from outside.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bottom first: each may import only the ones before it. `error` is below everything,
/// `cli` (the parsed arguments) sits under the commands that take them; `lib` and `main`
/// are the top and are not checked.
const LAYERS: &[&str] = &[
    "error",
    "support",
    "io",
    "model",
    "claude",
    "evidence",
    "protocol",
    "isolation",
    "cost",
    "next",
    "hooks",
    "cli",
    "commands",
];
/// The only files directly in `src/`.
const ENTRY_POINTS: &[&str] = &["main.rs", "lib.rs", "cli.rs", "error.rs"];

type Module = Vec<String>;

/// Every violation of the rule in the crate at `src`, one line each.
pub fn violations(src: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut files = Vec::new();
    walk(src, src, &mut files);
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_file() && !ENTRY_POINTS.contains(&name.as_str()) {
            found.push(format!(
                "src/{name}: a new file directly in src/ (put it in a layer folder)"
            ));
        }
        if path.is_dir() && !LAYERS.contains(&name.as_str()) {
            found.push(format!(
                "src/{name}/: a folder that is not a layer in tests/layers.rs"
            ));
        }
    }
    let modules: BTreeSet<Module> = files.iter().map(|(m, _)| m.clone()).collect();
    // Sibling edges, grouped by their common parent: parent -> (from -> {to}).
    let mut siblings: BTreeMap<Module, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (module, rel) in &files {
        let text = mask(&std::fs::read_to_string(src.join(rel)).unwrap());
        for (line, path) in paths(&text, module) {
            let Some(target) = resolve(&modules, &path) else {
                continue;
            };
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common == module.len() || common == target.len() {
                continue; // the module itself, an ancestor or a descendant
            }
            let (from, to) = (module[common].clone(), target[common].clone());
            let parent = module[..common].to_vec();
            let edges = siblings.entry(parent).or_default();
            edges.entry(from.clone()).or_default().insert(to.clone());
            if common == 0 {
                let rank = |m: &str| LAYERS.iter().position(|l| *l == m.trim_end_matches(".rs"));
                if let (Some(a), Some(b)) = (rank(&from), rank(&to)) {
                    if a <= b {
                        found.push(format!(
                            "src/{rel}:{line}: {from} imports {} (a layer above it)",
                            target.join("::")
                        ));
                    }
                }
            }
        }
    }
    for (parent, edges) in &siblings {
        for cycle in cycles(edges) {
            let dir = parent.iter().map(|p| format!("{p}/")).collect::<String>();
            found.push(format!(
                "src/{dir}: an import circle among {}",
                cycle.join(", ")
            ));
        }
    }
    found
}

/// (module path, path relative to src) of every .rs file below `dir`; lib.rs and main.rs
/// are the crate root and not listed.
fn walk(src: &Path, dir: &Path, out: &mut Vec<(Module, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(src, &path, out);
            continue;
        }
        let rel = path
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !rel.ends_with(".rs") || rel == "lib.rs" || rel == "main.rs" {
            continue;
        }
        let mut module: Module = rel
            .trim_end_matches(".rs")
            .split('/')
            .map(String::from)
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        out.push((module, rel));
    }
}

/// The text with comments, strings and character literals blanked, offsets kept.
fn mask(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |from: usize, to: usize, out: &mut Vec<u8>| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let end = if rest.starts_with(b"//") {
            rest.iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n)
        } else if rest.starts_with(b"/*") {
            find(b, i + 2, b"*/").map_or(b.len(), |n| n + 2)
        } else if rest.starts_with(b"r\"") || rest.starts_with(b"r#") {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') || (i > 0 && is_ident(b[i - 1])) {
                i += 1;
                continue;
            }
            let close = [b"\"".as_slice(), &vec![b'#'; hashes]].concat();
            find(b, i + 2 + hashes, &close).map_or(b.len(), |n| n + close.len())
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == b'\'' && rest.len() > 2 && (rest[2] == b'\'' || rest[1] == b'\\') {
            let n = rest[1..].iter().position(|&c| c == b'\'').unwrap_or(0);
            i + n + 2
        } else {
            i += 1;
            continue;
        };
        let end = end.min(b.len());
        blank(i, end, &mut out);
        i = end;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    (from..b.len().saturating_sub(needle.len() - 1)).find(|&k| b[k..].starts_with(needle))
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Every absolute path the text names, with its line: `crate::a::b`, each leaf of a
/// `crate::{a, b::{c, d}}` tree, and `super::…` resolved against `module` (inline
/// `mod x { … }` blocks followed).
fn paths(text: &str, module: &Module) -> Vec<(usize, Vec<String>)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut inline: Vec<bool> = Vec::new(); // one per open brace: opened an inline `mod`?
    let mut i = 0;
    while i < b.len() {
        let at_word = i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':');
        if b[i] == b'{' {
            let before = text[..i].trim_end();
            let word_start = before
                .rfind(|c: char| !is_ident(c as u8))
                .map_or(0, |k| k + 1);
            let head = before[..word_start].trim_end();
            inline.push(head.ends_with("mod") && !head.ends_with("_mod"));
        } else if b[i] == b'}' {
            inline.pop();
        } else if at_word && (b[i..].starts_with(b"crate::") || b[i..].starts_with(b"super::")) {
            let mut base: Vec<String> = Vec::new();
            let mut j = i;
            if b[i..].starts_with(b"crate::") {
                j += "crate::".len();
            } else {
                let mut ups = 0;
                while b[j..].starts_with(b"super::") {
                    ups += 1;
                    j += "super::".len();
                }
                let inside = inline.iter().filter(|&&m| m).count();
                if ups <= inside {
                    i = j;
                    continue; // a `mod tests` naming its own file
                }
                let up = ups - inside;
                base = module[..module.len().saturating_sub(up)].to_vec();
            }
            let line = text[..i].matches('\n').count() + 1;
            let mut leaves = Vec::new();
            j = tree(text, j, base, &mut leaves);
            out.extend(leaves.into_iter().map(|p| (line, p)));
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// Parse a use tree at `text[i..]` below `prefix`; push each leaf path; return the end.
fn tree(text: &str, mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let b = text.as_bytes();
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let mut path = prefix;
    loop {
        i = skip_ws(i);
        if i < b.len() && b[i] == b'{' {
            i += 1;
            loop {
                i = tree(text, i, path.clone(), out);
                i = skip_ws(i);
                match b.get(i) {
                    Some(b',') => i += 1,
                    Some(b'}') => return i + 1,
                    _ => return i,
                }
                if skip_ws(i) < b.len() && b[skip_ws(i)] == b'}' {
                    return skip_ws(i) + 1;
                }
            }
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if i > start && &text[start..i] != "self" {
            path.push(text[start..i].to_string());
        }
        if i > start && b[i..].starts_with(b"::") {
            i += 2;
            continue;
        }
        out.push(path);
        return i;
    }
}

/// The longest prefix of `path` that is a module of the crate (None: the crate root).
fn resolve(modules: &BTreeSet<Module>, path: &[String]) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|k| path[..k].to_vec())
        .find(|m| modules.contains(m))
}

/// One circle per strongly connected group of more than one node (or a self-loop).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = edges.keys().chain(edges.values().flatten()).collect();
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for m in edges.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let mut groups: BTreeSet<Vec<String>> = BTreeSet::new();
    for n in &nodes {
        let from_n = reach(n);
        if !from_n.contains(*n) {
            continue;
        }
        let group: Vec<String> = from_n
            .iter()
            .filter(|m| reach(m).contains(*n))
            .cloned()
            .collect();
        groups.insert(group);
    }
    groups.into_iter().collect()
}

#[test]
fn imports_run_down_the_layers_without_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&src);
    assert!(
        found.is_empty(),
        "{} violations of the layering (ARCHITECTURE.md \"Layers\"):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The checker itself: a file that imports upward, a circle between two siblings, and a
/// stray file in src/ are each reported; a file's own tests, a module naming itself, and
/// paths inside strings are not.
#[test]
fn the_layer_check_reports_what_it_should() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod io; pub mod model;\n");
    write("io/mod.rs", "pub mod store;\npub mod git;\n");
    write(
        "io/store.rs",
        "use crate::model::state::State; // up\nuse super::git::X;\n",
    );
    write(
        "io/git.rs",
        "use crate::io::{store::{self, Y}};\nconst S: &str = \"crate::model\";\n",
    );
    write("model/mod.rs", "pub mod state;\n");
    write(
        "model/state.rs",
        "use crate::io::store;\nuse super::state::Z;\n#[cfg(test)]\nmod tests { use super::*; }\n",
    );
    write("stray.rs", "\n");
    let found = violations(&src);
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("src/io/store.rs:1: io imports model::state")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.contains("src/io/: an import circle among git, store")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|f| f.starts_with("src/stray.rs")),
        "{found:?}"
    );
    // The upward import also closes a circle with model's (downward) use of io.
    assert!(
        found
            .iter()
            .any(|f| f == "src/: an import circle among io, model"),
        "{found:?}"
    );
    assert_eq!(found.len(), 4, "{found:?}");
}

/// The files and subfolders of the layer folders that ARCHITECTURE.md's map of the tree
/// does not name, one line each. Each folder's paragraph in the map (from its `name/` line
/// to the next folder's) must name every file stem and subfolder below it as a word;
/// `commands/` is "one file per verb" and `mod.rs` is its folder.
pub fn unnamed(architecture: &str, src: &Path) -> Vec<String> {
    let map = map_paragraphs(architecture);
    let mut found = Vec::new();
    for layer in LAYERS.iter().filter(|l| src.join(l).is_dir()) {
        let Some(paragraph) = map.get(*layer) else {
            found.push(format!("src/{layer}/: no paragraph in the map"));
            continue;
        };
        if *layer == "commands" {
            continue;
        }
        let mut files = Vec::new();
        walk(src, &src.join(layer), &mut files);
        for (module, rel) in files {
            for name in module.iter().skip(1).filter(|n| !names_word(paragraph, n)) {
                found.push(format!("src/{rel}: `{name}` is not named"));
            }
        }
    }
    found.sort();
    found
}

/// The map's paragraphs by folder: the fenced block after "## Layers", split at each line
/// that starts with `name/`.
fn map_paragraphs(architecture: &str) -> BTreeMap<String, String> {
    let block = architecture
        .split("## Layers")
        .nth(1)
        .and_then(|rest| rest.split("```").nth(1))
        .unwrap_or_default();
    let mut map = BTreeMap::<String, String>::new();
    let mut current = None;
    for line in block.lines() {
        let head = line.split_whitespace().next().unwrap_or_default();
        if let Some(name) = head.strip_suffix('/').filter(|_| !line.starts_with(' ')) {
            current = Some(name.to_string());
        }
        if let Some(name) = &current {
            map.entry(name.clone()).or_default().push_str(line);
        }
    }
    map
}

fn names_word(paragraph: &str, name: &str) -> bool {
    let b = paragraph.as_bytes();
    paragraph.match_indices(name).any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| b[i]);
        let after = b.get(at + name.len()).copied();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

#[test]
fn the_architecture_map_names_every_file_of_each_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let found = unnamed(&architecture, &root.join("src"));
    assert!(
        found.is_empty(),
        "ARCHITECTURE.md's map of the tree misses {} file(s) a newcomer would look for:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The map check itself: an unnamed file, an unnamed subfolder and a folder with no
/// paragraph are reported; a name inside a longer word does not count as named.
#[test]
fn the_map_check_reports_what_it_should() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    for rel in [
        "io/mod.rs",
        "io/store.rs",
        "io/gitx.rs",
        "io/deep/mod.rs",
        "io/deep/leaf.rs",
    ] {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "\n").unwrap();
    }
    std::fs::create_dir_all(src.join("model")).unwrap();
    std::fs::write(src.join("model/mod.rs"), "\n").unwrap();
    let architecture = "# A\n\n## Layers: the tree\n\n```\nio/    store (the reader), \
                        git (the repository),\n       leaf\n```\n";
    assert_eq!(
        unnamed(architecture, &src),
        [
            "src/io/deep/leaf.rs: `deep` is not named",
            "src/io/deep/mod.rs: `deep` is not named",
            "src/io/gitx.rs: `gitx` is not named",
            "src/model/: no paragraph in the map",
        ]
    );
}
