//! An immutable snapshot of the registered tools, indexed for resolving names. A change makes a new snapshot
//! that shares every index shard it does not touch with the previous one.

use super::CompiledTool;
use super::bounds::MAX_NAME_LEN;
use super::index::Index;
use super::names::{normalize_name, normalized, normalized_longer_than};
use super::suggest::Suggester;
use std::sync::{Arc, OnceLock};

/// Every registered tool, with the indices the resolver needs.
#[derive(Debug, Default)]
pub struct Catalog {
    by_name: Index,
    by_safe_name: Index,
    by_normalized: Index,
    len: usize,
    /// Every tool sorted by tenant then name, built on first use: listing is rare, registering 10,000 tools is not.
    sorted: OnceLock<Vec<Arc<CompiledTool>>>,
    /// What suggestions are searched in, built at the first miss: a snapshot that never sees one never pays it.
    suggester: OnceLock<Suggester>,
}

impl Catalog {
    /// A catalog of `tools`; of two with the same tenant and name, the later one is kept.
    pub fn new(tools: Vec<Arc<CompiledTool>>) -> Self {
        let mut catalog = Catalog::default();
        for tool in tools {
            catalog.put(tool);
        }
        catalog
    }

    /// This snapshot with `tool` added, replacing the tool of the same tenant and name. Costs a few hundred
    /// pointer copies plus one shard of each index, however many tools there are.
    pub fn with(&self, tool: Arc<CompiledTool>) -> Self {
        let mut next = self.unsorted_copy();
        next.put(tool);
        next
    }

    /// This snapshot without the tool of `tenant` and `name`.
    pub fn without(&self, tenant: &str, name: &str) -> Self {
        let mut next = self.unsorted_copy();
        next.take(tenant, name);
        next
    }

    /// The number of tools, of every tenant.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// All tools, sorted by tenant then name.
    pub fn all(&self) -> &[Arc<CompiledTool>] {
        self.sorted.get_or_init(|| {
            let mut tools: Vec<_> = self.by_name.iter().cloned().collect();
            tools.sort_by(|a, b| (&a.spec.tenant, &a.spec.name).cmp(&(&b.spec.tenant, &b.spec.name)));
            tools
        })
    }

