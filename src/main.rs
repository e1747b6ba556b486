//! `slotproxy --config slotproxy.yaml [--listen ADDR] [--seed HOST:PORT ...]`

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
}

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
    let config = load(&args)?;
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
        let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .context("installing the SIGHUP handler")?;
        loop {
            hangup.recv().await;
            match load(&args) {
                Ok(fresh) => {
                    let current = proxy.config.load();
                    let mut next = fresh.clone();
                    // Only fields that are safe to change live are taken.
                    next.listen = current.listen.clone();
                    next.seeds = current.seeds.clone();
                    next.backend.connections_per_node = current.backend.connections_per_node;
                    next.workers = current.workers;
                    proxy.config.store(std::sync::Arc::new(next));
                    tracing::info!("configuration reloaded");
                }
                Err(e) => tracing::error!("configuration not reloaded: {e:#}"),
            }
        }
    })
}
