//! Lookup tables over a schema's nodes, built at most once per call, so repair's cost grows with the arguments
//! rather than with arguments × schema; and the work budget that bounds whatever cost is left.

use super::coerce::loose;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// Steps of repair work a call may take: a value visited, a table entry built, a candidate compared. Linear
/// work on the largest arguments allowed (1 MiB, at most ~512k values) fits within it.
const MAX_STEPS: usize = 2_000_000;
/// Bytes of text a call's repair may parse out of strings or write into `Repair` records.
const MAX_BYTES: usize = 8 << 20;

/// What the model reads when a call's repair would take more than its budget.
pub const TOO_LARGE: &str = "the arguments are too large to repair: fixing them would take more work than a call \
                             may use; send arguments that are valid as the schema says";

/// The work a call's repair has done so far.
#[derive(Debug, Default)]
pub struct LookupBudget {
    steps: usize,
    bytes: usize,
}

impl LookupBudget {
    /// Charges `steps` and `bytes`; false once either is past its bound.
    pub fn spend(&mut self, steps: usize, bytes: usize) -> bool {
        self.steps = self.steps.saturating_add(steps);
        self.bytes = self.bytes.saturating_add(bytes);
        !self.spent()
    }

    pub fn spent(&self) -> bool {
        self.steps > MAX_STEPS || self.bytes > MAX_BYTES
    }
}

/// One `enum`'s members: exact membership by hash for strings and scalars, and their loose spellings.
#[derive(Debug)]
pub struct EnumTable<'a> {
    /// Strings by their text; other scalars by their JSON text (equal scalars write the same text).
    scalars: HashSet<(bool, String)>,
    /// Arrays and objects, compared one by one: rare in enums, and each comparison is charged.
    composite: Vec<&'a Value>,
    /// Each string member by its loose spelling; None where two members share one.
    loose: HashMap<String, Option<&'a Value>>,
}

impl<'a> EnumTable<'a> {
    pub fn new(members: &'a [Value]) -> Self {
        let mut table =
            EnumTable { scalars: HashSet::new(), composite: Vec::new(), loose: HashMap::with_capacity(members.len()) };
        for member in members {
            match member {
                Value::Array(_) | Value::Object(_) => table.composite.push(member),
                other => {
                    table.scalars.insert(scalar_key(other));
                }
            }
            if let Some(text) = member.as_str().map(loose).filter(|l| !l.is_empty()) {
                table.loose.entry(text).and_modify(|m| *m = None).or_insert(Some(member));
            }
        }
        table
    }

    /// Whether `value` is a member, and the steps it took.
    pub fn contains(&self, value: &Value) -> (bool, usize) {
        match value {
            Value::Array(_) | Value::Object(_) => {
                let at = self.composite.iter().position(|m| *m == value);
                (at.is_some(), at.map_or(self.composite.len(), |i| i + 1))
            }
            scalar => (self.scalars.contains(&scalar_key(scalar)), 1),
        }
    }

    /// The one member a string names, ignoring case, spaces and punctuation. None when zero or several do.
    pub fn loose_member(&self, value: &Value) -> Option<&'a Value> {
        let wanted = loose(value.as_str()?);
        self.loose.get(&wanted).copied().flatten()
    }
}

fn scalar_key(value: &Value) -> (bool, String) {
    match value {
        Value::String(s) => (true, s.clone()),
        other => (false, other.to_string()),
    }
}

/// The tables one call's repair has built, by the address of the schema node they were built from.
#[derive(Debug, Default)]
pub struct Tables<'a> {
    pub budget: LookupBudget,
    enums: HashMap<usize, EnumTable<'a>>,
    /// A `properties` object's names by loose spelling.
    spellings: HashMap<usize, HashMap<String, Vec<&'a String>>>,
    /// A node's `required` names.
    required: HashMap<usize, HashSet<&'a str>>,
}

impl<'a> Tables<'a> {
    pub fn enum_table(&mut self, members: &'a [Value]) -> &EnumTable<'a> {
        let budget = &mut self.budget;
        self.enums.entry(members.as_ptr() as usize).or_insert_with(|| {
            budget.spend(members.len(), 0);
            EnumTable::new(members)
        })
    }

    /// The properties whose loose spelling is `wanted`.
    pub fn spelled(&mut self, props: &'a Map<String, Value>, wanted: &str) -> &[&'a String] {
        let budget = &mut self.budget;
        let table = self.spellings.entry(std::ptr::from_ref(props) as usize).or_insert_with(|| {
            budget.spend(props.len(), 0);
            let mut table: HashMap<String, Vec<&'a String>> = HashMap::with_capacity(props.len());
            for name in props.keys() {
                table.entry(loose(name)).or_default().push(name);
            }
            table
        });
        table.get(wanted).map_or(&[], Vec::as_slice)
    }

    /// Whether `name` is in the `required` list `required` (the node's keyword value).
    pub fn is_required(&mut self, required: Option<&'a Value>, name: &str) -> bool {
        let Some(list) = required.and_then(Value::as_array) else { return false };
        let budget = &mut self.budget;
        let set = self.required.entry(list.as_ptr() as usize).or_insert_with(|| {
            budget.spend(list.len(), 0);
            list.iter().filter_map(Value::as_str).collect()
        });
        set.contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn enum_members_match_only_when_unique() {
        let members = [json!("Pet-friendly"), json!("Disabled Access"), json!("celsius"), json!("Celsius ")];
        let table = EnumTable::new(&members);
        assert_eq!(table.loose_member(&json!("pet friendly")), Some(&json!("Pet-friendly")));
        assert_eq!(table.loose_member(&json!("DISABLED_ACCESS")), Some(&json!("Disabled Access")));
        assert_eq!(table.loose_member(&json!("celsius")), None, "two members match");
        assert_eq!(table.loose_member(&json!("C")), None);
        assert_eq!(table.loose_member(&json!("--")), None);
        assert_eq!(table.loose_member(&json!(5)), None);
    }

    #[test]
    fn membership_is_exact() {
        let members = [json!("1"), json!(2), json!(null), json!([1]), json!({"a": 1})];
        let table = EnumTable::new(&members);
        for member in &members {
            assert!(table.contains(member).0, "{member}");
        }
        for other in [json!(1), json!("2"), json!(2.0), json!(false), json!([2]), json!({"a": 2})] {
            assert!(!table.contains(&other).0, "{other}");
        }
    }

    #[test]
    fn the_budget_runs_out() {
        let mut budget = LookupBudget::default();
        assert!(budget.spend(MAX_STEPS, MAX_BYTES));
        assert!(!budget.spend(1, 0) && budget.spent());
    }
}
