//! The shape of a schema, bounded when it is compiled: how far `$ref`s and applicators chain at one place in a
//! value, and how many schema nodes one place of a value can be checked against.
//!
//! A validator recurses once per schema node it applies, so a chain of 5,000 `$ref`s is 5,000 frames on one
//! value (the stack overflowed) and costs as much per call; an `anyOf` of `$ref`s to `anyOf`s multiplies. Both
//! are bounded here, whatever the schema's size, by following each reference exactly as jsonschema resolves it
//! (`referencing`, its own resolver: `$id`, anchors, pointers and the pre-registered documents). Applying a node
//! to a member or item of the value starts a new chain: those are bounded by the value's depth instead.

use referencing::{Draft, Registry, Resolver, Retrieve, uri};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Most schema nodes chained at one place of a value (`$ref`, `$dynamicRef`, `allOf`, `anyOf`, `oneOf`, `not`,
/// `if`/`then`/`else`, `dependentSchemas`): real schemas chain a few; the value's depth (64) multiplies it.
pub const MAX_CHAIN: usize = 32;
/// Most schema nodes one place of a value can be checked against, counting every branch of every alternative.
pub const MAX_APPLIED: usize = 10_000;

/// Keywords whose subschema applies to the same place of the value.
const IN_PLACE_ONE: [&str; 4] = ["not", "if", "then", "else"];
const IN_PLACE_MANY: [&str; 3] = ["allOf", "anyOf", "oneOf"];
const IN_PLACE_MAP: [&str; 2] = ["dependentSchemas", "dependencies"];
/// Keywords whose subschemas apply to a member, an item or a key of the value.
const DESCENT_ONE: [&str; 8] = [
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];
const DESCENT_MAP: [&str; 2] = ["properties", "patternProperties"];
const DESCENT_MANY: [&str; 2] = ["prefixItems", "items"];

/// The default base URI jsonschema gives a schema without `$id`.
const DEFAULT_BASE: &str = "json-schema:///";

/// Checks `schema` against the bounds above; the error says which, and where. `retriever` serves the documents a
/// `$ref` may name, as it does for compiling. Call it on a schema that compiled: references then resolve.
pub fn check_shape(schema: &Value, retriever: Arc<dyn Retrieve>) -> Result<(), String> {
    let draft = Draft::default().detect(schema);
    let resource = draft.create_resource_ref(schema);
    let base = resource.id().and_then(|id| uri::from_str(id.trim_end_matches('#')).ok());
    let base = base.unwrap_or_else(|| uri::from_str(DEFAULT_BASE).expect("the default base URI parses"));
    let registry = Registry::new()
        .retriever(retriever)
        .draft(draft)
        .add(base.as_str(), resource)
        .and_then(|builder| builder.prepare())
        .map_err(|e| format!("its references could not be followed to bound its shape: {e}"))?;
    let mut shape = Shape { nodes: HashMap::new(), pending: Vec::new() };
    shape.pending.push((schema, registry.resolver(base), draft));
    while let Some((node, resolver, draft)) = shape.pending.pop() {
        shape.measure(node, &resolver, draft, 0)?;
    }
    Ok(())
}

/// What is known of a node: being measured (on the current chain), or its longest chain and applied count.
#[derive(Clone, Copy)]
enum Node {
    Open,
    Measured { chain: usize, applied: usize },
}

struct Shape<'r> {
    /// By the node's address: every node the walk reaches lives in the registry's documents, which outlive it.
    nodes: HashMap<usize, Node>,
    /// Nodes that apply to a member or item: each starts a chain of its own.
    pending: Vec<(&'r Value, Resolver<'r>, Draft)>,
}

impl<'r> Shape<'r> {
    /// The longest chain from `node` and how many nodes it applies at its place, within the bounds; `depth` is
    /// how far into a chain `node` was reached, so a node measured before still counts for the whole chain.
    fn measure(
        &mut self,
        node: &'r Value,
        resolver: &Resolver<'r>,
        draft: Draft,
        depth: usize,
    ) -> Result<(usize, usize), String> {
        let key = std::ptr::from_ref(node) as usize;
        let (chain, applied) = match self.nodes.get(&key) {
            Some(Node::Measured { chain, applied }) => (*chain, *applied),
            Some(Node::Open) => {
                return Err("has a cycle of $refs or applicators that never reaches into the value".to_owned());
            }
            None if depth > MAX_CHAIN => (0, 1),
            None => self.measure_new(key, node, resolver, draft, depth)?,
        };
        if depth + chain > MAX_CHAIN {
            return Err(format!(
                "chains more than {MAX_CHAIN} $refs or applicators at one place of the value (anyOf, allOf, $ref…), the most allowed"
            ));
        }
        Ok((chain, applied))
    }

    fn measure_new(
        &mut self,
        key: usize,
        node: &'r Value,
        resolver: &Resolver<'r>,
        draft: Draft,
        depth: usize,
    ) -> Result<(usize, usize), String> {
        let Value::Object(map) = node else {
            self.nodes.insert(key, Node::Measured { chain: 0, applied: 1 });
            return Ok((0, 1));
        };
        self.nodes.insert(key, Node::Open);
        let resolver = resolver.in_subresource(draft.create_resource_ref(node)).unwrap_or_else(|_| resolver.clone());
        let (mut chain, mut applied) = (0, 1usize);
        for (child, child_resolver, child_draft) in self.in_place(map, &resolver, draft) {
            let (c, a) = self.measure(child, &child_resolver, child_draft, depth + 1)?;
            chain = chain.max(c + 1);
            applied = applied.saturating_add(a);
            if applied > MAX_APPLIED {
                return Err(format!(
                    "applies more than {MAX_APPLIED} schemas at one place of the value (counting every branch of every anyOf, oneOf and $ref), the most allowed"
                ));
            }
        }
        for child in descent(map) {
            self.pending.push((child, resolver.clone(), draft));
        }
        self.nodes.insert(key, Node::Measured { chain, applied });
        Ok((chain, applied))
    }

