//! The relative links of the repository's Markdown files: each must name a file that exists
//! and, with a `#anchor` into a Markdown file, one of its headings.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Every Markdown file of the repository, skipping build output, installed packages and
/// hidden folders.
pub fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            if path.is_dir() {
                folders.push(path);
            } else if name.ends_with(".md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The lines of `markdown` outside fenced code blocks (none for a line inside one, so line
/// numbers hold).
fn outside_fences(markdown: &str) -> Vec<Option<&str>> {
    let mut fence = 0;
    markdown
        .lines()
        .map(|line| {
            let ticks = line.trim_start().bytes().take_while(|&b| b == b'`').count();
            if fence == 0 && ticks >= 3 {
                fence = ticks;
                None
            } else if fence > 0 {
                if ticks >= fence && line.trim_start()[ticks..].trim().is_empty() {
                    fence = 0;
                }
                None
            } else {
                Some(line)
            }
        })
        .collect()
}

/// A line with its `code spans` blanked: a link inside one is an example, not a link.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code { ' ' } else { c });
        }
    }
    out
}

/// The targets of the inline links and images of a line: `[text](target "title")`.
fn targets(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let inside = after[..end].trim();
        let target = inside
            .strip_prefix('<')
            .and_then(|t| t.split('>').next())
            .unwrap_or_else(|| inside.split_whitespace().next().unwrap_or(""));
        found.push(target.to_owned());
        rest = &after[end..];
    }
    found
}

/// The anchors GitHub gives a Markdown file's headings: lower case, punctuation dropped
/// (letters, digits, `-` and `_` kept), spaces made `-`, a repeated one suffixed `-1`, `-2`...
pub fn anchors(markdown: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for line in outside_fences(markdown).into_iter().flatten() {
        let hashes = line.bytes().take_while(|&b| b == b'#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = line[hashes..]
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut candidate = slug.clone();
        let mut n = 0;
        while seen.contains(&candidate) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
        seen.insert(candidate);
    }
    seen
}

/// The broken relative links of `file` (`path:line: target: why`).
pub fn broken_links(file: &Path, root: &Path) -> Vec<String> {
    let Ok(markdown) = std::fs::read_to_string(file) else {
        return vec![format!("{}: unreadable", file.display())];
    };
    let shown = file
        .strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string();
    let folder = file.parent().unwrap_or(root);
    let mut broken = Vec::new();
    for (index, line) in outside_fences(&markdown).into_iter().enumerate() {
        let Some(line) = line else { continue };
        for target in targets(&without_code_spans(line)) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.to_path_buf()
            } else {
                folder.join(path)
            };
            let at = format!("{shown}:{}: {target}", index + 1);
            if !resolved.exists() {
                broken.push(format!("{at}: no such file"));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if resolved.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&resolved).unwrap_or_default();
                if !anchors(&text).contains(anchor) {
                    broken.push(format!("{at}: no heading has this anchor"));
                }
            }
        }
    }
    broken
}
