//! How many nodes Redis's radix tree (`rax.c`) has for a set of equal-length keys, for XINFO
//! STREAM's `radix-tree-nodes`.
//!
//! Rax keeps chains of single-child steps in one compressed node, and a node with several
//! children holds one byte per child; every key ends in a node of its own (a leaf here, as
//! no key is a prefix of another). An empty tree is its root alone.

/// Nodes of the tree holding `keys` (sorted, distinct, all of one length).
pub fn node_count(keys: &[[u8; 16]]) -> usize {
    if keys.is_empty() {
        return 1;
    }
    subtree(keys, 0)
}

fn subtree(keys: &[[u8; 16]], depth: usize) -> usize {
    if depth == 16 {
        return 1;
    }
    let first = &keys[0];
    let last = &keys[keys.len() - 1];
    // Keys are sorted: the common prefix of all is that of the first and the last.
    let common = (depth..16).take_while(|&i| first[i] == last[i]).count();
    if common > 0 {
        // One compressed node for the shared bytes, then what follows them.
        return 1 + subtree(keys, depth + common);
    }
    // A branching node, one child per distinct byte at this depth.
    let mut count = 1;
    let mut start = 0;
    while start < keys.len() {
        let byte = keys[start][depth];
        let end = start
            + keys[start..]
                .iter()
                .take_while(|k| k[depth] == byte)
                .count();
        count += subtree(&keys[start..end], depth + 1);
        start = end;
    }
    count
}
