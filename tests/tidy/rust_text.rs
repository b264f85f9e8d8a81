//! Just enough Rust lexing for the tidy checks: blank out comments and literals, split the rest into tokens, and
//! find the crate-root names (`crate::x`, `crate::{x, y}`, `super::super::x` reaching the root) a file uses.
//!
//! Known limitation: a `use` of a name that `lib.rs` itself imports is resolved through `lib.rs`'s own `use` lines
//! only (see `root_imports`); macros are not expanded, so a path built by a macro is not seen.

/// A token of code with the 1-based line it is on.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
}

/// A crate-root name a file uses, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct RootRef {
    pub line: usize,
    pub name: String,
}

fn blank(out: &mut String, c: char) {
    out.push(if c == '\n' { '\n' } else { ' ' });
}

/// Where the literal or comment that starts at `i` ends (exclusive), or `None` if none starts there.
fn skip_len(s: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| s.get(k).copied();
    let word = |k: usize| s[k].is_alphanumeric() || s[k] == '_';
    // `r"..."` may follow a `b` or `c` prefix (`br"..."`), but `for"` or `bar#` are not raw strings.
    let raw_start = i == 0 || !word(i - 1) || (matches!(s[i - 1], 'b' | 'c') && (i < 2 || !word(i - 2)));
    match (s[i], at(i + 1)) {
        ('/', Some('/')) => Some((i..s.len()).find(|&k| s[k] == '\n').unwrap_or(s.len())),
        ('/', Some('*')) => {
            let (mut depth, mut k) = (0usize, i);
            while k < s.len() {
                if s[k] == '/' && at(k + 1) == Some('*') {
                    depth += 1;
                    k += 2;
                } else if s[k] == '*' && at(k + 1) == Some('/') {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        return Some(k);
                    }
                } else {
                    k += 1;
                }
            }
            Some(s.len())
        }
        ('"', _) => {
            let mut k = i + 1;
            while k < s.len() && s[k] != '"' {
                k += if s[k] == '\\' { 2 } else { 1 };
            }
            Some((k + 1).min(s.len()))
        }
        ('r', Some('"' | '#')) if raw_start => {
            let hashes = s[i + 1..].iter().take_while(|&&c| c == '#').count();
            if at(i + 1 + hashes) != Some('"') {
                return None; // a raw identifier such as r#type
            }
            let mut k = i + 2 + hashes;
            while k < s.len()
                && !(s[k] == '"' && s[k + 1..].iter().take(hashes).filter(|&&c| c == '#').count() == hashes)
            {
                k += 1;
            }
            Some((k + 1 + hashes).min(s.len()))
        }
        ('\'', Some('\\')) => Some((i + 3..s.len()).find(|&k| s[k] == '\'').map_or(s.len(), |k| k + 1)),
        ('\'', Some(_)) if at(i + 2) == Some('\'') => Some(i + 3),
        _ => None,
    }
}

/// The source with comments, string and char literals replaced by spaces (newlines kept, so lines still count).
pub fn code_only(src: &str) -> String {
    let s: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < s.len() {
        match skip_len(&s, i) {
            Some(end) => {
                s[i..end].iter().for_each(|&c| blank(&mut out, c));
                i = end;
            }
            None => {
                out.push(s[i]);
                i += 1;
            }
        }
    }
    out
}

/// Tokens of code already passed through `code_only`, each with its line.
pub fn tokens(code: &str) -> Vec<(usize, Tok)> {
    let s: Vec<char> = code.chars().collect();
    let (mut out, mut line, mut i) = (Vec::new(), 1, 0);
    while i < s.len() {
        let c = s[i];
        if c == '\n' {
            line += 1;
        }
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            out.push((line, Tok::Ident(s[start..i].iter().collect())));
            continue;
        }
        if c == ':' && s.get(i + 1) == Some(&':') {
            out.push((line, Tok::Sep));
            i += 2;
            continue;
        }
        if !c.is_whitespace() {
            out.push((line, Tok::Punct(c)));
        }
        i += 1;
    }
    out
}

fn is_ident(t: Option<&(usize, Tok)>, name: &str) -> bool {
    matches!(t, Some((_, Tok::Ident(n))) if n == name)
}

