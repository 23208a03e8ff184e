//! The events perf 6.1 opens for a formula, in its order.
//!
//! perf's metric parser (`expr.y` with `compute_ids`) collects a formula's event names
//! in a hash map (libbpf's): each name its own map, maps merged bottom-up as the parser
//! reduces (`ids__union`: the smaller map's entries inserted into the larger, the left
//! one kept on a tie), and constants folded on the way, so an `A if C else B` whose
//! condition is a constant (`#SMT_on`, `#core_wide < 1`) keeps only one branch's events.
//! perf builds the event string it opens, its error messages and its rows in the map's
//! iteration order, so perfkit follows it to say the same thing (which event is missing,
//! which row comes first).
//!
//! The map: a name hashes to `h = h * 31 + byte` (64-bit), a bucket is the top `bits` of
//! `h * 0x9E3779B97F4A7C15`; the table starts empty and doubles (to at least 4 buckets)
//! before an insert when `(size + 1) * 4 / 3` exceeds the buckets; an entry is put at the
//! head of its bucket; growing walks the old buckets in order, re-inserting each entry at
//! the head of its new bucket; a delete unlinks; iteration walks the buckets in order.

use super::expr::{Expr, ExprError};

/// perf's map of event names (its `ctx->ids`), iterated in perf's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IdMap {
    bits: u32,
    buckets: Vec<Vec<String>>,
    size: usize,
}

fn hash(name: &str) -> u64 {
    name.bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
}

fn bucket(h: u64, bits: u32) -> usize {
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

impl IdMap {
    /// The map after inserting `names` in order (repeats ignored).
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> IdMap {
        let mut m = IdMap::default();
        for n in names {
            m.insert(n.as_ref());
        }
        m
    }

    /// Whether `name` is in the map.
    pub fn contains(&self, name: &str) -> bool {
        self.size > 0
            && self.buckets[bucket(hash(name), self.bits)]
                .iter()
                .any(|e| e == name)
    }

    /// Add `name` (nothing when it is there: perf's `hashmap__set` keeps its place).
    pub fn insert(&mut self, name: &str) {
        if self.contains(name) {
            return;
        }
        if self.buckets.is_empty() || (self.size + 1) * 4 / 3 > self.buckets.len() {
            self.bits = (self.bits + 1).max(2);
            let mut grown: Vec<Vec<String>> = vec![Vec::new(); 1 << self.bits];
            for e in std::mem::take(&mut self.buckets).into_iter().flatten() {
                grown[bucket(hash(&e), self.bits)].insert(0, e);
            }
            self.buckets = grown;
        }
        self.buckets[bucket(hash(name), self.bits)].insert(0, name.to_string());
        self.size += 1;
    }

    /// Remove `name`.
    pub fn remove(&mut self, name: &str) {
        if self.size == 0 {
            return;
        }
        let b = &mut self.buckets[bucket(hash(name), self.bits)];
        if let Some(i) = b.iter().position(|e| e == name) {
            b.remove(i);
            self.size -= 1;
        }
    }

    /// perf's `ids__union`: the larger map (`self` on a tie) with the other's names
    /// inserted in its order.
    pub fn union(self, other: IdMap) -> IdMap {
        let (mut big, small) = if self.size < other.size {
            (other, self)
        } else {
            (self, other)
        };
        for n in small.iter() {
            big.insert(n);
        }
        big
    }

    /// The names in perf's iteration order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.buckets.iter().flatten().map(String::as_str)
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.size
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }
}

/// A value while collecting ids: a constant, or perf's BOTTOM (`None`: known only once
/// events are counted), with the names it needs.
struct Ids {
    val: Option<f64>,
    ids: Option<IdMap>,
}

impl Ids {
    fn constant(v: f64) -> Ids {
        Ids {
            val: Some(v),
            ids: None,
        }
    }

    /// perf's `union_expr`: BOTTOM with both sides' names.
    fn union(a: Ids, b: Ids) -> Ids {
        let ids = match (a.ids, b.ids) {
            (None, x) | (x, None) => x,
            (Some(a), Some(b)) => Some(a.union(b)),
        };
        Ids { val: None, ids }
    }
}

fn bad(what: String) -> ExprError {
    ExprError { at: 0, what }
}

impl Expr {
    /// The events perf opens for this formula, in its map's order, with `literal` giving
    /// each `#literal`'s value (`None`: perf's "Unrecognized literal", an error). perf
    /// refuses a formula that divides by a constant zero.
    pub fn perf_ids(&self, literal: &dyn Fn(&str) -> Option<f64>) -> Result<IdMap, ExprError> {
        Ok(self.collect_ids(literal)?.ids.unwrap_or_default())
    }