    /// The tools a caller of `tenant` may see: its own, and the shared ones its own do not shadow.
    pub fn visible<'a>(&'a self, tenant: &'a str) -> impl Iterator<Item = &'a Arc<CompiledTool>> + 'a {
        self.all().iter().filter(move |t| self.is_visible(t, tenant))
    }

    /// A tool is visible to its own tenant; a shared tool to everyone, unless the tenant has its own of that name.
    fn is_visible(&self, tool: &CompiledTool, tenant: &str) -> bool {
        match tool.spec.tenant.as_str() {
            "" => tenant.is_empty() || self.get(tenant, &tool.spec.name).is_none(),
            owner => owner == tenant,
        }
    }

    /// The tool registered under exactly `name` for `tenant`, not counting shared ones.
    pub fn get(&self, tenant: &str, name: &str) -> Option<&Arc<CompiledTool>> {
        self.by_name.get(name).iter().find(|t| t.spec.tenant == tenant)
    }

    /// Visible tools with exactly this name; a tenant's own tool shadows a shared one. An iterator, not a list:
    /// every call looks its tool up here, and nearly always finds one.
    pub fn by_name<'a>(&'a self, tenant: &'a str, name: &str) -> impl Iterator<Item = &'a Arc<CompiledTool>> {
        self.visible_in(&self.by_name, tenant, name)
    }

    /// Visible tools whose provider-safe name is exactly this.
    pub fn by_safe_name<'a>(&'a self, tenant: &'a str, name: &str) -> impl Iterator<Item = &'a Arc<CompiledTool>> {
        self.visible_in(&self.by_safe_name, tenant, name)
    }

    /// Visible tools whose normalized name equals `normalize_name(name)`.
    /// A name longer than any registered one is refused before it is copied.
    pub fn by_normalized(&self, tenant: &str, name: &str) -> Vec<&Arc<CompiledTool>> {
        if normalized_longer_than(name, MAX_NAME_LEN) {
            return Vec::new();
        }
        self.visible_in(&self.by_normalized, tenant, &normalize_name(name)).collect()
    }

    /// Up to `max` visible names closest to `name` in edits, closest first; none for a name longer than any
    /// registered one. The work is bounded (`suggest.rs`), whatever the number of tools.
    pub fn closest_names(&self, tenant: &str, name: &str, max: usize) -> Vec<String> {
        if normalized_longer_than(name, MAX_NAME_LEN) {
            return Vec::new();
        }
        let wanted: Vec<char> = normalized(name).collect();
        self.suggester.get_or_init(|| Suggester::new(self.all())).closest(tenant, &wanted, max)
    }

    fn visible_in<'a, 't>(
        &'a self,
        index: &'a Index,
        tenant: &'t str,
        key: &str,
    ) -> impl Iterator<Item = &'a Arc<CompiledTool>> + use<'a, 't> {
        index.get(key).iter().filter(move |t| self.is_visible(t, tenant))
    }

    /// The indices, shared shard by shard, without the sorted list, which a change would make stale.
    fn unsorted_copy(&self) -> Self {
        let (by_name, by_safe_name) = (self.by_name.clone(), self.by_safe_name.clone());
        Self {
            by_name,
            by_safe_name,
            by_normalized: self.by_normalized.clone(),
            len: self.len,
            sorted: OnceLock::new(),
            suggester: OnceLock::new(),
        }
    }

    fn put(&mut self, tool: Arc<CompiledTool>) {
        self.take(&tool.spec.tenant, &tool.spec.name);
        self.by_name.insert(tool.spec.name.clone(), Arc::clone(&tool));
        self.by_safe_name.insert(tool.safe_name.clone(), Arc::clone(&tool));
        self.by_normalized.insert(normalize_name(&tool.spec.name), tool);
        self.len += 1;
    }

    /// Removes the tool of `tenant` and `name`. Its other keys derive from its name, so they are found too.
    fn take(&mut self, tenant: &str, name: &str) {
        let Some(old) = self.get(tenant, name).cloned() else { return };
        self.by_name.remove(name, tenant, name);
        self.by_safe_name.remove(&old.safe_name, tenant, name);
        self.by_normalized.remove(&normalize_name(name), tenant, name);
        self.len -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{SchemaDocuments, ToolSpec};
    use serde_json::json;

    fn tool(tenant: &str, name: &str, description: &str) -> Arc<CompiledTool> {
        let mut spec = ToolSpec::offline(name, description, json!({"type": "object"}));
        spec.tenant = tenant.to_owned();
        Arc::new(CompiledTool::compile(spec, &SchemaDocuments::default()).unwrap())
    }

    fn names(catalog: &Catalog) -> Vec<String> {
        catalog.all().iter().map(|t| format!("{}/{}:{}", t.spec.tenant, t.spec.name, t.spec.description)).collect()
    }

    #[test]
    fn a_change_makes_a_new_snapshot_and_leaves_the_old_one_whole() {
        let first = Catalog::new((0..600).map(|i| tool("", &format!("t{i}"), "v1")).collect());
        let second = first.with(tool("", "t7", "v2")).with(tool("acme", "Weather.Get", "v1"));
        let third = second.without("", "t8");
        assert_eq!((first.len(), second.len(), third.len()), (600, 601, 600));
        assert_eq!(first.get("", "t7").unwrap().spec.description, "v1");
        assert_eq!(second.get("", "t7").unwrap().spec.description, "v2");
        assert!(second.get("", "t8").is_some() && third.get("", "t8").is_none());
        assert_eq!(third.by_normalized("acme", "weather_get").len(), 1);
        assert_eq!(third.by_safe_name("acme", "Weather_Get").count(), 1);
        assert!(third.without("acme", "Weather.Get").by_normalized("acme", "weatherget").is_empty());
        assert_eq!(names(&third).len(), 600);
        assert_eq!(names(&third).last().unwrap(), "acme/Weather.Get:v1", "sorted by tenant, then name");
    }

    #[test]
    fn a_tenant_tool_shadows_a_shared_one_and_removing_it_shows_the_shared_one_again() {
        let catalog = Catalog::new(vec![tool("", "search", "shared")]).with(tool("acme", "search", "own"));
        assert_eq!(catalog.by_name("acme", "search").next().unwrap().spec.description, "own");
        assert_eq!(catalog.visible("acme").count(), 1);
        assert_eq!(catalog.by_name("other", "search").next().unwrap().spec.description, "shared");
        let catalog = catalog.without("acme", "search");
        assert_eq!(catalog.by_name("acme", "search").next().unwrap().spec.description, "shared");
        assert_eq!(catalog.without("nobody", "search").len(), 1, "removing a missing tool changes nothing");
    }

    #[test]
    fn of_two_tools_with_one_key_the_later_is_kept() {
        let catalog = Catalog::new(vec![tool("", "a", "first"), tool("", "a", "second")]);
        assert_eq!(names(&catalog), ["/a:second"]);
    }
}
