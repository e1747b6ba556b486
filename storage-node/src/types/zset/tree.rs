//! An order-statistic treap over `(score, member)` pairs, with a member → node index.
//!
//! Nodes live in one arena (`Vec<Node>`) and link by `u32` index, so a member is stored
//! once: the index is a hash table of node numbers that hashes and compares through the
//! arena. Each node knows the size of its subtree, which makes rank, select and "how many
//! elements come before this bound" O(log n) in expectation. Node numbers are stable while
//! a member exists, so a score update detaches and re-attaches the same node.
//!
//! Order is Redis's: by score (with `-0` equal to `0`), then by member bytes.

use std::cmp::Ordering;
use std::hash::BuildHasher;

use hashbrown::hash_table::HashTable;
use hashbrown::DefaultHashBuilder;

use crate::types::CompactBytes;

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Node {
    member: CompactBytes,
    score: f64,
    left: u32,
    right: u32,
    size: u32,
    priority: u32,
}

/// A sorted set's members in `(score, member)` order.
#[derive(Clone, Debug, Default)]
pub struct ScoreTree {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: Root,
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
    seed: u32,
}

/// The root link, NIL when empty (a newtype so that `Default` gives NIL).
#[derive(Clone, Copy, Debug)]
struct Root(u32);

impl Default for Root {
    fn default() -> Self {
        Root(NIL)
    }
}

/// Redis's element order.
pub fn compare(score_a: f64, member_a: &[u8], score_b: f64, member_b: &[u8]) -> Ordering {
    if score_a < score_b {
        Ordering::Less
    } else if score_a > score_b {
        Ordering::Greater
    } else {
        member_a.cmp(member_b)
    }
}

impl ScoreTree {
    pub fn new() -> ScoreTree {
        ScoreTree::default()
    }

    pub fn len(&self) -> usize {
        self.size_of(self.root.0) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.root.0 == NIL
    }

    fn size_of(&self, id: u32) -> u32 {
        if id == NIL {
            0
        } else {
            self.nodes[id as usize].size
        }
    }

    fn node(&self, id: u32) -> &Node {
        &self.nodes[id as usize]
    }

    fn update(&mut self, id: u32) {
        let (l, r) = (self.node(id).left, self.node(id).right);
        let size = 1 + self.size_of(l) + self.size_of(r);
        self.nodes[id as usize].size = size;
    }

    fn find(&self, member: &[u8]) -> Option<u32> {
        let hash = self.hasher.hash_one(member);
        let nodes = &self.nodes;
        self.index
            .find(hash, |&id| nodes[id as usize].member.as_slice() == member)
            .copied()
    }

