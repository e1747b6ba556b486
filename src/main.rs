//! The slotproxy binary. The proxy itself is not built yet; see README.md.

fn main() {
    eprintln!("slotproxy: the proxy is not implemented yet; run `storage-node` (see README.md)");
    std::process::exit(2);
}
