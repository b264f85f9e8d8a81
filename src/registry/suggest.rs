//! Suggestions for a name that resolved to nothing: the visible names closest to it by edit distance, found with
//! bounded work whatever the number of tools, and never a name of another tenant.

use super::CompiledTool;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// Edit-distance cells computed for one miss at most: about a millisecond of work. Past it the best names found
/// so far are suggested.
const MAX_CELLS: usize = 256 * 1024;

/// Every tool's normalized length and character set, in tenant then name order, for cheap lower bounds; each
/// tenant's tools (`""`: the shared ones) are one range of them.
#[derive(Debug, Default)]
pub(super) struct Suggester {
    entries: Vec<Entry>,
    by_tenant: HashMap<String, Range<usize>>,
}

#[derive(Debug)]
struct Entry {
    len: usize,
    chars: u64,
    tool: Arc<CompiledTool>,
}

impl Suggester {
    /// From every tool sorted by tenant then name (`Catalog::all`), so which of several equally close names are
    /// suggested does not depend on hashing.
    pub(super) fn new(sorted: &[Arc<CompiledTool>]) -> Self {
        let mut by_tenant: HashMap<String, Range<usize>> = HashMap::new();
        let mut entries = Vec::with_capacity(sorted.len());
        for (i, tool) in sorted.iter().enumerate() {
            let (len, chars) = shape(super::names::normalized(&tool.spec.name));
            entries.push(Entry { len, chars, tool: Arc::clone(tool) });
            match by_tenant.get_mut(&tool.spec.tenant) {
                Some(range) => range.end = i + 1,
                None => drop(by_tenant.insert(tool.spec.tenant.clone(), i..i + 1)),
            }
        }
        Self { entries, by_tenant }
    }

    /// Up to `max` names of `tenant`'s own and shared tools within half of `wanted`'s length in edits (at least
    /// 2), closest first. `wanted` is normalized. A shared tool a tenant's own shadows has the same name, so the
    /// name is given once either way.
    pub(super) fn closest(&self, tenant: &str, wanted: &[char], max: usize) -> Vec<String> {
        let (len, chars) = shape(wanted.iter().copied());
        let limit = (len / 2).max(2);
        // Candidates by a lower bound of their distance: the length difference, and the characters one has and
        // the other lacks. The closest bounds are compared first.
        let mut by_bound: Vec<Vec<&Entry>> = vec![Vec::new(); limit + 1];
        let groups = [Some(tenant), (!tenant.is_empty()).then_some("")];
        for range in groups.into_iter().flatten().filter_map(|t| self.by_tenant.get(t)) {
            for entry in &self.entries[range.clone()] {
                let missing = (chars & !entry.chars).count_ones().max((entry.chars & !chars).count_ones());
                let bound = entry.len.abs_diff(len).max(missing as usize);
                if bound <= limit {
                    by_bound[bound].push(entry);
                }
            }
        }
        let mut best = Best { names: Vec::new(), max };
        let (mut cells, mut theirs) = (0, Vec::new());
        'search: for (bound, entries) in by_bound.iter().enumerate() {
            for entry in entries {
                if best.settled(bound) || cells > MAX_CELLS {
                    break 'search;
                }
                theirs.clear();
                theirs.extend(super::names::normalized(&entry.tool.spec.name));
                cells += wanted.len() * theirs.len();
                if let Some(d) = bounded_levenshtein(wanted, &theirs, limit) {
                    best.offer(d, &entry.tool.spec.name);
                }
            }
        }
        best.names.into_iter().map(|(_, name)| name.to_owned()).collect()
    }
}

/// The closest distinct names so far, closest (then first by name) first.
struct Best<'a> {
    names: Vec<(usize, &'a str)>,
    max: usize,
}

impl<'a> Best<'a> {
    fn offer(&mut self, distance: usize, name: &'a str) {
        if let Some(i) = self.names.iter().position(|(_, n)| *n == name) {
            self.names[i].0 = self.names[i].0.min(distance);
        } else {
            self.names.push((distance, name));
        }
        self.names.sort_unstable();
        self.names.truncate(self.max);
    }

    /// Full, and nothing left with a lower bound of `bound` can be closer.
    fn settled(&self, bound: usize) -> bool {
        self.names.len() == self.max && self.names.last().is_some_and(|(d, _)| *d <= bound)
    }
}

/// A name's length and the set of its characters: a bit per letter and digit, one for anything else.
fn shape(name: impl Iterator<Item = char>) -> (usize, u64) {
    let mut len = 0;
    let mut set = 0u64;
    for c in name {
        len += 1;
        set |= 1
            << match c {
                'a'..='z' => c as u32 - 'a' as u32,
                '0'..='9' => 26 + c as u32 - '0' as u32,
                _ => 36,
            };
    }
    (len, set)
}

/// The Levenshtein distance of `a` and `b` if it is at most `limit`; stops at the first row past it.
fn bounded_levenshtein(a: &[char], b: &[char], limit: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        if current.iter().min().is_some_and(|m| *m > limit) {
            return None;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    Some(previous[b.len()]).filter(|d| *d <= limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    proptest! {
        #[test]
        fn bounded_levenshtein_agrees_with_strsim(a in "[a-c]{0,8}", b in "[a-c]{0,8}", limit in 0usize..6) {
            let full = strsim::levenshtein(&a, &b);
            let want = (full <= limit).then_some(full);
            prop_assert_eq!(bounded_levenshtein(&chars(&a), &chars(&b), limit), want);
        }

        #[test]
        fn the_bound_never_exceeds_the_distance(a in "[a-e0-2]{0,10}", b in "[a-e0-2]{0,10}") {
            let ((la, sa), (lb, sb)) = (shape(a.chars()), shape(b.chars()));
            let missing = (sa & !sb).count_ones().max((sb & !sa).count_ones()) as usize;
            prop_assert!(la.abs_diff(lb).max(missing) <= strsim::levenshtein(&a, &b));
        }
    }
}
