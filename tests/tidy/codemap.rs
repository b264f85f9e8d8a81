//! The codemap check: what docs/dev/codemap.md names, against the files that exist.

use std::collections::BTreeSet;

/// What docs/dev/codemap.md leaves out or names wrongly: every file of src/ must be named in the section of its folder
/// (`## \`registry/\``: `- \`catalog.rs\``, or `registry/catalog.rs` in a section naming several folders), every
/// `.rs` name it gives must exist, and every bench and fuzz target must be named under "Outside `src/`".
pub fn drift(map: &str, src: &BTreeSet<String>, benches: &[String], fuzz_targets: &[String]) -> Vec<String> {
    let (mut dirs, mut named, mut problems, mut outside) =
        (vec![String::new()], BTreeSet::new(), Vec::new(), String::new());
    for line in map.lines() {
        let ticks: Vec<&str> = line.split('`').skip(1).step_by(2).collect();
        if line.starts_with('#') {
            dirs = ticks.iter().filter(|t| t.ends_with('/')).map(|t| t.to_string()).collect();
            if dirs.is_empty() {
                dirs.push(String::new());
            }
            continue;
        }
        if line.starts_with("- `tests/")
            || line.starts_with("- `benches/")
            || line.starts_with("- `fuzz/")
            || !outside.is_empty()
        {
            outside.push_str(line);
            outside.push('\n');
            continue;
        }
        for name in ticks.iter().filter(|t| t.ends_with(".rs")) {
            let mut candidates: Vec<String> = dirs.iter().map(|d| format!("{d}{name}")).collect();
            candidates.push(name.to_string());
            match candidates.into_iter().find(|c| src.contains(c)) {
                Some(file) => drop(named.insert(file)),
                None => problems.push(format!("codemap names `{name}` under {dirs:?}, and no such file is in src/")),
            }
        }
    }
    problems.extend(src.difference(&named).map(|file| format!("src/{file} is not in the codemap")));
    for (kind, name) in benches.iter().map(|b| ("bench", b)).chain(fuzz_targets.iter().map(|f| ("fuzz target", f))) {
        if !outside.contains(&format!("`{name}")) {
            problems.push(format!("the {kind} {name} is not in the codemap's \"Outside `src/`\""));
        }
    }
    problems
}
