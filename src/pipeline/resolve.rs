//! Resolve: a called name to a visible tool; exact, provider-safe, then normalized; else the closest names.

use super::CallError;
use super::answer::quoted_name;
use super::message::Repair;
use super::repair::{RepairRule, RepairSettings};
use crate::registry::{Catalog, CompiledTool, MAX_NAME_LEN, normalized_longer_than};
use std::sync::Arc;

/// How many names a TOOL_NOT_FOUND suggests at most.
const MAX_SUGGESTIONS: usize = 3;

/// A resolved tool, with the repairs recorded when the name had to be read leniently.
#[derive(Debug)]
pub struct Resolved {
    pub tool: Arc<CompiledTool>,
    pub repairs: Vec<Repair>,
}

/// Prefixes some models put before a tool's name: the namespaces of OpenAI and Gemini tool-calling templates.
const PREFIXES: [&str; 2] = ["functions.", "default_api."];
/// Normalized characters past which a called name cannot be a registered one, even behind a prefix.
const MAX_CALLED_NAME_LEN: usize = MAX_NAME_LEN + "defaultapi".len();

/// Finds the tool `name` means for a caller of `tenant`. Tools of other tenants do not exist here.
/// A typo is never resolved: it only becomes a suggestion.
pub fn resolve_tool(
    catalog: &Catalog,
    tenant: &str,
    name: &str,
    settings: RepairSettings,
) -> Result<Resolved, CallError> {
    let (wanted, variants) = match lookup(catalog, tenant, name, settings) {
        Ok(resolved) => return Ok(resolved),
        Err(miss) => miss,
    };
    let suggestions = match (wanted, variants.is_empty()) {
        (None, _) => Vec::new(),
        (Some(wanted), true) => catalog.closest_names(tenant, wanted, MAX_SUGGESTIONS),
        (Some(_), false) => variants.iter().take(MAX_SUGGESTIONS).map(|t| t.spec.name.clone()).collect(),
    };
    Err(CallError::NotFound { suggestions })
}

/// The tool `name` resolves to, as `resolve_tool` finds it, without the suggestions a miss would search the
/// catalog for: whether a name read in a text is a tool offered.
pub fn resolves(catalog: &Catalog, tenant: &str, name: &str, settings: RepairSettings) -> Option<Arc<CompiledTool>> {
    lookup(catalog, tenant, name, settings).ok().map(|resolved| resolved.tool)
}

/// A miss: the name as it was looked for (none when it is too long to be any), and the tools it matches more
/// than one of.
type Miss<'a> = (Option<&'a str>, Vec<Arc<CompiledTool>>);

fn lookup<'a>(catalog: &Catalog, tenant: &str, name: &'a str, settings: RepairSettings) -> Result<Resolved, Miss<'a>> {
    let mut repairs = Vec::new();
    let mut wanted = name;
    if let Some(cut) = wanted.find("<|").filter(|_| settings.allows(RepairRule::ToolNameResidue)) {
        repairs.push(name_repair(RepairRule::ToolNameResidue, wanted, wanted[..cut].trim()));
        wanted = wanted[..cut].trim();
    }
    // Cheap refusal: a name this long matches nothing and is close to nothing, so it is never compared.
    if normalized_longer_than(wanted, MAX_CALLED_NAME_LEN) {
        return Err((None, Vec::new()));
    }
    if let Some(tool) = exact(catalog, tenant, wanted) {
        return Ok(Resolved { tool, repairs });
    }
    let prefix =
        PREFIXES.iter().find_map(|p| wanted.strip_prefix(p)).filter(|_| settings.allows(RepairRule::ToolNamePrefix));
    if let Some(bare) = prefix.filter(|bare| !catalog.by_normalized(tenant, bare).is_empty()) {
        repairs.push(name_repair(RepairRule::ToolNamePrefix, wanted, bare));
        wanted = bare;
        if let Some(tool) = exact(catalog, tenant, wanted) {
            return Ok(Resolved { tool, repairs });
        }
    }
    let variants = catalog.by_normalized(tenant, wanted);
    if let ([tool], true) = (&variants[..], settings.allows(RepairRule::ToolNameNormalized)) {
        repairs.push(name_repair(RepairRule::ToolNameNormalized, wanted, &tool.spec.name));
        return Ok(Resolved { tool: Arc::clone(tool), repairs });
    }
    Err((Some(wanted), variants.into_iter().cloned().collect()))
}

