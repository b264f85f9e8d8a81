//! A bound on what a rule can cost, worked out once when it is compiled: the work it may do and the largest value
//! it may build, as polynomials in two measures of the call: `n`, its size in bytes, and `m`, the most elements
//! any one list or map in it has. Evaluating them at a call's `n` and `m` is a few multiplications, so a call
//! never runs a rule whose bound is past the budget (`MAX_WORK`, `MAX_BUILT_BYTES`).
//!
//! What is counted: every node evaluated, every byte a comparison, search or concatenation reads or copies. A
//! macro's loop over a list of the call takes at most `m` steps; each step of `map` or `filter` copies the list
//! built so far, so those are quadratic in `m`, and a loop in a loop multiplies.

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

/// Degrees kept in each variable; a product past them saturates every coefficient (unbounded).
const D: usize = 4;

/// `Σ c[i][j]·nⁱ·mʲ` with saturating coefficients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Poly([[u64; D]; D]);

impl Poly {
    const ZERO: Poly = Poly([[0; D]; D]);
    const UNBOUNDED: Poly = Poly([[u64::MAX; D]; D]);

    fn constant(c: u64) -> Poly {
        let mut p = Poly::ZERO;
        p.0[0][0] = c;
        p
    }

    /// `n`, the call's size in bytes.
    fn n() -> Poly {
        let mut p = Poly::ZERO;
        p.0[1][0] = 1;
        p
    }

    /// `m`, the most elements of a list or map of the call.
    fn m() -> Poly {
        let mut p = Poly::ZERO;
        p.0[0][1] = 1;
        p
    }

    fn zip(self, other: Poly, f: impl Fn(u64, u64) -> u64) -> Poly {
        Poly(std::array::from_fn(|i| std::array::from_fn(|j| f(self.0[i][j], other.0[i][j]))))
    }

    fn plus(self, other: Poly) -> Poly {
        self.zip(other, u64::saturating_add)
    }

    fn minus(self, other: Poly) -> Poly {
        self.zip(other, u64::saturating_sub)
    }

    fn times(self, other: Poly) -> Poly {
        let mut out = Poly::ZERO;
        for (i, j, a) in self.terms() {
            for (k, l, b) in other.terms() {
                let term = a.saturating_mul(b);
                match out.0.get_mut(i + k).and_then(|row| row.get_mut(j + l)) {
                    Some(slot) => *slot = slot.saturating_add(term),
                    None => return Poly::UNBOUNDED,
                }
            }
        }
        out
    }

    fn terms(self) -> impl Iterator<Item = (usize, usize, u64)> {
        (0..D).flat_map(move |i| (0..D).map(move |j| (i, j, self.0[i][j]))).filter(|&(_, _, c)| c > 0)
    }

    /// The polynomial's value at `n` and `m`: sixteen products, on every call of every rule.
    pub fn at(self, n: u64, m: u64) -> u64 {
        let powers = |x: u64| [1, x, x.saturating_mul(x), x.saturating_mul(x).saturating_mul(x)];
        let (np, mp) = (powers(n), powers(m));
        let mut total = 0u64;
        for (row, &ni) in self.0.iter().zip(&np) {
            for (&c, &mj) in row.iter().zip(&mp) {
                total = total.saturating_add(c.saturating_mul(ni).saturating_mul(mj));
            }
        }
        total
    }
}

/// A rule's bound: the work it does and the largest value it builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    work: Poly,
    size: Poly,
}

impl Cost {
    pub fn work(&self, n: u64, m: u64) -> u64 {
        self.work.at(n, m)
    }

    pub fn size(&self, n: u64, m: u64) -> u64 {
        self.size.at(n, m)
    }
}

/// The bound of a checked expression (`check.rs` refuses what this does not know).
pub fn of(expr: &IdedExpr) -> Cost {
    let bound = Walk { bound: Vec::new() }.expr(expr);
    Cost { work: bound.work, size: bound.size }
}

/// What one expression may cost, how large its value may be, and how many elements it may have.
#[derive(Debug, Clone, Copy)]
struct Bound {
    work: Poly,
    size: Poly,
    count: Poly,
    /// Part of the call (not built by the rule): its lists and maps have at most `m` elements.
    of_call: bool,
}

impl Bound {
    fn value(work: Poly, size: Poly, count: Poly) -> Bound {
        Bound { work, size, count, of_call: false }
    }

    /// A part of this value (a field, an element).
    fn part(self, work: Poly) -> Bound {
        let count = if self.of_call { Poly::m() } else { self.size };
        Bound { work, size: self.size, count, of_call: self.of_call }
    }
}

struct Walk<'e> {
    /// The bounds of the names the enclosing macros bind.
    bound: Vec<(&'e str, Bound)>,
}

