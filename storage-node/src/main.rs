//! `storage-node [config-file] [--port N] [--bind ADDR] [--requirepass PW] [--dir DIR] ...`

// jemalloc, as Redis uses: glibc's per-thread arenas grew and trimmed their heap on every
// batch (thousands of mprotect calls per second under redis-benchmark -P 16).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use storage_node::log::Level;
use storage_node::process;

/// INFO's `mem_allocator`: the jemalloc that tikv-jemalloc-sys 0.6.1+5.3.0 builds in
/// (see Cargo.lock; update together).
const ALLOCATOR_NAME: &str = "jemalloc-5.3.0";

fn main() {
    storage_node::set_mem_allocator(ALLOCATOR_NAME);
    storage_node::server::allocator::record_startup();
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
    // The log file is checked before daemonizing, so that a bad path is reported on the
    // terminal that started the node.
    storage_node::log::set_level(config.log_level());
    if let Err(e) = storage_node::log::open(&config.logfile, config.daemonize) {
        eprintln!("storage-node: {e}");
        std::process::exit(1);
    }
    // Before any thread exists: see process::daemon.
    // Under a service manager the node stays in the foreground, as Redis does.
    let daemonize = config.daemonize && !process::supervised::is_supervised(&config.supervised);
    process::daemon::daemonize_if_asked(daemonize);
    storage_node::config::inert::report_all(&config);
    process::pidfile::create(&config.pidfile, process::daemon::is_daemon());
    storage_node::server::busy_poll::set_budget_usecs(config.busy_poll_usecs);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.io_threads.max(1))
        .enable_all()
        .on_thread_park(storage_node::server::busy_poll::before_park)
        .build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(e) => fail(&e.to_string()),
    };
    // The runtime is never dropped: the process exits below, with whatever it still runs.
    // SIGTERM and SIGINT are the server's to handle (server::signals): they shut down as
    // SHUTDOWN does, saving first when save points are set.
    let result = runtime.block_on(storage_node::server::run(config));
    process::pidfile::remove();
    match result {
        Ok(()) => {
            log_line(
                Level::Notice,
                "storage-node is now ready to exit, bye bye...",
            );
            std::process::exit(0);
        }
        Err(e) => fail(&e.to_string()),
    }
}

/// Reports a failed start or run (to the launcher too, when daemonizing) and exits.
fn fail(why: &str) -> ! {
    process::pidfile::remove();
    process::daemon::notify_failed(why);
    log_line(Level::Warning, why);
    eprintln!("storage-node: {why}");
    std::process::exit(1);
}

fn log_line(level: Level, text: &str) {
    storage_node::log::write(level, format_args!("{text}"));
}
