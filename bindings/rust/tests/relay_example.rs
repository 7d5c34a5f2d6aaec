//! The relay example, run: a stream through it both ways arrives whole.

mod common;

use common::{assert_reversed, data, exchange, reversing_target, RelayExample};

#[test]
fn relay_carries_both_directions_to_their_end() {
    let (target, server) = reversing_target(1);
    let relay = RelayExample::start(&target, 1);
    let up = data(8 << 20);
    let down = exchange(relay.addr.clone(), up.clone()).join().unwrap();
    server.join().unwrap();
    assert_reversed(&relay.finish(), &up, &down);
}