    /// The hash of a member in this tree's index (fixed while the tree lives; ZSCAN).
    pub fn member_hash(&self, member: &[u8]) -> u64 {
        self.hasher.hash_one(member)
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|id| self.node(id).score)
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        self.find(member).is_some()
    }

    fn next_priority(&mut self) -> u32 {
        // xorshift32: priorities only need to look random to keep the treap balanced, but
        // they must not be predictable: from a fixed seed, a client could choose scores in
        // the priorities' order and build a chain as deep as the set is long, which the
        // recursive split/merge/attach then overflowed the stack on (ZADD of 200,000
        // crafted scores). The first one comes from the tree's randomly seeded hasher.
        let mut x = if self.seed == 0 {
            (self.hasher.hash_one(self.nodes.len()) as u32) | 1
        } else {
            self.seed
        };
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.seed = x;
        x
    }

    fn less(&self, a: u32, b: u32) -> bool {
        let (na, nb) = (self.node(a), self.node(b));
        compare(na.score, &na.member, nb.score, &nb.member) == Ordering::Less
    }

    /// Splits `root` into the nodes ordered before node `pivot` and those after it.
    fn split(&mut self, root: u32, pivot: u32) -> (u32, u32) {
        if root == NIL {
            return (NIL, NIL);
        }
        if self.less(root, pivot) {
            let right = self.node(root).right;
            let (l, r) = self.split(right, pivot);
            self.nodes[root as usize].right = l;
            self.update(root);
            (root, r)
        } else {
            let left = self.node(root).left;
            let (l, r) = self.split(left, pivot);
            self.nodes[root as usize].left = r;
            self.update(root);
            (l, root)
        }
    }

    /// Joins two treaps where every node of `a` comes before every node of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.node(a).priority > self.node(b).priority {
            let right = self.node(a).right;
            let merged = self.merge(right, b);
            self.nodes[a as usize].right = merged;
            self.update(a);
            a
        } else {
            let left = self.node(b).left;
            let merged = self.merge(a, left);
            self.nodes[b as usize].left = merged;
            self.update(b);
            b
        }
    }

    fn attach(&mut self, root: u32, id: u32) -> u32 {
        if root == NIL {
            return id;
        }
        if self.node(id).priority > self.node(root).priority {
            let (l, r) = self.split(root, id);
            let node = &mut self.nodes[id as usize];
            node.left = l;
            node.right = r;
            self.update(id);
            return id;
        }
        if self.less(id, root) {
            let left = self.node(root).left;
            let attached = self.attach(left, id);
            self.nodes[root as usize].left = attached;
        } else {
            let right = self.node(root).right;
            let attached = self.attach(right, id);
            self.nodes[root as usize].right = attached;
        }
        self.update(root);
        root
    }

    fn detach(&mut self, root: u32, id: u32) -> u32 {
        if root == id {
            let (l, r) = (self.node(id).left, self.node(id).right);
            let node = &mut self.nodes[id as usize];
            node.left = NIL;
            node.right = NIL;
            node.size = 1;
            return self.merge(l, r);
        }
        if root == NIL {
            return NIL;
        }
        if self.less(id, root) {
            let left = self.node(root).left;
            let detached = self.detach(left, id);
            self.nodes[root as usize].left = detached;
        } else {
            let right = self.node(root).right;
            let detached = self.detach(right, id);
            self.nodes[root as usize].right = detached;
        }
        self.update(root);
        root
    }

    /// Adds a member that is not present yet.
    pub fn insert_new(&mut self, member: &[u8], score: f64) {
        let priority = self.next_priority();
        let node = Node {
            member: CompactBytes::new(member),
            score,
            left: NIL,
            right: NIL,
            size: 1,
            priority,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let hash = self.hasher.hash_one(member);
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        self.index.insert_unique(hash, id, |&i| {
            hasher.hash_one(nodes[i as usize].member.as_slice())
        });
        self.root.0 = self.attach(self.root.0, id);
    }

    /// Sets a member's score, adding it if needed. Returns the previous score.
    pub fn set_score(&mut self, member: &[u8], score: f64) -> Option<f64> {
        match self.find(member) {
            Some(id) => {
                let old = self.node(id).score;
                if old != score || old.is_sign_negative() != score.is_sign_negative() {
                    self.root.0 = self.detach(self.root.0, id);
                    self.nodes[id as usize].score = score;
                    self.root.0 = self.attach(self.root.0, id);
                }
                Some(old)
            }
            None => {
                self.insert_new(member, score);
                None
            }
        }
    }

    /// Removes a member. Returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let hash = self.hasher.hash_one(member);
        let nodes = &self.nodes;
        let id = self
            .index
            .find_entry(hash, |&id| nodes[id as usize].member.as_slice() == member)
            .ok()?
            .remove()
            .0;
        self.root.0 = self.detach(self.root.0, id);
        let node = &mut self.nodes[id as usize];
        let score = node.score;
        node.member = CompactBytes::new(b"");
        self.free.push(id);
        if self.root.0 == NIL {
            // Empty: give the arena back.
            *self = ScoreTree {
                seed: self.seed,
                ..ScoreTree::default()
            };
        }
        Some(score)
    }

    /// The 0-based rank of `member` in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let id = self.find(member)?;
        let mut rank = 0u32;
        let mut cur = self.root.0;
        while cur != NIL {
            if cur == id {
                return Some((rank + self.size_of(self.node(cur).left)) as usize);
            }
            if self.less(id, cur) {
                cur = self.node(cur).left;
            } else {
                rank += self.size_of(self.node(cur).left) + 1;
                cur = self.node(cur).right;
            }
        }
        None
    }

    /// How many elements satisfy `before`, which must hold for a prefix of the order
    /// (e.g. "score < 5"). That is the rank of the first element not satisfying it.
    pub fn count_before(&self, before: impl Fn(f64, &[u8]) -> bool) -> usize {
        let mut count = 0u32;
        let mut cur = self.root.0;
        while cur != NIL {
            let node = self.node(cur);
            if before(node.score, &node.member) {
                count += self.size_of(node.left) + 1;
                cur = node.right;
            } else {
                cur = node.left;
            }
        }
        count as usize
    }

    /// The element at `rank` (ascending, 0-based).
    pub fn select(&self, rank: usize) -> Option<(&[u8], f64)> {
        let mut rank = u32::try_from(rank).ok()?;
        let mut cur = self.root.0;
        while cur != NIL {
            let node = self.node(cur);
            let left = self.size_of(node.left);
            match rank.cmp(&left) {
                Ordering::Less => cur = node.left,
                Ordering::Equal => return Some((node.member.as_slice(), node.score)),
                Ordering::Greater => {
                    rank -= left + 1;
                    cur = node.right;
                }
            }
        }
        None
    }

    /// Elements from `rank` on, ascending.
    pub fn iter_from(&self, rank: usize) -> Iter<'_> {
        self.iter_at(rank, false)
    }

    /// Elements from `rank` (counted from the highest, 0-based) on, descending.
    pub fn iter_rev_from(&self, rank: usize) -> Iter<'_> {
        self.iter_at(rank, true)
    }

    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }

    fn iter_at(&self, rank: usize, reverse: bool) -> Iter<'_> {
        let mut stack = Vec::new();
        let mut cur = self.root.0;
        let mut rank = u32::try_from(rank).unwrap_or(u32::MAX);
        // Walk down to the element at `rank`, stacking the nodes still to be visited after
        // it (those we go "towards the start" from).
        while cur != NIL {
            let node = self.node(cur);
            let (near, far) = if reverse {
                (node.right, node.left)
            } else {
                (node.left, node.right)
            };
            let near_size = self.size_of(near);
            if rank < near_size {
                stack.push(cur);
                cur = near;
            } else if rank == near_size {
                stack.push(cur);
                break;
            } else {
                rank -= near_size + 1;
                cur = far;
            }
        }
        Iter {
            tree: self,
            stack,
            reverse,
        }
    }
}