    /// The subschemas that apply at the node's own place, references resolved.
    fn in_place(
        &self,
        map: &'r serde_json::Map<String, Value>,
        resolver: &Resolver<'r>,
        draft: Draft,
    ) -> Vec<(&'r Value, Resolver<'r>, Draft)> {
        let mut out: Vec<(&'r Value, Resolver<'r>, Draft)> = Vec::new();
        let mut own = |child: &'r Value| out.push((child, resolver.clone(), draft));
        IN_PLACE_ONE.iter().filter_map(|k| map.get(*k)).for_each(&mut own);
        for keyword in IN_PLACE_MANY {
            map.get(keyword).and_then(Value::as_array).into_iter().flatten().for_each(&mut own);
        }
        for keyword in IN_PLACE_MAP {
            let children = map.get(keyword).and_then(Value::as_object).into_iter().flat_map(|m| m.values());
            children.filter(|c| c.is_object() || c.is_boolean()).for_each(&mut own);
        }
        for keyword in ["$ref", "$dynamicRef", "$recursiveRef"] {
            let Some(reference) = map.get(keyword).and_then(Value::as_str) else { continue };
            // A reference that does not resolve did not compile either; `$dynamicRef`'s dynamic targets are
            // anchors of the same document, reached too by the `$ref`s that lead there.
            if let Ok(resolved) = resolver.lookup(reference) {
                let (target, target_resolver, target_draft) = resolved.into_inner();
                out.push((target, target_resolver, target_draft));
            }
        }
        out
    }
}

/// The subschemas of a node that apply to a member, an item or a key of the value.
fn descent(map: &serde_json::Map<String, Value>) -> impl Iterator<Item = &Value> {
    let one = DESCENT_ONE.iter().filter_map(|k| map.get(*k)).filter(|c| c.is_object() || c.is_boolean());
    let maps = DESCENT_MAP.iter().filter_map(|k| map.get(*k)?.as_object()).flat_map(|m| m.values());
    let many = DESCENT_MANY.iter().filter_map(|k| map.get(*k)?.as_array()).flatten();
    one.chain(maps).chain(many)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: &Value) -> Result<(), String> {
        check_shape(schema, Arc::new(referencing::DefaultRetriever))
    }

    /// `{"properties": {"x": {"$ref": "#/$defs/r0"}}, "$defs": {"r0": {"$ref": "#/$defs/r1"}, …}}`.
    fn chain(hops: usize) -> Value {
        let mut defs = serde_json::Map::new();
        for i in 0..hops {
            defs.insert(format!("r{i}"), json!({"$ref": format!("#/$defs/r{}", i + 1)}));
        }
        defs.insert(format!("r{hops}"), json!({"type": "boolean"}));
        json!({"properties": {"x": {"$ref": "#/$defs/r0"}}, "$defs": defs})
    }

    #[test]
    fn a_long_ref_chain_is_refused_and_a_short_one_kept() {
        assert!(check(&chain(MAX_CHAIN - 1)).is_ok());
        let err = check(&chain(5_000)).unwrap_err();
        assert!(err.contains("chains more than 32"), "{err}");
    }

    #[test]
    fn a_chain_whose_tail_was_measured_first_is_still_counted_whole() {
        let mut schema = chain(40);
        // `tail` is measured first (the walk takes the last member first), then `x` reaches it 20 hops in.
        schema["properties"]["tail"] = json!({"$ref": "#/$defs/r20"});
        let err = check(&schema).unwrap_err();
        assert!(err.contains("chains more than 32"), "{err}");
    }

    #[test]
    fn a_chain_through_ids_is_followed_as_jsonschema_resolves_it() {
        let mut defs = serde_json::Map::new();
        for i in 0..100 {
            defs.insert(format!("r{i}"), json!({"$id": format!("r{i}.json"), "$ref": format!("r{}.json", i + 1)}));
        }
        defs.insert("r100".into(), json!({"$id": "r100.json", "type": "boolean"}));
        let schema = json!({"$id": "https://example.com/root.json", "$ref": "r0.json", "$defs": defs});
        let err = check(&schema).unwrap_err();
        assert!(err.contains("chains more than"), "{err}");
    }

    #[test]
    fn doubling_alternatives_are_refused_by_what_they_apply() {
        let mut defs = serde_json::Map::new();
        for i in 0..14 {
            let next = format!("#/$defs/a{}", i + 1);
            defs.insert(format!("a{i}"), json!({"anyOf": [{"$ref": next}, {"$ref": next}]}));
        }
        defs.insert("a14".into(), json!({"type": "string"}));
        let err = check(&json!({"$ref": "#/$defs/a0", "$defs": defs})).unwrap_err();
        assert!(err.contains("applies more than"), "{err}");
    }

    #[test]
    fn a_cycle_that_never_descends_is_refused_and_recursion_through_the_value_is_kept() {
        let cycle = json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                           "$ref": "#/$defs/a"});
        assert!(check(&cycle).unwrap_err().contains("cycle"));
        let tree = json!({"$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"});
        assert!(check(&tree).is_ok());
    }
}