/// The first name of each item of the `{ ... }` group whose `{` is at `open`: `{a::B, c::{D, E}}` gives a and c.
fn group_heads(toks: &[(usize, Tok)], open: usize) -> Vec<RootRef> {
    let (mut out, mut depth, mut item_start) = (Vec::new(), 0usize, true);
    for (line, tok) in &toks[open..] {
        match tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => depth -= 1,
            Tok::Punct(',') if depth == 1 => item_start = true,
            Tok::Ident(name) if depth == 1 && item_start => {
                item_start = false;
                if name != "self" {
                    out.push(RootRef { line: *line, name: name.clone() });
                }
            }
            _ => {}
        }
        if depth == 0 {
            break;
        }
    }
    out
}

/// The names after the root path that starts at token `i` (`crate::x` gives x, `crate::{x, y}` gives x and y).
fn names_after(toks: &[(usize, Tok)], i: usize) -> Vec<RootRef> {
    match toks.get(i) {
        Some((line, Tok::Ident(name))) => vec![RootRef { line: *line, name: name.clone() }],
        Some((_, Tok::Punct('{'))) => group_heads(toks, i),
        _ => Vec::new(),
    }
}

/// How many inline `mod x { ... }` blocks enclose each token (a block's own braces count as inside it).
fn inline_mod_depths(toks: &[(usize, Tok)]) -> Vec<usize> {
    let (mut depths, mut braces, mut open) = (Vec::with_capacity(toks.len()), 0usize, Vec::<usize>::new());
    for (i, (_, tok)) in toks.iter().enumerate() {
        match tok {
            Tok::Punct('{') => {
                braces += 1;
                if i >= 2 && is_ident(toks.get(i - 2), "mod") && matches!(toks[i - 1].1, Tok::Ident(_)) {
                    open.push(braces);
                }
            }
            Tok::Punct('}') => {
                if open.last() == Some(&braces) {
                    open.pop();
                }
                braces = braces.saturating_sub(1);
            }
            _ => {}
        }
        depths.push(open.len());
    }
    depths
}

/// Every crate-root name used by a file whose module path has `file_depth` segments (`src/a/b.rs` is 2,
/// `src/a/mod.rs` and `src/a.rs` are 1). Inline `mod x { ... }` blocks add a level for `super`.
pub fn root_refs(code: &str, file_depth: usize) -> Vec<RootRef> {
    let toks = tokens(code);
    let (mut out, inline) = (Vec::new(), inline_mod_depths(&toks));
    for i in 0..toks.len() {
        let after_sep = i > 0 && matches!(toks[i - 1].1, Tok::Sep | Tok::Punct('$'));
        match &toks[i].1 {
            Tok::Ident(w) if w == "crate" && !after_sep && toks.get(i + 1).map(|t| &t.1) == Some(&Tok::Sep) => {
                out.extend(names_after(&toks, i + 2));
            }
            Tok::Ident(w) if w == "super" && !after_sep => {
                let mut k = i;
                let mut ups = 0;
                while is_ident(toks.get(k), "super") && toks.get(k + 1).map(|t| &t.1) == Some(&Tok::Sep) {
                    ups += 1;
                    k += 2;
                }
                if ups > 0 && ups == file_depth + inline[i] {
                    out.extend(names_after(&toks, k));
                }
            }
            _ => {}
        }
    }
    out
}

/// The names a file uses from its parent module: `super::x` (or `super::{x, y}`) outside inline `mod` blocks, and
/// `crate::<parent>::x` where `parent` is the parent module's path below the crate root. Among them are the
/// file's siblings, the other files of its module.
pub fn parent_refs(code: &str, parent: &[&str]) -> Vec<RootRef> {
    let toks = tokens(code);
    let (mut out, inline) = (Vec::new(), inline_mod_depths(&toks));
    for i in 0..toks.len() {
        let after_sep = i > 0 && matches!(toks[i - 1].1, Tok::Sep | Tok::Punct('$'));
        match &toks[i].1 {
            Tok::Ident(w) if w == "super" && !after_sep && inline[i] == 0 => {
                let sep = toks.get(i + 1).map(|t| &t.1) == Some(&Tok::Sep);
                if sep && !is_ident(toks.get(i + 2), "super") {
                    out.extend(names_after(&toks, i + 2));
                }
            }
            Tok::Ident(w) if w == "crate" && !after_sep && !parent.is_empty() => {
                let path_matches = parent.iter().enumerate().all(|(k, name)| {
                    toks.get(i + 1 + 2 * k).map(|t| &t.1) == Some(&Tok::Sep) && is_ident(toks.get(i + 2 + 2 * k), name)
                });
                let end = i + 1 + 2 * parent.len();
                if path_matches && toks.get(end).map(|t| &t.1) == Some(&Tok::Sep) {
                    out.extend(names_after(&toks, end + 1));
                }
            }
            _ => {}
        }
    }
    out
}

