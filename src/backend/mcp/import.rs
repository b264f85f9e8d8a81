//! Importing: a server's `tools/list` made into ToolSpecs with `backend = mcp{server, tool}`, its overlays laid
//! over them, and the registry brought in step (collisions reported, never overwritten; vanished tools removed).

use super::spec::{McpServerSpec, SERVER_LABEL, imported_from};
use crate::registry::{Backend, Registry, ToolSpec};
use rmcp::model::Tool;
use serde_json::Value;

/// What one import did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Imported {
    /// Registry names of the tools now imported, with each tool's own name on the server.
    pub tools: Vec<(String, String)>,
    /// Tools left out, each with the reason.
    pub problems: Vec<String>,
}

/// The specs for a server's tools, as the server declares them plus the operator's overlays.
pub fn specs(server: &McpServerSpec, tools: &[Tool]) -> (Vec<(String, ToolSpec)>, Vec<String>) {
    let mut problems: Vec<String> = server
        .overlays
        .keys()
        .filter(|name| !tools.iter().any(|t| t.name == name.as_str()))
        .map(|name| format!("overlay {name:?} matches no tool of the server"))
        .collect();
    let specs = tools.iter().map(|tool| (tool.name.to_string(), spec_of(server, tool))).collect();
    problems.sort();
    (specs, problems)
}

fn spec_of(server: &McpServerSpec, tool: &Tool) -> ToolSpec {
    let mut spec = ToolSpec::offline(
        &server.tool_name(&tool.name),
        tool.description.as_deref().unwrap_or_default(),
        Value::Object((*tool.input_schema).clone()),
    );
    spec.output_schema = tool.output_schema.as_ref().map(|s| Value::Object((**s).clone()));
    spec.backend = Some(Backend::Mcp { server: server.name.clone(), tool: tool.name.to_string() });
    spec.tenant = server.tenant.clone();
    if let Some(overlay) = server.overlays.get(tool.name.as_ref()) {
        spec.inject = overlay.inject.clone();
        spec.repair = overlay.repair.clone();
        spec.limits = overlay.limits.clone();
        spec.review = overlay.review.clone();
        spec.budget = overlay.budget;
        spec.labels = overlay.labels.clone();
        spec.policy = overlay.policy.clone();
    }
    // A tool the server declares read-only is safe to repeat: a packed parallel call of it is split, unless the
    // overlay says otherwise.
    let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
    if read_only && spec.repair.split_parallel.is_none() && !spec.review.required {
        spec.repair.split_parallel = Some(true);
    }
    spec.labels.insert(SERVER_LABEL.to_owned(), server.name.clone());
    spec
}

/// Registers `specs` for `server` and deletes its tools that are gone. A name held by a tool not imported from
/// this server is a collision: reported, and that tool left as it is.
pub async fn sync(registry: &Registry, server: &McpServerSpec, specs: Vec<(String, ToolSpec)>) -> Imported {
    let mut imported = Imported::default();
    let catalog = registry.catalog();
    for (own_name, spec) in specs {
        let name = spec.name.clone();
        if let Some(existing) = catalog.get(&spec.tenant, &name)
            && !imported_from(&existing.spec, &server.name)
        {
            imported.problems.push(format!("{own_name:?}: the name {name:?} is taken by another tool; not imported"));
            continue;
        }
        match registry.register_unless_unchanged(spec).await {
            Ok(()) => imported.tools.push((name, own_name)),
            Err(err) => imported.problems.push(format!("{own_name:?}: {err}")),
        }
    }
    remove_except(registry, server, &imported.tools).await;
    imported
}

/// Deletes the tools imported from `server` whose names are not in `keep`.
pub async fn remove_except(registry: &Registry, server: &McpServerSpec, keep: &[(String, String)]) {
    let catalog = registry.catalog();
    let stale = catalog.all().iter().filter(|t| {
        t.spec.tenant == server.tenant
            && imported_from(&t.spec, &server.name)
            && !keep.iter().any(|(name, _)| *name == t.spec.name)
    });
    for tool in stale {
        match registry.delete(&tool.spec.tenant, &tool.spec.name).await {
            Ok(()) => tracing::info!(server = %server.name, tool = %tool.spec.name, "MCP tool removed"),
            Err(err) => {
                tracing::warn!(server = %server.name, tool = %tool.spec.name, error = %err, "removing an MCP tool failed")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::mcp::spec::ToolOverlay;
    use crate::registry::Injection;
    use serde_json::json;

    fn tool(name: &str, schema: Value) -> Tool {
        serde_json::from_value(json!({"name": name, "description": "d", "inputSchema": schema})).unwrap()
    }

    #[test]
    fn a_tool_becomes_a_prefixed_spec_with_its_schemas_and_overlay() {
        let mut server = McpServerSpec { name: "files".into(), command: Some("x".into()), ..Default::default() };
        let overlay = ToolOverlay {
            inject: vec![Injection { param: "user".into(), from: "user_id".into() }],
            ..Default::default()
        };
        server.overlays.insert("read".into(), overlay);
        server.overlays.insert("gone".into(), ToolOverlay::default());
        let mut read = tool("read", json!({"type": "object", "properties": {"user": {"type": "string"}}}));
        read.output_schema = Some(std::sync::Arc::new(json!({"type": "object"}).as_object().unwrap().clone()));
        let (specs, problems) = specs(&server, &[read, tool("list", json!({"type": "object"}))]);
        assert_eq!(problems, vec!["overlay \"gone\" matches no tool of the server".to_owned()]);
        let (own, spec) = &specs[0];
        assert_eq!((own.as_str(), spec.name.as_str()), ("read", "files__read"));
        assert_eq!(spec.backend, Some(Backend::Mcp { server: "files".into(), tool: "read".into() }));
        assert_eq!(spec.output_schema, Some(json!({"type": "object"})));
        assert_eq!(spec.inject.len(), 1);
        assert!(imported_from(spec, "files") && !imported_from(spec, "other"));
        assert!(specs[1].1.inject.is_empty(), "an overlay applies to its own tool only");
    }
}
