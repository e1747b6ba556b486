//! `slotproxy --local N`: the embedded default starts its own storage-node cluster, serves
//! in front of it, and stops everything on Ctrl-C.

use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use slotproxy::resp::Frame;
use test_harness::cluster::proxy_binary;
use test_harness::process::free_port;
use test_harness::{RawClient, ServerProcess};

#[test]
fn local_cluster_serves_and_stops_on_ctrl_c() {
    let port = free_port();
    let args: Vec<String> = [
        "--local",
        "3",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--admin",
        "127.0.0.1:0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut proxy = ServerProcess::spawn(
        "slotproxy-local",
        &proxy_binary(),
        &args,
        port,
        "Ready to accept connections",
    );
    let node_ports: Vec<u16> = proxy
        .log()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Local cluster: 3 storage-nodes on ")
                .map(str::to_string)
        })
        .expect("the proxy lists its nodes")
        .split(", ")
        .filter_map(|addr| addr.rsplit(':').next()?.parse().ok())
        .collect();
    assert_eq!(node_ports.len(), 3);
    let mut client = RawClient::connect(port);
    let mut mset = vec!["MSET".to_string()];
    for i in 0..300 {
        mset.push(format!("local:{i}"));
        mset.push(i.to_string());
    }
    let refs: Vec<&str> = mset.iter().map(String::as_str).collect();
    assert_eq!(client.call(&refs), Frame::Simple("OK".into()));
    assert_eq!(client.call(&["DBSIZE"]), Frame::Integer(300));
    assert_eq!(client.call(&["GET", "local:7"]), Frame::bulk("7"));
    // Every node holds a share: the slots really are spread.
    for &node in &node_ports {
        let keys = RawClient::connect(node).call(&["DBSIZE"]);
        assert!(
            matches!(keys, Frame::Integer(n) if n > 0),
            "node {node}: {keys:?}"
        );
    }
    let status = Command::new("kill")
        .args(["-INT", &proxy.pid().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    assert!(
        proxy.wait_exit(Duration::from_secs(15)),
        "slotproxy did not exit on SIGINT"
    );
    for &node in &node_ports {
        assert!(
            TcpStream::connect(("127.0.0.1", node)).is_err(),
            "node {node} still running"
        );
    }
}