/// The names `lib.rs` brings in with `use module::...;` and the module each comes from (`use server::{run}` gives
/// run → server), so that `crate::run` elsewhere counts as a use of `server`.
pub fn root_imports(lib_code: &str) -> Vec<(String, String)> {
    let toks = tokens(lib_code);
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if !is_ident(toks.get(i), "use") {
            continue;
        }
        let rooted = (is_ident(toks.get(i + 1), "crate") || is_ident(toks.get(i + 1), "self"))
            && toks.get(i + 2).map(|t| &t.1) == Some(&Tok::Sep);
        let first = if rooted { i + 3 } else { i + 1 };
        let Some((_, Tok::Ident(module))) = toks.get(first) else { continue };
        for k in first + 1..toks.len() {
            match (&toks[k].1, toks.get(k + 1).map(|t| &t.1)) {
                (Tok::Punct(';'), _) => break,
                (Tok::Ident(name), Some(Tok::Punct(',' | '}' | ';'))) if name != "self" => {
                    out.push((name.clone(), module.clone()));
                }
                _ => {}
            }
        }
    }
    out
}

fn names(refs: &[RootRef]) -> Vec<(usize, &str)> {
    refs.iter().map(|r| (r.line, r.name.as_str())).collect()
}

#[test]
fn a_multi_line_use_group_yields_each_top_level_name() {
    let code = code_only("use crate::{a::X,\n    b::{Y, Z}};\nuse crate::c;\n");
    assert_eq!(names(&root_refs(&code, 1)), [(1, "a"), (2, "b"), (3, "c")]);
}

#[test]
fn inline_paths_count_but_comments_strings_and_dollar_crate_do_not() {
    let src = "//! crate::doc\nfn f() {\n    let p = crate::registry::json_pointer(\"crate::s\"); // crate::c\n    \
               /* crate::block */ let r = r#\"crate::raw\"#; let c = '{'; $crate::m!();\n    my_crate::x();\n}\n";
    assert_eq!(names(&root_refs(&code_only(src), 1)), [(3, "registry")]);
}

#[test]
fn super_counts_only_when_it_climbs_to_the_crate_root() {
    let src = "use super::x;\nuse super::super::policy::Y;\nmod tests {\n    use super::super::z;\n    \
               use super::super::super::{cluster, store::S};\n}\n";
    assert_eq!(names(&root_refs(&code_only(src), 2)), [(2, "policy"), (5, "cluster"), (5, "store")]);
}

#[test]
fn lib_imports_map_names_to_their_module() {
    let lib = code_only(
        "pub mod server;\npub use config::Config;\nuse crate::cli::Cmd;\npub use server::{run, run_with_clock as rw};\n",
    );
    let found = root_imports(&lib);
    let pairs: Vec<(&str, &str)> = found.iter().map(|(n, m)| (n.as_str(), m.as_str())).collect();
    assert_eq!(pairs, [("Config", "config"), ("Cmd", "cli"), ("run", "server"), ("rw", "server")]);
}

#[test]
fn parent_refs_read_super_and_the_full_path_but_not_inline_test_modules() {
    let code = "use super::{a::X, b};\nuse crate::m::c::Y;\nfn f() { super::d::g(); }\nmod tests { use super::*; use super::super::e; }";
    let refs = parent_refs(code, &["m"]);
    assert_eq!(names(&refs), [(1, "a"), (1, "b"), (2, "c"), (3, "d")]);
}
