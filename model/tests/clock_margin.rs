//! Case 09 as a margin: a holder cut off from the servers acts until its own deadline, on a
//! clock that runs at 0.5× to 1× true time, while the server expires its lease after the TTL on
//! a true-time clock. The deadline is safe exactly when the slowest client clock reaches it no
//! later than the server's expiry: deadline ≤ TTL × slowest rate.

use coordsim_model::checked::Expected;
use coordsim_model::etcd::EtcdLock;
use coordsim_model::expectations::skew_expectations;
use coordsim_model::registry::{SKEW_CLOCKS, SKEW_TTL_UNITS, safe_deadline_units, skew_config};
use coordsim_model::runner::{self, Search, Strategy};

#[test]
fn the_largest_safe_deadline_is_the_ttl_on_the_slowest_clock() {
    // TTL 4 server units = 2 ticks; the slowest client clock advances 1 unit a tick.
    let safe = safe_deadline_units(SKEW_TTL_UNITS, SKEW_CLOCKS);
    assert_eq!(safe, 2);
    let search = Search { strategy: Strategy::Bfs, symmetry: false, threads: 1 };
    for deadline in 1..=SKEW_TTL_UNITS {
        let model = EtcdLock::new(skew_config(2, SKEW_TTL_UNITS, deadline, skew_expectations(deadline <= safe)));
        let explored = runner::explore(&model, search).unwrap();
        let two_holders = explored.discoveries.contains_key("single_holder");
        assert_eq!(two_holders, deadline > safe, "deadline {deadline} units (safe up to {safe})");
        let expected = model.config.expectations.iter().find(|e| e.property == "single_holder").unwrap().expected;
        assert_eq!(expected, if deadline > safe { Expected::Violated } else { Expected::Holds });
    }
}
