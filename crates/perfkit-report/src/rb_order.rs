//! The order perf's report prints entries in: each entry inserted in turn into a red-black
//! tree (the kernel's `rb_insert_color`, which perf's tools share) and read back in order.
//!
//! With a comparison that is a total order this is a stable sort. perf's children mode
//! compares entries of equal children totals by their callchain depth only when both
//! entries belong to one thread (`__hpp__sort_acc`); entries of different threads compare
//! equal there and fall through to the next column. That comparison is not transitive, so
//! where an entry lands depends on the nodes it meets on its way down: on the tree's shape.
//! Building the same tree is the only way to print the same order.

/// The items in the order an in-order walk of the tree gives after inserting them one by
/// one (a node goes left of `node` when `left(new, node)`, else right: equal items keep
/// their insertion order).
pub fn rb_order<T>(items: Vec<T>, mut left: impl FnMut(&T, &T) -> bool) -> Vec<T> {
    let n = items.len();
    let mut t = Tree {
        nodes: Vec::with_capacity(n),
        root: NIL,
    };
    for i in 0..n {
        let (mut parent, mut go_left) = (NIL, false);
        let mut at = t.root;
        while at != NIL {
            parent = at;
            go_left = left(&items[i], &items[at]);
            at = if go_left {
                t.nodes[at].left
            } else {
                t.nodes[at].right
            };
        }
        t.nodes.push(Node {
            left: NIL,
            right: NIL,
            parent,
            red: true,
        });
        if parent == NIL {
            t.root = i;
        } else if go_left {
            t.nodes[parent].left = i;
        } else {
            t.nodes[parent].right = i;
        }
        t.fix_after_insert(i);
    }
    // In-order walk.
    let mut order = Vec::with_capacity(n);
    let mut stack = Vec::new();
    let mut at = t.root;
    while at != NIL || !stack.is_empty() {
        while at != NIL {
            stack.push(at);
            at = t.nodes[at].left;
        }
        let top = stack.pop().unwrap_or(NIL);
        order.push(top);
        at = t.nodes[top].right;
    }
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

const NIL: usize = usize::MAX;

struct Node {
    left: usize,
    right: usize,
    parent: usize,
    red: bool,
}

struct Tree {
    nodes: Vec<Node>,
    root: usize,
}

impl Tree {
    fn red(&self, i: usize) -> bool {
        i != NIL && self.nodes[i].red
    }

    /// Replace `old` by `new` under `old`'s parent (or as the root).
    fn relink(&mut self, old: usize, new: usize) {
        let parent = self.nodes[old].parent;
        self.nodes[new].parent = parent;
        if parent == NIL {
            self.root = new;
        } else if self.nodes[parent].left == old {
            self.nodes[parent].left = new;
        } else {
            self.nodes[parent].right = new;
        }
    }

    fn rotate_left(&mut self, x: usize) {
        let y = self.nodes[x].right;
        let inner = self.nodes[y].left;
        self.nodes[x].right = inner;
        if inner != NIL {
            self.nodes[inner].parent = x;
        }
        self.relink(x, y);
        self.nodes[y].left = x;
        self.nodes[x].parent = y;
    }

    fn rotate_right(&mut self, x: usize) {
        let y = self.nodes[x].left;
        let inner = self.nodes[y].right;
        self.nodes[x].left = inner;
        if inner != NIL {
            self.nodes[inner].parent = x;
        }
        self.relink(x, y);
        self.nodes[y].right = x;
        self.nodes[x].parent = y;
    }

    /// The classic fix-up (a red uncle recolours and moves up; otherwise one or two
    /// rotations at the grandparent), as the kernel's `__rb_insert` does it.
    fn fix_after_insert(&mut self, mut node: usize) {
        loop {
            let parent = self.nodes[node].parent;
            if parent == NIL {
                self.nodes[node].red = false;
                return;
            }
            if !self.nodes[parent].red {
                return;
            }
            let gparent = self.nodes[parent].parent;
            let parent_is_left = self.nodes[gparent].left == parent;
            let uncle = if parent_is_left {
                self.nodes[gparent].right
            } else {
                self.nodes[gparent].left
            };
            if self.red(uncle) {
                self.nodes[uncle].red = false;
                self.nodes[parent].red = false;
                self.nodes[gparent].red = true;
                node = gparent;
                continue;
            }
            let mut parent = parent;
            if parent_is_left {
                if self.nodes[parent].right == node {
                    self.rotate_left(parent);
                    parent = node;
                }
                self.rotate_right(gparent);
            } else {
                if self.nodes[parent].left == node {
                    self.rotate_right(parent);
                    parent = node;
                }
                self.rotate_left(gparent);
            }
            self.nodes[parent].red = false;
            self.nodes[gparent].red = true;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_total_order_is_a_stable_sort() {
        // (key, insertion index): descending keys, equal keys in insertion order.
        let items: Vec<(u32, usize)> = [5, 3, 9, 3, 1, 9, 9, 0, 7, 3, 5, 2, 8, 8, 4, 6]
            .into_iter()
            .enumerate()
            .map(|(i, k)| (k, i))
            .collect();
        let mut want = items.clone();
        want.sort_by_key(|x| std::cmp::Reverse(x.0));
        assert_eq!(rb_order(items, |a, b| a.0 > b.0), want);
    }

    #[test]
    fn shape_decides_a_non_transitive_order() {
        // a < b and b < c, but a and c compare equal (as entries of two threads do in
        // perf's children sort).
        let rank = |x: &char| match x {
            'a' => 0,
            'b' => 1,
            _ => 2,
        };
        let left = |x: &char, y: &char| {
            let (x, y) = (rank(x), rank(y));
            x < y && !(x == 0 && y == 2)
        };
        // a at the root; c right of it (equal); b right of a and left of c, then rotated
        // to the root: a, b, c.
        assert_eq!(rb_order(vec!['a', 'c', 'b'], left), vec!['a', 'b', 'c']);
        // c at the root; a right of it (equal); b left of c: b, c, a, though a < b.
        assert_eq!(rb_order(vec!['c', 'a', 'b'], left), vec!['b', 'c', 'a']);
    }

    #[test]
    fn many_items_with_repeats_come_out_stably_sorted() {
        let items: Vec<u64> = (0..2000u64).map(|i| (i * 7919) % 1009).collect();
        let got = rb_order(items.clone(), |a, b| a < b);
        let mut want = items;
        want.sort();
        assert_eq!(got, want);
    }
}
