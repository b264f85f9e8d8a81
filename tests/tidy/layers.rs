//! The allowed layer graph: read from the fenced block under `## Layers` in ARCHITECTURE.md (`module → dep, dep`
//! lines; `->` works too), and checked for cycles.

use std::collections::BTreeMap;

/// Each module and the modules it may use directly, in the order the block lists them.
pub type Graph = BTreeMap<String, Vec<String>>;

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses one line of the block (`registry → policy, store`), `at` being its 1-based line in the document.
fn parse_line(line: &str, at: usize) -> Result<(String, Vec<String>), String> {
    let Some((module, deps)) = line.split_once('→').or_else(|| line.split_once("->")) else {
        return Err(format!("ARCHITECTURE.md:{at}: `{line}` is not of the form `module → dep, dep`"));
    };
    let module = module.trim();
    let deps: Vec<String> = deps.split(',').map(str::trim).filter(|d| !d.is_empty()).map(String::from).collect();
    match std::iter::once(module).chain(deps.iter().map(String::as_str)).find(|n| !is_name(n)) {
        Some(bad) => Err(format!("ARCHITECTURE.md:{at}: `{bad}` in `{line}` is not a module name")),
        None => Ok((module.to_string(), deps)),
    }
}

/// The graph written in the first fenced code block of the `## Layers` section.
pub fn parse_layers(markdown: &str) -> Result<Graph, String> {
    let lines: Vec<&str> = markdown.lines().collect();
    let Some(heading) = lines.iter().position(|l| l.trim() == "## Layers") else {
        return Err("ARCHITECTURE.md has no `## Layers` heading: add one, with the allowed dependency graph in a \
                    fenced code block under it (lines `module → dep, dep`)"
            .into());
    };
    // The first fenced block of the section: prose may come before it, the next heading may not.
    let Some(open) = (heading + 1..lines.len())
        .take_while(|&i| !lines[i].starts_with("## "))
        .find(|&i| lines[i].trim_start().starts_with("```"))
    else {
        return Err("ARCHITECTURE.md: the `## Layers` section has no fenced code block (```) holding the graph".into());
    };
    let Some(close) = (open + 1..lines.len()).find(|&i| lines[i].trim_start().starts_with("```")) else {
        return Err(format!("ARCHITECTURE.md:{}: the code block under `## Layers` is never closed", open + 1));
    };
    let mut graph = Graph::new();
    for (i, line) in lines.iter().enumerate().take(close).skip(open + 1).filter(|(_, l)| !l.trim().is_empty()) {
        let (module, deps) = parse_line(line.trim(), i + 1)?;
        if graph.insert(module.clone(), deps).is_some() {
            return Err(format!("ARCHITECTURE.md:{}: `{module}` has two lines in the graph", i + 1));
        }
    }
    if graph.is_empty() {
        return Err("ARCHITECTURE.md: the code block under `## Layers` is empty".into());
    }
    Ok(graph)
}

/// Depth-first search from `node`; on finding a cycle, returns it as `[a, b, ..., a]`.
fn visit<'g>(graph: &'g Graph, node: &'g str, path: &mut Vec<&'g str>, done: &mut Vec<&'g str>) -> Option<Vec<String>> {
    if let Some(start) = path.iter().position(|&p| p == node) {
        let mut cycle: Vec<String> = path[start..].iter().map(|s| s.to_string()).collect();
        cycle.push(node.to_string());
        return Some(cycle);
    }
    if done.contains(&node) {
        return None;
    }
    path.push(node);
    for dep in graph.get(node).into_iter().flatten() {
        if let Some(cycle) = visit(graph, dep, path, done) {
            return Some(cycle);
        }
    }
    path.pop();
    done.push(node);
    None
}

/// A cycle of the graph, if it has one, as the modules along it (`[a, b, a]`).
pub fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    let mut done = Vec::new();
    graph.keys().find_map(|node| visit(graph, node, &mut Vec::new(), &mut done))
}

#[cfg(test)]
const SAMPLE: &str = "# Arch\n\n## Layers\n\n```\nserver → registry, store\nregistry -> store\nstore →\n```\n";

#[test]
fn the_block_under_the_heading_is_read_with_either_arrow() {
    let graph = parse_layers(SAMPLE).unwrap();
    assert_eq!(graph["server"], ["registry", "store"]);
    assert_eq!(graph["registry"], ["store"]);
    assert!(graph["store"].is_empty());
    assert_eq!(find_cycle(&graph), None);
}

#[test]
fn a_missing_heading_or_block_and_a_bad_line_are_explained() {
    assert!(parse_layers("# Arch\n## Codemap\n").unwrap_err().contains("no `## Layers` heading"));
    assert!(parse_layers("## Layers\n\nsome prose\n").unwrap_err().contains("has no fenced code block"));
    let next_section = parse_layers("## Layers\nprose\n## Codemap\n```\na → b\n```\n").unwrap_err();
    assert!(next_section.contains("has no fenced code block"), "a block of the next section is not the graph");
    let after_prose = parse_layers("## Layers\nprose first\n```\na → b\nb →\n```\n").unwrap();
    assert_eq!(after_prose["a"], ["b"]);
    let bad = parse_layers("## Layers\n```\nserver: registry\n```\n").unwrap_err();
    assert_eq!(bad, "ARCHITECTURE.md:3: `server: registry` is not of the form `module → dep, dep`");
}

#[test]
fn a_cyclic_graph_is_reported_with_its_cycle() {
    let graph = parse_layers("## Layers\n```\na → b\nb → c, d\nc → a\nd →\n```\n").unwrap();
    assert_eq!(find_cycle(&graph).unwrap(), ["a", "b", "c", "a"]);
    let self_loop = parse_layers("## Layers\n```\na → a\n```\n").unwrap();
    assert_eq!(find_cycle(&self_loop).unwrap(), ["a", "a"]);
}
