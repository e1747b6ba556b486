//! `storage-node [config-file] [--port N] [--bind ADDR] [--requirepass PW] [--dir DIR] ...`

// jemalloc, as Redis uses: glibc's per-thread arenas grew and trimmed their heap on every
// batch (thousands of mprotect calls per second under redis-benchmark -P 16).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// INFO's `mem_allocator`: the jemalloc that tikv-jemalloc-sys 0.6.1+5.3.0 builds in
/// (see Cargo.lock; update together).
const ALLOCATOR_NAME: &str = "jemalloc-5.3.0";

fn main() {
    storage_node::set_mem_allocator(ALLOCATOR_NAME);
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--version" || a == "-v") {
        println!("storage-node {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    let config = match storage_node::config::parse_args(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("storage-node: {e}");
            std::process::exit(1);
        }
    };
    storage_node::server::busy_poll::set_budget_usecs(config.busy_poll_usecs);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.io_threads.max(1))
        .enable_all()
        .on_thread_park(storage_node::server::busy_poll::before_park)
        .build();
    let result = match runtime {
        Ok(rt) => rt.block_on(storage_node::server::run(config)),
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        eprintln!("storage-node: {e}");
        std::process::exit(1);
    }
}
