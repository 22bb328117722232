//! The code's shape, checked as its tests check behaviour (docs/ARCHITECTURE.md, "Code map"):
//! no file of the server over 500 lines but the settings definitions; no import circle between
//! the server's files; idmint-core's error type (`error.rs` and its codes, `error_code.rs`)
//! depends on no other module of its crate, so every module may use it and no circle runs
//! through it.
//!
//! Imports are read from the source text: `use` trees and paths written out in code
//! (`crate::a::b`, `super::c`), comments and `#[cfg(test)]` modules left out (tests may import
//! what they test from anywhere). A path lands on the file of its longest module prefix, and a
//! name that file re-exports (`pub use`) lands on the file that defines it, so a facade
//! `mod.rs` re-exporting its children is not a circle with them.

#[path = "architecture/imports.rs"]
mod imports;

use std::path::{Path, PathBuf};

use imports::ModuleGraph;

/// The workspace's `crates` folder.
fn crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The longest a server file may be; the settings table is one list, read as one.
const MAX_LINES: usize = 500;

#[test]
fn no_server_file_is_over_500_lines_but_the_settings_definitions() {
    let graph = ModuleGraph::read(&crates().join("idmint-server/src"));
    let long: Vec<String> = graph
        .files()
        .filter(|(_, path)| !path.ends_with("config/definitions.rs"))
        .filter_map(|(_, path)| {
            let lines = std::fs::read_to_string(path).unwrap().lines().count();
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:#?}");
}

#[test]
fn no_import_circle_between_the_servers_files() {
    let graph = ModuleGraph::read(&crates().join("idmint-server/src"));
    let circles = graph.circles();
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn idmint_cores_error_type_depends_on_no_other_module() {
    let graph = ModuleGraph::read(&crates().join("idmint-core/src"));
    let module = |name: &str| vec![name.to_string()];
    // The codes are the error type's own vocabulary, in a file of their own that imports nothing.
    let own = [module("error"), module("error_code")];
    for file in &own {
        let outside: Vec<_> = graph
            .imports_of(file)
            .into_iter()
            .filter(|m| !own.contains(m))
            .collect();
        assert!(
            outside.is_empty(),
            "idmint-core's {file:?} imports {outside:?}"
        );
    }
}

#[test]
fn the_import_reader_sees_uses_groups_paths_and_reexports() {
    let dir = std::env::temp_dir().join(format!("idmint-arch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write("lib.rs", "mod a;\nmod b;\nmod c;\n");
    write(
        "a/mod.rs",
        "mod inner;\npub use self::inner::{Thing, other::Deep};\n",
    );
    write(
        "a/inner.rs",
        "// use crate::c::Hidden;\npub struct Thing;\n",
    );
    write(
        "b.rs",
        "use crate::{a::Thing, c};\nfn f() { super::c::g(); }\n#[cfg(test)]\nmod tests { use crate::a; }\n",
    );
    write(
        "c.rs",
        "pub fn g() { let _ = \"crate::b::x\"; crate::a::Thing; }\n",
    );
    let graph = ModuleGraph::read(&dir);
    let m = |path: &str| path.split('/').map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(graph.imports_of(&m("b")), vec![m("a/inner"), m("c")]);
    assert_eq!(graph.imports_of(&m("c")), vec![m("a/inner")]);
    assert!(graph.imports_of(&m("a/inner")).is_empty());
    assert!(graph.circles().is_empty());
    write(
        "a/inner.rs",
        "pub struct Thing;\nfn h() { crate::b::f(); }\n",
    );
    let graph = ModuleGraph::read(&dir);
    // c uses a::Thing (in a/inner), which uses b, which uses c.
    assert_eq!(graph.circles(), vec![vec![m("a/inner"), m("b"), m("c")]]);
    std::fs::remove_dir_all(&dir).unwrap();
}
