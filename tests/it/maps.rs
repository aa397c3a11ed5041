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

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push((p.clone(), std::fs::read_to_string(&p).unwrap()));
        }
    }
    out
}

/// The library crates count a run in its session and hand results to the caller: no
/// process-wide counters, no printing. The Python crate takes placement and runs from the engine,
/// and the CLI crate only for the `tokq` console script and its one-line errors.
#[test]
fn the_engine_has_no_static_counters_or_prints_and_python_takes_placement_from_it() {
    let mut found = Vec::new();
    for krate in ["core", "udfs", "engine"] {
        for (path, text) in sources(&repo_root().join(format!("crates/{krate}/src"))) {
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                let printing = ["print!(", "println!(", "eprint!(", "eprintln!("].iter().any(|p| code.contains(p));
                let counter = code.contains("static ") && code.contains("Atomic");
                if printing || counter {
                    found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "the library crates print or count in statics:\n{}", found.join("\n"));
    let uses: std::collections::BTreeSet<String> = sources(&repo_root().join("crates/python/src"))
        .iter()
        .flat_map(|(_, text)| text.match_indices("tokq::").map(|(i, _)| text[i + 6..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>()).collect::<Vec<_>>())
        .collect();
    let allowed = ["main_from", "one_line", "read_recipe"];
    assert!(uses.iter().all(|u| allowed.contains(&u.as_str())), "the Python crate uses the CLI crate's {uses:?}; only {allowed:?} (the console script) may come from it");
    let python = std::fs::read_to_string(repo_root().join("crates/python/src/lib.rs")).unwrap();
    assert!(python.contains("use tokq_engine::{Placement"), "the Python crate places runs with the engine's Placement");
}
