//! `slotproxy --config slotproxy.yaml [--listen ADDR] [--seed HOST:PORT ...]`
//! `slotproxy --local [N]` — the embedded default: N local storage-nodes (3) behind the proxy.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use slotproxy::config::ProxyConfig;

/// A stateless Redis Cluster proxy: clients see one Redis server.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// YAML configuration file.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Address to accept clients on (overrides the config's `listen`).
    #[arg(long)]
    listen: Option<String>,
    /// A cluster node to learn the topology from; repeat for several (overrides `seeds`).
    #[arg(long = "seed")]
    seeds: Vec<String>,
    /// Worker threads serving clients (overrides `workers`; 0 = one per core).
    #[arg(long)]
    workers: Option<usize>,
    /// Admin HTTP address (overrides `admin.listen`).
    #[arg(long)]
    admin: Option<String>,
    /// Start N storage-nodes (default 3) as a local cluster and serve in front of them,
    /// on 127.0.0.1:6379 unless --listen says otherwise. Ctrl-C stops everything.
    #[arg(long, num_args = 0..=1, default_missing_value = "3", value_name = "N")]
    local: Option<usize>,
    /// With --local: R replicas for each of the N masters (`CLUSTER REPLICATE`), so the
    /// quickstart can show a failover.
    #[arg(long, requires = "local", value_name = "R", default_value_t = 0)]
    replicas: usize,
}

// jemalloc: glibc's per-thread arenas grow and trim their heaps on every batch of
// requests (mprotect calls), which costs the worker threads real time under load.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn load(args: &Args) -> anyhow::Result<ProxyConfig> {
    let mut config = match &args.config {
        Some(path) => ProxyConfig::load(path)?,
        None => ProxyConfig::default(),
    };
    if let Some(listen) = &args.listen {
        config.listen = listen.clone();
    }
    if !args.seeds.is_empty() {
        config.seeds = args.seeds.clone();
    }
    if let Some(workers) = args.workers {
        config.workers = workers;
    }
    if let Some(admin) = &args.admin {
        config.admin.listen = admin.clone();
    }
    Ok(config)
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut config = load(&args)?;
    let mut local_cluster = None;
    if let Some(count) = args.local {
        if args.listen.is_none() {
            config.listen = "127.0.0.1:6379".into();
        }
        let dir = std::env::temp_dir().join(format!("slotproxy-local-{}", std::process::id()));
        let cluster = slotproxy::local::start(count, args.replicas, dir)
            .context("starting the local cluster")?;
        config.seeds = cluster.seeds();
        println!(
            "Local cluster: {} storage-nodes on {}",
            cluster.seeds().len(),
            cluster.seeds().join(", ")
        );
        if args.replicas > 0 {
            println!(
                "  {} masters (the first {0}), {} replicas each",
                count.max(1),
                args.replicas
            );
        }
        local_cluster = Some(cluster);
    }
    if config.seeds.is_empty() {
        anyhow::bail!("no seed nodes: give --seed HOST:PORT or `seeds:` in the config");
    }
    // The control thread: accepting, topology refresh, SIGHUP. Clients are served by the
    // worker threads the proxy starts.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let admin_listen = config.admin.listen.clone();
        let proxy = slotproxy::proxy::run(config, |_| {})
            .await
            .context("starting the proxy")?;
        let admin_addr = slotproxy::admin::start(proxy.clone(), &admin_listen)
            .await
            .with_context(|| format!("binding the admin endpoint on {admin_listen}"))?;
        // Test harnesses and scripts wait for this line (admin first: it is on the same line).
        println!("Admin API on http://{admin_addr}");
        println!("Ready to accept connections on {}", proxy.listen_addr);
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
        let mut terminate =
            signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        loop {
            tokio::select! {
                _ = hangup.recv() => {}
                _ = tokio::signal::ctrl_c() => break,
                _ = terminate.recv() => break,
            }
            match load(&args) {
                Ok(fresh) => {
                    let current = proxy.config.load();
                    let mut next = fresh.clone();
                    // Only fields that are safe to change live are taken.
                    next.listen = current.listen.clone();
                    next.seeds = current.seeds.clone();
                    next.backend.connections_per_node = current.backend.connections_per_node;
                    next.workers = current.workers;
                    proxy.set_config(next);
                    tracing::info!("configuration reloaded");
                }
                Err(e) => tracing::error!("configuration not reloaded: {e:#}"),
            }
        }
        Ok::<(), anyhow::Error>(())
    })?;
    if let Some(mut cluster) = local_cluster {
        cluster.stop();
        let _ = std::fs::remove_dir_all(&cluster.dir);
        println!("Stopped the local cluster.");
    }
    Ok(())
}
