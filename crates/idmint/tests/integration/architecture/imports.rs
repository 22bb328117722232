//! Which file of a crate imports which, read from the source text (no compiler: the check
//! must run in the ordinary test suite, fast, on the files as they are).
//!
//! A module is named by its file's place (`ids/lease/take.rs` is `["ids", "lease", "take"]`,
//! `ids/mod.rs` is `["ids"]`, `lib.rs` is `[]`). Files declared only for tests
//! (`#[cfg(test)] mod x;`) are left out, as is each file's own `#[cfg(test)] mod ... { }`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root.
pub type Module = Vec<String>;

/// The files of one crate's `src` and the imports between them.
pub struct ModuleGraph {
    files: BTreeMap<Module, PathBuf>,
    edges: BTreeMap<Module, BTreeSet<Module>>,
}

impl ModuleGraph {
    /// Reads every `.rs` file under `src`.
    pub fn read(src: &Path) -> Self {
        let mut paths = Vec::new();
        walk(src, &mut paths);
        let mut files = BTreeMap::new();
        let mut texts = BTreeMap::new();
        let mut test_only = BTreeSet::new();
        for path in paths {
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: Module = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            let text = code_of(&std::fs::read_to_string(&path).unwrap());
            test_only.extend(test_only_children(&text));
            files.insert(module.clone(), path);
            texts.insert(module, text);
        }
        files.retain(|module, _| !module.last().is_some_and(|name| test_only.contains(name)));
        texts.retain(|module, _| files.contains_key(module));
        let reexports: BTreeMap<Module, BTreeMap<String, Module>> = texts
            .iter()
            .map(|(module, text)| (module.clone(), reexports_of(module, text, &files)))
            .collect();
        let resolver = Resolver {
            files: &files,
            reexports: &reexports,
        };
        let edges = texts
            .iter()
            .map(|(module, text)| {
                let imports = paths_in(text)
                    .into_iter()
                    .filter_map(|path| absolute(module, &path, &files))
                    .filter_map(|path| resolver.file_of(&path, 0))
                    // A file may use the modules it sits in (their mod.rs holds what the folder
                    // shares and declares it); only other edges can close a circle.
                    .filter(|target| !module.starts_with(target))
                    .collect();
                (module.clone(), imports)
            })
            .collect();
        Self { files, edges }
    }

    /// Every file and its module.
    pub fn files(&self) -> impl Iterator<Item = (&Module, &PathBuf)> {
        self.files.iter()
    }

    /// The files `module`'s file imports, in order.
    pub fn imports_of(&self, module: &[String]) -> Vec<Module> {
        self.edges
            .get(module)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The import circles: each strongly connected set of two or more files, sorted.
    pub fn circles(&self) -> Vec<Vec<Module>> {
        let nodes: Vec<&Module> = self.files.keys().collect();
        let reach = |from: &Module| -> BTreeSet<Module> {
            let mut seen = BTreeSet::new();
            let mut stack = vec![from.clone()];
            while let Some(at) = stack.pop() {
                for next in self.edges.get(&at).into_iter().flatten() {
                    if seen.insert(next.clone()) {
                        stack.push(next.clone());
                    }
                }
            }
            seen
        };
        let reachable: BTreeMap<&Module, BTreeSet<Module>> =
            nodes.iter().map(|&m| (m, reach(m))).collect();
        let mut circles: Vec<Vec<Module>> = Vec::new();
        for &m in &nodes {
            let circle: Vec<Module> = nodes
                .iter()
                .filter(|&&other| reachable[m].contains(other) && reachable[other].contains(m))
                .map(|&other| other.clone())
                .collect();
            if circle.len() > 1 && !circles.contains(&circle) {
                circles.push(circle);
            }
        }
        circles
    }
}

/// Finds the file of an absolute path, following re-exports.
struct Resolver<'a> {
    files: &'a BTreeMap<Module, PathBuf>,
    reexports: &'a BTreeMap<Module, BTreeMap<String, Module>>,
}