/// The tool by its registered name, or by the provider-safe name our definitions hand out (not a mistake).
/// The tool `name` names exactly, or by its provider-safe name, for a caller of `tenant`: resolution's first step.
pub fn exact(catalog: &Catalog, tenant: &str, name: &str) -> Option<Arc<CompiledTool>> {
    let mut by_name = catalog.by_name(tenant, name).peekable();
    let tool = match by_name.peek() {
        Some(_) => only(by_name),
        None => only(catalog.by_safe_name(tenant, name)),
    };
    tool.map(Arc::clone)
}

/// The one item of `items`: `None` when there are none, or more than one.
fn only<T>(mut items: impl Iterator<Item = T>) -> Option<T> {
    let first = items.next()?;
    items.next().is_none().then_some(first)
}

/// A repair of the name; both sides are quoted cut to a bound, as the called name may be huge.
fn name_repair(rule: RepairRule, before: &str, after: &str) -> Repair {
    Repair {
        rule: rule.name().to_owned(),
        path: String::new(),
        before: json_string(&quoted_name(before)),
        after: json_string(&quoted_name(after)),
    }
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{SchemaDocuments, ToolSpec};
    use serde_json::json;

    fn catalog(tools: &[(&str, &str)]) -> Catalog {
        let compiled = tools.iter().map(|(tenant, name)| {
            let mut spec = ToolSpec::offline(name, "", json!({"type": "object"}));
            spec.tenant = (*tenant).to_owned();
            Arc::new(CompiledTool::compile(spec, &SchemaDocuments::default()).unwrap())
        });
        Catalog::new(compiled.collect())
    }

    fn check(cat: &Catalog, tenant: &str, name: &str, expected: Result<(&str, bool), Vec<&str>>) {
        let got = resolve_tool(cat, tenant, name, RepairSettings::default())
            .map(|r| (r.tool.spec.name.clone(), !r.repairs.is_empty()))
            .map_err(|e| match e {
                CallError::NotFound { suggestions } => suggestions,
                other => panic!("{other:?}"),
            });
        let expected = expected.map(|(n, r)| (n.to_owned(), r)).map_err(|s| s.iter().map(|x| x.to_string()).collect());
        assert_eq!(got, expected, "resolving {name:?} for tenant {tenant:?}");
    }

    #[test]
    fn table() {
        let cat = catalog(&[
            ("", "get_weather"),
            ("", "weather.get"),
            ("", "get_time"),
            ("acme", "secret_tool"),
            ("", "a.b"),
            ("", "a_b"),
        ]);
        check(&cat, "", "get_weather", Ok(("get_weather", false)));
        check(&cat, "", "weather_get", Ok(("weather.get", false)));
        check(&cat, "", "Get-Weather", Ok(("get_weather", true)));
        check(&cat, "", "WEATHER.GET", Ok(("weather.get", true)));
        check(&cat, "", "get_weathr", Err(vec!["get_weather"]));
        check(&cat, "", "get_tim", Err(vec!["get_time"]));
        check(&cat, "", "launch_rocket", Err(vec![]));
        check(&cat, "", "a-b", Err(vec!["a.b", "a_b"]));
        check(&cat, "", "secret_tool", Err(vec![]));
        check(&cat, "other", "secret_tol", Err(vec![]));
        check(&cat, "acme", "secret_tool", Ok(("secret_tool", false)));
    }

    #[test]
    fn a_name_longer_than_any_registered_one_is_refused_and_quoted_cut() {
        let cat = catalog(&[("", "get_weather")]);
        check(&cat, "", &"get_weather".repeat(20), Err(vec![]));
        check(&cat, "", &format!("functions.{}", "a".repeat(MAX_NAME_LEN)), Err(vec![]));
        let huge = format!("get_weather<|{}", "x".repeat(1 << 20));
        let resolved = resolve_tool(&cat, "", &huge, RepairSettings::default()).unwrap();
        let before = &resolved.repairs[0].before;
        assert!(before.len() < 2 * MAX_NAME_LEN && before.ends_with("…\""), "{before}");
    }

    #[test]
    fn a_tenants_own_tool_shadows_a_shared_one() {
        let cat = catalog(&[("", "get_time"), ("acme", "get_time")]);
        let owner = |tenant: &str| {
            resolve_tool(&cat, tenant, "get_time", RepairSettings::default()).unwrap().tool.spec.tenant.clone()
        };
        assert_eq!((owner("acme"), owner("other"), owner("")), ("acme".into(), String::new(), String::new()));
        assert_eq!(cat.visible("acme").count(), 1, "listed once");
    }
}