    fn collect_ids(&self, literal: &dyn Fn(&str) -> Option<f64>) -> Result<Ids, ExprError> {
        let two = |a: &Expr, b: &Expr| -> Result<(Ids, Ids), ExprError> {
            Ok((a.collect_ids(literal)?, b.collect_ids(literal)?))
        };
        Ok(match self {
            Expr::Num(v) => Ids::constant(*v),
            Expr::Literal(l) => {
                Ids::constant(literal(l).ok_or_else(|| bad(format!("unrecognized literal `{l}'")))?)
            }
            Expr::Event(n) | Expr::SourceCount(n) => Ids {
                val: None,
                ids: Some(IdMap::from_names(&[n])),
            },
            Expr::Neg(a) => {
                let a = a.collect_ids(literal)?;
                Ids {
                    val: a.val.map(|v| -v),
                    ids: a.ids,
                }
            }
            Expr::Bin(op, a, b) => {
                let (a, b) = two(a, b)?;
                if matches!(op, '/' | '%') && b.val == Some(0.0) {
                    return Err(bad("division by zero".into()));
                }
                match (a.val, b.val) {
                    (Some(x), Some(y)) => {
                        let e = Expr::Bin(*op, Box::new(Expr::Num(x)), Box::new(Expr::Num(y)));
                        Ids::constant(e.eval(&mut |_| None).unwrap_or(f64::NAN))
                    }
                    _ => Ids::union(a, b),
                }
            }
            Expr::Ratio(a, b) => {
                let (a, b) = two(a, b)?;
                match (a.val, b.val) {
                    (_, Some(0.0)) => Ids::constant(0.0),
                    (Some(x), Some(y)) => Ids::constant(x / y),
                    _ => Ids::union(a, b),
                }
            }
            // perf folds neither min nor max while collecting ids.
            Expr::Min(a, b) | Expr::Max(a, b) => {
                let (a, b) = two(a, b)?;
                Ids::union(a, b)
            }
            Expr::If(then, cond, other) => {
                let then = then.collect_ids(literal)?;
                let cond = cond.collect_ids(literal)?;
                let other = other.collect_ids(literal)?;
                match cond.val {
                    Some(0.0) => other,
                    Some(_) => then,
                    None if then.val.is_some() && then.val == other.val => {
                        Ids::constant(then.val.unwrap_or_default())
                    }
                    None => Ids::union(then, Ids::union(cond, other)),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(names: &[&str]) -> Vec<String> {
        IdMap::from_names(names).iter().map(String::from).collect()
    }

    #[test]
    fn as_perf_6_1_names_them() {
        // The first two events of perf 6.1's `-M` error messages on an AMD family-19h CPU.
        assert_eq!(
            order(&["ex_ret_brn_misp", "ex_ret_brn"]),
            ["ex_ret_brn", "ex_ret_brn_misp"]
        );
        assert_eq!(
            order(&[
                "l2_request_g1.all_no_prefetch",
                "l2_pf_hit_l2",
                "l2_pf_miss_l2_hit_l3",
                "l2_pf_miss_l2_l3"
            ])[..2],
            ["l2_pf_miss_l2_l3", "l2_pf_hit_l2"]
        );
        let dram: Vec<String> = (0..8)
            .map(|i| format!("dram_channel_data_controller_{i}"))
            .collect();
        let map = IdMap::from_names(&dram);
        let o: Vec<&str> = map.iter().collect();
        assert_eq!(
            o[..2],
            [
                "dram_channel_data_controller_4",
                "dram_channel_data_controller_1"
            ]
        );
        assert_eq!(o.len(), 8);
        assert_eq!(order(&["a", "b", "a"]).len(), 2);
        let mut m = IdMap::from_names(&["a", "b", "c"]);
        m.remove("b");
        m.remove("zz");
        assert_eq!(m.len(), 2);
        assert!(!m.contains("b") && m.contains("c"));
    }

    fn ids(formula: &str, smt: f64) -> Result<Vec<String>, ExprError> {
        let lit = move |l: &str| match l {
            "#SMT_on" => Some(smt),
            "#core_wide" => Some(0.0),
            _ => None,
        };
        Ok(Expr::parse(formula)?
            .perf_ids(&lit)?
            .iter()
            .map(String::from)
            .collect())
    }

    #[test]
    fn constant_conditions_keep_one_branch() {
        assert_eq!(ids("a if #SMT_on else b", 1.0).unwrap(), ["a"]);
        assert_eq!(ids("a if #SMT_on else b", 0.0).unwrap(), ["b"]);
        // skylakex's CORE_CLKS: `#core_wide < 1` is 1 outside system-wide counting.
        let core_clks =
            "((T / 2) * (1 + O / R)) if #core_wide < 1 else (A / 2) if #SMT_on else CLKS";
        let mut got = ids(core_clks, 1.0).unwrap();
        got.sort();
        assert_eq!(got, ["O", "R", "T"]);
        // A condition that needs counts keeps both branches and the condition's events.
        assert_eq!(ids("a if c > 1 else b", 1.0).unwrap().len(), 3);
        // Constants fold; d_ratio by a constant zero needs no events; `/ 0` is refused.
        assert!(ids("2 * 3 + 1", 1.0).unwrap().is_empty());
        assert!(ids("d_ratio(a, 0)", 1.0).unwrap().is_empty());
        assert!(ids("a / (1 - 1)", 1.0).is_err());
        assert!(ids("a * #nosuch", 1.0).is_err());
        // min/max keep both sides.
        assert_eq!(ids("min(a, 1)", 1.0).unwrap(), ["a"]);
    }
}