impl<'e> Walk<'e> {
    fn expr(&mut self, node: &'e IdedExpr) -> Bound {
        let one = Poly::constant(1);
        match &node.expr {
            Expr::Literal(literal) => Bound::value(one, Poly::constant(literal_size(literal)), one),
            Expr::Ident(name) => match self.bound.iter().rev().find(|(n, _)| n == name) {
                Some((_, bound)) => Bound { work: one, ..*bound },
                None => Bound { work: one, size: Poly::n(), count: Poly::m(), of_call: true },
            },
            Expr::Select(select) => {
                let operand = self.expr(&select.operand);
                operand.part(operand.work.plus(one))
            }
            Expr::List(list) => self.literal(list.elements.iter()),
            Expr::Map(map) => self.literal(map.entries.iter().flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(e) => vec![&e.key, &e.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })),
            Expr::Call(call) => {
                let parts: Vec<Bound> =
                    call.target.iter().map(|t| &**t).chain(&call.args).map(|a| self.expr(a)).collect();
                call_bound(&call.func_name, &parts)
            }
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::Struct(_) | Expr::Unspecified => Bound::value(Poly::UNBOUNDED, Poly::UNBOUNDED, Poly::UNBOUNDED),
        }
    }

    /// A list or map literal: its parts, and one unit (of work, size and count) per part.
    fn literal(&mut self, parts: impl Iterator<Item = &'e IdedExpr>) -> Bound {
        let one = Poly::constant(1);
        parts.fold(Bound::value(one, one, Poly::ZERO), |acc, part| {
            let part = self.expr(part);
            Bound::value(acc.work.plus(part.work).plus(one), acc.size.plus(part.size).plus(one), acc.count.plus(one))
        })
    }

    /// A macro's loop: one step per element of its range. The elements' sizes sum to the range's, so a step's
    /// cost is bounded with an element of size 0 (`free`, paid on every step) and with one as large as the whole
    /// range (`full`): what the elements add over all the steps is at most `full - free`, as every term grows
    /// with them at least linearly.
    fn comprehension(&mut self, c: &'e ComprehensionExpr) -> Bound {
        let (range, init) = (self.expr(&c.iter_range), self.expr(&c.accu_init));
        let steps = range.count;
        let over_steps = |free: Poly, full: Poly| steps.times(free).plus(full.minus(free));
        let element = |size: Poly| Bound { size, ..range.part(Poly::ZERO) };
        let empty = Bound::value(Poly::ZERO, Poly::ZERO, Poly::ZERO);
        // What the steps add to the accumulator: a step whose answer does not grow with the accumulator keeps it
        // small (`all`, `exists`); one that does (`map`, `filter`) may add to it on every step.
        let free = self.step(c, element(Poly::ZERO), empty);
        let full = self.step(c, element(range.size), empty);
        let probe = Bound::value(Poly::ZERO, Poly::constant(1 << 32), Poly::constant(1 << 32));
        let accu = if self.step(c, element(Poly::ZERO), probe).size != free.size {
            let (size, count) = (over_steps(free.size, full.size), over_steps(free.count, full.count));
            Bound::value(Poly::ZERO, init.size.plus(size), init.count.plus(count))
        } else {
            Bound::value(Poly::ZERO, init.size.plus(full.size), init.count.plus(full.count))
        };
        let (free, full) = (self.step(c, element(Poly::ZERO), accu), self.step(c, element(range.size), accu));
        let result = self.with(c, element(range.size), accu, |walk| walk.expr(&c.result));
        let loops = over_steps(free.work.plus(Poly::constant(1)), full.work.plus(Poly::constant(1)));
        let work = range.work.plus(init.work).plus(loops).plus(result.work);
        Bound::value(work, result.size, result.count)
    }

    /// One step of a macro's loop (its condition and its step) with an element and an accumulator so bounded.
    fn step(&mut self, c: &'e ComprehensionExpr, element: Bound, accu: Bound) -> Bound {
        self.with(c, element, accu, |walk| {
            let (cond, step) = (walk.expr(&c.loop_cond), walk.expr(&c.loop_step));
            Bound { work: cond.work.plus(step.work), ..step }
        })
    }

    fn with(
        &mut self,
        c: &'e ComprehensionExpr,
        element: Bound,
        accu: Bound,
        f: impl FnOnce(&mut Self) -> Bound,
    ) -> Bound {
        let depth = self.bound.len();
        self.bound.push((&c.iter_var, element));
        if let Some(second) = &c.iter_var2 {
            self.bound.push((second, element));
        }
        self.bound.push((&c.accu_var, accu));
        let out = f(self);
        self.bound.truncate(depth);
        out
    }
}

fn literal_size(literal: &LiteralValue) -> u64 {
    let len = match literal {
        LiteralValue::String(s) => s.len(),
        LiteralValue::Bytes(b) => b.len(),
        _ => 1,
    };
    u64::try_from(len).unwrap_or(u64::MAX).max(1)
}

/// An operator or function over parts already bounded.
fn call_bound(function: &str, parts: &[Bound]) -> Bound {
    let one = Poly::constant(1);
    let work = parts.iter().fold(one, |acc, p| acc.plus(p.work));
    let size = parts.iter().fold(Poly::ZERO, |acc, p| acc.plus(p.size));
    let count = parts.iter().fold(Poly::ZERO, |acc, p| acc.plus(p.count));
    match function {
        // Logic: the operands are evaluated, the answer is a bool.
        "_&&_" | "_||_" | "!_" | "@not_strictly_false" => Bound::value(work, one, one),
        // The answer is one of the branches.
        "_?_:_" => {
            let branches = &parts[1.min(parts.len())..];
            let sum = |f: fn(&Bound) -> Poly| branches.iter().fold(Poly::ZERO, |acc, p| acc.plus(f(p)));
            Bound::value(work, sum(|p| p.size), sum(|p| p.count))
        }
        // Comparisons and searches read their operands whole.
        "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" | "@in" | "contains" | "startsWith" | "endsWith" => {
            Bound::value(work.plus(size), one, one)
        }
        // A pattern is compiled, then run over the text: their product bounds it.
        "matches" => {
            let product = parts.iter().fold(one, |acc, p| acc.times(p.size.plus(one)));
            Bound::value(work.plus(product), one, one)
        }
        // Concatenation copies both sides (bytes bound a list's elements too).
        "_+_" => Bound::value(work.plus(size), size, count),
        // An element or a field is no larger than its container.
        "_[_]" => parts.first().map_or(Bound::value(work, one, one), |p| p.part(work)),
        "string" => Bound::value(work.plus(size), size, one),
        // Numbers, sizes, times: a small answer; parsing a text costs its length.
        _ => Bound::value(work.plus(size), one, one),
    }
}
