//! An immutable snapshot of the registered tools, indexed for resolving names. Swapped whole on every change.

use super::CompiledTool;
use std::collections::HashMap;
use std::sync::Arc;

/// Every registered tool, with the indices the resolver needs.
#[derive(Debug, Default)]
pub struct Catalog {
    tools: Vec<Arc<CompiledTool>>,
    by_name: HashMap<String, Vec<usize>>,
    by_safe_name: HashMap<String, Vec<usize>>,
    by_normalized: HashMap<String, Vec<usize>>,
}

/// The comparison key for name variants: lowercase, without `.`, `-` and `_`.
pub fn normalize_name(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, '.' | '-' | '_')).flat_map(char::to_lowercase).collect()
}

impl Catalog {
    pub fn new(mut tools: Vec<Arc<CompiledTool>>) -> Self {
        tools.sort_by(|a, b| (&a.spec.tenant, &a.spec.name).cmp(&(&b.spec.tenant, &b.spec.name)));
        let mut catalog = Catalog::default();
        for (i, tool) in tools.iter().enumerate() {
            catalog.by_name.entry(tool.spec.name.clone()).or_default().push(i);
            catalog.by_safe_name.entry(tool.safe_name.clone()).or_default().push(i);
            catalog.by_normalized.entry(normalize_name(&tool.spec.name)).or_default().push(i);
        }
        catalog.tools = tools;
        catalog
    }

    /// All tools, sorted by tenant then name.
    pub fn all(&self) -> &[Arc<CompiledTool>] {
        &self.tools
    }

    /// The tools a caller of `tenant` may see: its own, and the shared ones its own do not shadow.
    pub fn visible<'a>(&'a self, tenant: &'a str) -> impl Iterator<Item = &'a Arc<CompiledTool>> + 'a {
        self.tools.iter().filter(move |t| self.is_visible(t, tenant))
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
        self.lookup(&self.by_name, name).find(|t| t.spec.tenant == tenant)
    }

    /// Visible tools with exactly this name; a tenant's own tool shadows a shared one.
    pub fn by_name(&self, tenant: &str, name: &str) -> Vec<&Arc<CompiledTool>> {
        self.visible_in(&self.by_name, tenant, name)
    }

    /// Visible tools whose provider-safe name is exactly this.
    pub fn by_safe_name(&self, tenant: &str, name: &str) -> Vec<&Arc<CompiledTool>> {
        self.visible_in(&self.by_safe_name, tenant, name)
    }

    /// Visible tools whose normalized name equals `normalize_name(name)`.
    pub fn by_normalized(&self, tenant: &str, name: &str) -> Vec<&Arc<CompiledTool>> {
        self.visible_in(&self.by_normalized, tenant, &normalize_name(name))
    }

    fn lookup<'a>(
        &'a self,
        index: &'a HashMap<String, Vec<usize>>,
        key: &str,
    ) -> impl Iterator<Item = &'a Arc<CompiledTool>> + 'a {
        index.get(key).into_iter().flatten().map(|&i| &self.tools[i])
    }

    fn visible_in<'a>(
        &'a self,
        index: &'a HashMap<String, Vec<usize>>,
        tenant: &str,
        key: &str,
    ) -> Vec<&'a Arc<CompiledTool>> {
        self.lookup(index, key).filter(|t| self.is_visible(t, tenant)).collect()
    }
}