impl Resolver<'_> {
    fn file_of(&self, path: &[String], depth: usize) -> Option<Module> {
        let file = (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|prefix| self.files.contains_key(prefix))?;
        let rest = &path[file.len()..];
        if let (Some(name), true) = (rest.first(), depth < 8) {
            if let Some(target) = self.reexports.get(&file).and_then(|r| r.get(name)) {
                let mut through = target.clone();
                through.extend_from_slice(&rest[1..]);
                if let Some(found) = self.file_of(&through, depth + 1) {
                    return Some(found);
                }
            }
        }
        Some(file)
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The text with comments and string literals blanked and everything from the first
/// `#[cfg(test)] mod name {` on cut (the test modules come last in this code base).
fn code_of(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            (b'"', _) => {
                // A raw string's `r#` is left in the text, harmless; its body is skipped here
                // up to the first quote, which is enough for the paths around it.
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            (b'\'', _) if is_char_literal(&bytes[i..]) => {
                // After `'\` the escaped character itself may be a quote: look past it.
                let from = if bytes[i + 1] == b'\\' { i + 3 } else { i + 1 };
                let end = bytes[from.min(bytes.len())..]
                    .iter()
                    .position(|&b| b == b'\'')
                    .unwrap_or(0);
                i = from + end + 1;
                out.push_str("' '");
            }
            _ => {
                let ch = source[i..].chars().next().unwrap();
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    let mut cut = out.len();
    for (at, _) in out.match_indices("#[cfg(test)]") {
        let after = out[at + "#[cfg(test)]".len()..].trim_start();
        let after = after
            .strip_prefix("pub(crate)")
            .or_else(|| after.strip_prefix("pub(super)"))
            .or_else(|| after.strip_prefix("pub"))
            .unwrap_or(after)
            .trim_start();
        if let Some(rest) = after.strip_prefix("mod ") {
            let name_end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if rest[name_end..].trim_start().starts_with('{') {
                cut = at;
                break;
            }
        }
    }
    out.truncate(cut);
    out
}

/// `'x'`, `'\n'`, `'\''` rather than a lifetime `'a`.
fn is_char_literal(bytes: &[u8]) -> bool {
    match bytes.get(1) {
        Some(b'\\') => true,
        Some(_) => {
            let text = String::from_utf8_lossy(&bytes[1..bytes.len().min(6)]);
            text.chars().nth(1) == Some('\'')
        }
        None => false,
    }
}

/// Names of child modules declared for tests only (`#[cfg(test)] mod name;`, or with
/// `#[path = "file.rs"]` between, naming the file's stem).
fn test_only_children(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        let after = code[at + "#[cfg(test)]".len()..].trim_start();
        let after = match after.strip_prefix("#[path") {
            Some(rest) => rest.split_once(']').map_or("", |(_, r)| r).trim_start(),
            None => after,
        };
        let after = after
            .strip_prefix("pub(crate) ")
            .or_else(|| after.strip_prefix("pub(super) "))
            .unwrap_or(after);
        if let Some(rest) = after.strip_prefix("mod ") {
            if let Some((name, _)) = rest.split_once(';') {
                if !name.contains('{') {
                    names.push(name.trim().to_owned());
                }
            }
        }
    }
    names
}

/// The names a file re-exports (`pub use`, `pub(crate) use`, `pub(super) use`), each with the
/// absolute path it stands for.
fn reexports_of(
    module: &[String],
    code: &str,
    files: &BTreeMap<Module, PathBuf>,
) -> BTreeMap<String, Module> {
    let mut names = BTreeMap::new();
    for (statement, public) in use_statements(code) {
        if !public {
            continue;
        }
        for (path, name) in expand(&statement) {
            if let Some(path) = absolute(module, &path, files) {
                names.insert(name, path);
            }
        }
    }
    names
}

/// Every path the code names: each leaf of its `use` trees, and each `crate::`, `super::` or
/// `self::` path written elsewhere.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut paths: Vec<Vec<String>> = use_statements(code)
        .into_iter()
        .flat_map(|(statement, _)| expand(&statement).into_iter().map(|(path, _)| path))
        .collect();
    let without_uses = blank_use_statements(code);
    let bytes = without_uses.as_bytes();
    for head in ["crate::", "super::", "self::"] {
        for (at, _) in without_uses.match_indices(head) {
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let end = without_uses[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(without_uses.len(), |n| at + n);
            let path: Vec<String> = without_uses[at..end]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            paths.push(path);
        }
    }
    paths
}

/// The `use` statements (the tree after `use`, up to `;`) and whether each is a re-export.
fn use_statements(code: &str) -> Vec<(String, bool)> {
    let mut statements = Vec::new();
    for (at, _) in code.match_indices("use ") {
        let before = code[..at].trim_end();
        let public = ["pub", "pub(crate)", "pub(super)"]
            .iter()
            .any(|visibility| before.ends_with(visibility));
        let starts_statement = before.is_empty()
            || before.ends_with([';', '{', '}', ']'])
            || before.ends_with("pub")
            || before.ends_with("pub(crate)")
            || before.ends_with("pub(super)");
        if !starts_statement {
            continue;
        }
        if let Some(end) = code[at..].find(';') {
            statements.push((code[at + 4..at + end].to_owned(), public));
        }
    }
    statements
}

/// The code with its `use` statements blanked, so their heads are not read again as paths.
fn blank_use_statements(code: &str) -> String {
    let mut out = code.to_owned();
    for (statement, _) in use_statements(code) {
        out = out.replacen(&format!("use {statement};"), "", 1);
    }
    out
}

/// Each leaf of a use tree as (full path, the name it is known by here). `a::{b, c::{d as e}}`
/// gives `a::b` (b) and `a::c::d` (e); `a::{self}` gives `a` (a); a glob gives the module.
fn expand(tree: &str) -> Vec<(Vec<String>, String)> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    expand_into(&[], tree.trim(), &mut out);
    out
}

fn expand_into(prefix: &[String], tree: &str, out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim().trim_start_matches("::");
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let mut base = prefix.to_vec();
        base.extend(head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        for part in split_top_level(inner) {
            expand_into(&base, part, out);
        }
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path.trim(), Some(alias.trim())),
        None => (tree, None),
    };
    let mut full = prefix.to_vec();
    for segment in path.split("::").map(str::trim).filter(|s| !s.is_empty()) {
        if segment != "self" && segment != "*" {
            full.push(segment.to_owned());
        }
    }
    let name = alias
        .map(str::to_owned)
        .or_else(|| full.last().cloned())
        .unwrap_or_default();
    if !full.is_empty() {
        out.push((full, name));
    }
}

/// The comma-separated parts of a group, commas inside nested braces kept.
fn split_top_level(group: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&group[start..]);
    parts
}

/// The path from the crate root that `path`, written in `module`, names; `None` for another
/// crate's. A path starting with a plain name is this crate's when the name is a child module.
fn absolute(
    module: &[String],
    path: &[String],
    files: &BTreeMap<Module, PathBuf>,
) -> Option<Module> {
    let (first, rest) = path.split_first()?;
    match first.as_str() {
        "crate" => Some(rest.to_vec()),
        "self" => Some([module, rest].concat()),
        "super" => {
            let mut base = module.to_vec();
            let mut rest = path;
            while let Some(("super", tail)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
                base.pop();
                rest = tail;
            }
            Some([base.as_slice(), rest].concat())
        }
        _ => {
            let child = [module, &path[..1]].concat();
            files.contains_key(&child).then(|| [module, path].concat())
        }
    }
}
