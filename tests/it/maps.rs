//! The maps of the code stay true: each crate's documentation names every public module it has,
//! and CONTRIBUTING's layout names every module of the library crates.

use crate::util::repo_root;

/// The modules `src/lib.rs` declares: (name, public).
fn modules(lib: &str) -> Vec<(String, bool)> {
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let (public, rest) = match l.strip_prefix("pub mod ") {
                Some(rest) => (true, rest),
                None => (false, l.strip_prefix("pub(crate) mod ").or_else(|| l.strip_prefix("mod "))?),
            };
            Some((rest.strip_suffix(';')?.to_string(), public))
        })
        .collect()
}

/// The lines of CONTRIBUTING's layout about one crate: from `crates/NAME/` to the next top-level entry.
fn layout_of(contributing: &str, krate: &str) -> String {
    let start = format!("crates/{krate}/");
    let mut lines = contributing.lines().skip_while(|l| !l.starts_with(&start));
    let first = lines.next().unwrap_or_default();
    std::iter::once(first).chain(lines.take_while(|l| l.starts_with(' '))).collect::<Vec<_>>().join("\n")
}

#[test]
fn each_crate_doc_names_its_public_modules_and_contributing_names_every_module() {
    let contributing = std::fs::read_to_string(repo_root().join("CONTRIBUTING.md")).unwrap();
    let mut missing = Vec::new();
    for krate in ["core", "udfs", "engine"] {
        let lib = std::fs::read_to_string(repo_root().join(format!("crates/{krate}/src/lib.rs"))).unwrap();
        let layout = layout_of(&contributing, krate);
        let doc: String = lib.lines().filter_map(|l| l.strip_prefix("//!")).collect::<Vec<_>>().join("\n");
        for (name, public) in modules(&lib) {
            if public && !doc.contains(&format!("`{name}`")) {
                missing.push(format!("crates/{krate}/src/lib.rs: the crate doc does not name `{name}`"));
            }
            let (file, dir) = (format!("src/{name}.rs"), format!("src/{name}/"));
            if name != "fuzz" && !layout.contains(&file) && !layout.contains(&dir) {
                missing.push(format!("CONTRIBUTING.md: the layout of crates/{krate} does not name {file} or {dir}"));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
