//! The tokio relay example, run over TCP loopback: two connections at once,
//! each carried whole both ways.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{assert_reversed, data, exchange, reversing_target, RelayExample};

#[test]
fn relay_carries_two_connections_at_once() {
    let (target, server) = reversing_target(2);
    let relay = RelayExample::start(&target, 2);
    // Different lengths, so that one connection's bytes in the other
    // would show.
    let ups = [data(6 << 20), data(3 << 20)];
    let clients: Vec<_> = ups
        .iter()
        .map(|up| exchange(relay.addr.clone(), up.clone()))
        .collect();
    let downs: Vec<Vec<u8>> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    server.join().unwrap();
    let said = relay.finish();
    for (up, down) in ups.iter().zip(downs) {
        assert_reversed(&said, up, &down);
    }
}
