//! The names a rule's condition may use, checked when it is compiled: the variables `args`, `context`, `tool` and
//! `now` (and those a macro binds), the fields of `context` and `tool`, and the functions of CEL's standard library
//! that `cost.rs` can bound. Anything else is refused with its line and column, rather than failing on calls.

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

/// The variables a rule sees.
pub const VARIABLES: [&str; 4] = ["args", "context", "tool", "now"];
const CONTEXT_FIELDS: [&str; 4] = ["user_id", "tenant", "session_id", "values"];
const TOOL_FIELDS: [&str; 2] = ["name", "labels"];

/// Operators and functions a rule may call.
pub const FUNCTIONS: &[&str] = &[
    "_?_:_",
    "_&&_",
    "_||_",
    "!_",
    "@not_strictly_false",
    "_==_",
    "_!=_",
    "_<_",
    "_<=_",
    "_>_",
    "_>=_",
    "_+_",
    "_-_",
    "_*_",
    "_/_",
    "_%_",
    "-_",
    "_[_]",
    "@in",
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "timestamp",
    "duration",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
];

/// How deep macros (`all`, `exists`, `exists_one`, `map`, `filter`) may nest: each level multiplies a rule's cost
/// by the call's size.
pub const MAX_NESTED_MACROS: usize = 3;

/// How deep a condition's expression may nest: a rule is evaluated recursively, on the caller's stack.
pub const MAX_DEPTH: usize = 32;

/// What is wrong, and where (1-based).
#[derive(Debug)]
pub struct Misnamed {
    pub line: usize,
    pub column: usize,
    pub reason: String,
}

/// Checks every name in `program`.
pub fn names(program: &cel::Program) -> Result<(), Misnamed> {
    let mut walk = Walk { program, bound: Vec::new(), nested: 0, depth: 0 };
    walk.expr(program.expression())
}

struct Walk<'p> {
    program: &'p cel::Program,
    /// Names bound by the comprehensions around the node being checked.
    bound: Vec<&'p str>,
    /// Comprehensions around the node being checked.
    nested: usize,
    /// Nodes above the one being checked.
    depth: usize,
}

impl<'p> Walk<'p> {
    fn expr(&mut self, node: &'p IdedExpr) -> Result<(), Misnamed> {
        if self.depth == MAX_DEPTH {
            return Err(self.at(node, format!("the condition nests deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        let checked = self.node(node);
        self.depth -= 1;
        checked
    }

    fn node(&mut self, node: &'p IdedExpr) -> Result<(), Misnamed> {
        match &node.expr {
            Expr::Ident(name) => self.variable(node, name),
            Expr::Select(select) => {
                if let Expr::Ident(root) = &select.operand.expr
                    && !self.bound.contains(&root.as_str())
                {
                    self.field(node, root, &select.field)?;
                }
                self.expr(&select.operand)
            }
            Expr::Call(call) => {
                if !FUNCTIONS.contains(&call.func_name.as_str()) {
                    return Err(self.at(node, format!("unknown function `{}`", call.func_name)));
                }
                if call.func_name == "matches"
                    && let Some(Expr::Literal(LiteralValue::String(pattern))) = call.args.last().map(|a| &a.expr)
                    && let Err(err) = regex::Regex::new(pattern.inner())
                {
                    // A pattern written in the rule is compiled here, as the rule is: else it would fail on every
                    // call, and the rule would fall to its `on_error`.
                    let reason =
                        format!("the pattern {:?} of `matches` is not a regular expression: {err}", pattern.inner());
                    return Err(self.at(node, reason));
                }
                if let Some(target) = &call.target {
                    self.expr(target)?;
                }
                call.args.iter().try_for_each(|arg| self.expr(arg))
            }
            Expr::Comprehension(c) => {
                if self.nested == MAX_NESTED_MACROS {
                    let reason = format!("macros (all, exists, map, filter) nest at most {MAX_NESTED_MACROS} deep");
                    return Err(self.at(node, reason));
                }
                self.expr(&c.iter_range)?;
                self.expr(&c.accu_init)?;
                self.nested += 1;
                let depth = self.bound.len();
                self.bound.push(&c.iter_var);
                self.bound.extend(c.iter_var2.as_deref());
                self.bound.push(&c.accu_var);
                let inner = [&c.loop_cond, &c.loop_step, &c.result].into_iter().try_for_each(|e| self.expr(e));
                self.bound.truncate(depth);
                self.nested -= 1;
                inner
            }
            Expr::List(list) => list.elements.iter().try_for_each(|e| self.expr(e)),
            Expr::Map(map) => map.entries.iter().try_for_each(|entry| match &entry.expr {
                EntryExpr::MapEntry(e) => self.expr(&e.key).and_then(|()| self.expr(&e.value)),
                EntryExpr::StructField(_) => Err(self.at(node, "message literals are not supported".into())),
            }),
            Expr::Literal(_) => Ok(()),
            Expr::Struct(_) | Expr::Unspecified => Err(self.at(node, "message literals are not supported".into())),
        }
    }

    fn variable(&self, node: &IdedExpr, name: &str) -> Result<(), Misnamed> {
        if self.bound.contains(&name) || VARIABLES.contains(&name) {
            return Ok(());
        }
        Err(self.at(node, format!("unknown variable `{name}`: a rule sees args, context, tool and now")))
    }

    fn field(&self, node: &IdedExpr, root: &str, field: &str) -> Result<(), Misnamed> {
        let known: &[&str] = match root {
            "context" => &CONTEXT_FIELDS,
            "tool" => &TOOL_FIELDS,
            _ => return Ok(()),
        };
        if known.contains(&field) {
            return Ok(());
        }
        Err(self.at(node, format!("`{root}` has no field `{field}`: it has {}", known.join(", "))))
    }

    fn at(&self, node: &IdedExpr, reason: String) -> Misnamed {
        let info = self.program.source_info();
        let start = info.offset_for(node.id).map_or(0, |(start, _)| start as usize);
        let before = info.source.get(..start).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Misnamed { line, column, reason }
    }
}
