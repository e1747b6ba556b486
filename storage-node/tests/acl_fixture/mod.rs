//! What the ACL tests share.

/// Rules with the single `+cmd`/`-cmd` words of every selector sorted: Redis writes them
/// last in each selector, in an order of its own.
pub fn normalize_rules(text: &str) -> String {
    let mut out = String::new();
    for (i, segment) in text.split(['(', ')']).enumerate() {
        if i > 0 {
            out.push('|');
        }
        let (mut fixed, mut single): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
        for word in segment.split(' ') {
            let is_single = (word.starts_with('+') || word.starts_with('-')) && !word.contains('@');
            if is_single {
                single.push(word);
            } else {
                fixed.push(word);
            }
        }
        single.sort_unstable();
        fixed.extend(single);
        out.push_str(&fixed.join(" "));
    }
    out
}
