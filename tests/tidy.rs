//! House rules checked as a test: every module opens with a `//!` line saying what it owns, no grab-bag modules.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_module_opens_with_a_doc_line_and_none_is_a_grab_bag() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        if root.join(dir).exists() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    assert!(files.len() > 20, "found only {} files", files.len());
    let mut problems = Vec::new();
    for file in &files {
        let name = file.strip_prefix(root).unwrap().display().to_string();
        let text = std::fs::read_to_string(file).unwrap();
        if !text.starts_with("//!") {
            problems.push(format!("{name}: does not open with a //! line"));
        }
        let stem = file.file_stem().unwrap().to_string_lossy();
        if matches!(stem.as_ref(), "utils" | "helpers" | "util" | "misc") {
            problems.push(format!("{name}: name the concept instead"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