/// An in-order walk (either direction) over a [`ScoreTree`].
pub struct Iter<'a> {
    tree: &'a ScoreTree,
    stack: Vec<u32>,
    reverse: bool,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);

    fn next(&mut self) -> Option<Self::Item> {
        let id = self.stack.pop()?;
        let tree = self.tree;
        let node = tree.node(id);
        let mut cur = if self.reverse { node.left } else { node.right };
        while cur != NIL {
            self.stack.push(cur);
            let n = tree.node(cur);
            cur = if self.reverse { n.right } else { n.left };
        }
        Some((node.member.as_slice(), node.score))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn naive_sorted(model: &BTreeMap<Vec<u8>, f64>) -> Vec<(Vec<u8>, f64)> {
        let mut v: Vec<(Vec<u8>, f64)> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
        v.sort_by(|a, b| compare(a.1, &a.0, b.1, &b.0));
        v
    }

    #[test]
    fn ranks_selects_and_iterates() {
        let mut tree = ScoreTree::new();
        for i in 0..1000u32 {
            tree.insert_new(format!("m{i}").as_bytes(), f64::from(i % 37));
        }
        let mut expected: Vec<(String, f64)> = (0..1000u32)
            .map(|i| (format!("m{i}"), f64::from(i % 37)))
            .collect();
        expected.sort_by(|a, b| compare(a.1, a.0.as_bytes(), b.1, b.0.as_bytes()));
        for (rank, (m, s)) in expected.iter().enumerate() {
            assert_eq!(tree.rank(m.as_bytes()), Some(rank));
            assert_eq!(tree.select(rank), Some((m.as_bytes(), *s)));
        }
        let walked: Vec<_> = tree.iter_from(500).map(|(m, _)| m.to_vec()).collect();
        assert_eq!(walked.len(), 500);
        assert_eq!(walked[0], expected[500].0.as_bytes());
        let back: Vec<_> = tree
            .iter_rev_from(0)
            .take(3)
            .map(|(m, _)| m.to_vec())
            .collect();
        assert_eq!(back[0], expected[999].0.as_bytes());
        assert_eq!(tree.count_before(|s, _| s < 1.0), 28);
        assert!(tree.iter_from(1000).next().is_none());
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(u8, i8),
        Remove(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..40, -5i8..5).prop_map(|(m, s)| Op::Set(m, s)),
            (0u8..40).prop_map(Op::Remove),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn behaves_like_a_sorted_map(ops in proptest::collection::vec(op(), 0..200)) {
            let mut tree = ScoreTree::new();
            let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Set(m, s) => {
                        let member = vec![b'a' + m % 26, m];
                        let score = f64::from(s) / 2.0;
                        prop_assert_eq!(tree.set_score(&member, score), model.insert(member, score));
                    }
                    Op::Remove(m) => {
                        let member = vec![b'a' + m % 26, m];
                        prop_assert_eq!(tree.remove(&member), model.remove(&member));
                    }
                }
                let sorted = naive_sorted(&model);
                prop_assert_eq!(tree.len(), sorted.len());
                let walked: Vec<(Vec<u8>, f64)> =
                    tree.iter().map(|(m, s)| (m.to_vec(), s)).collect();
                prop_assert_eq!(&walked, &sorted);
                let mut back: Vec<(Vec<u8>, f64)> =
                    tree.iter_rev_from(0).map(|(m, s)| (m.to_vec(), s)).collect();
                back.reverse();
                prop_assert_eq!(&back, &sorted);
                for (rank, (m, s)) in sorted.iter().enumerate() {
                    prop_assert_eq!(tree.rank(m), Some(rank));
                    prop_assert_eq!(tree.select(rank).map(|(m, s)| (m.to_vec(), s)), Some((m.clone(), *s)));
                    prop_assert_eq!(tree.count_before(|x, _| x < *s), sorted.iter().filter(|e| e.1 < *s).count());
                }
            }
        }
    }
}
