//! Every lock recipe (etcd and ZooKeeper) without faults (issue 3): 5 clients, 3 servers, at least 200 acquisitions;
//! mutual exclusion holds at the fenced resource, every grant's token is higher than the one
//! before, and the herd-free recipes wake exactly one waiter per release.

use coordsim::load;
use coordsim::sweep::{self, SeedResult};
use coordsim_checker::history::{Event, History, Return};
use coordsim_checker::properties::Property;
use coordsim_checker::verdict::Verdict;

fn run(recipe: &str) -> History {
    let text = format!(
        r#"
name = "recipe-{recipe}"
summary = "no faults"
duration = "40s"
[cluster]
servers = 3
[lock]
recipe = "{recipe}"
name = "/locks/r"
ttl = "3s"
[resource]
mode = "fenced"
[clients]
count = 5
start = "300ms"
stagger = "20ms"
hold = "60ms"
writes_per_hold = 1
think = "20ms"
[expect]
fairness = "any"
herd = "any"
"#
    );
    let scenario = load::parse("recipe.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    match sweep::run_seed(&scenario, "recipe.toml", 1) {
        SeedResult::Done { history, .. } => history,
        SeedResult::Crashed { message, .. } | SeedResult::Stopped { message, .. } => {
            panic!("{recipe} crashed: {message}")
        }
    }
}

fn tokens(history: &History) -> Vec<i64> {
    history
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Ok { ret: Return::Locked { token, .. }, .. } => Some(*token),
            _ => None,
        })
        .collect()
}

fn check(recipe: &str, herd_free: bool) {
    let history = run(recipe);
    let tokens = tokens(&history);
    assert!(tokens.len() >= 200, "{recipe}: only {} acquisitions", tokens.len());
    assert!(tokens.windows(2).all(|w| w[1] > w[0]), "{recipe}: tokens must grow with every grant: {tokens:?}");
    for property in [Property::MutualExclusion, Property::Fencing, Property::SingleHolder, Property::GrantLiveLease] {
        let report = property.check(&history);
        assert_eq!(report.verdict, Verdict::Pass, "{recipe}: {property}: {}", report.summary);
    }
    let herd = Property::Herd.check(&history);
    let expected = if herd_free { Verdict::Pass } else { Verdict::Fail };
    assert_eq!(herd.verdict, expected, "{recipe}: herd: {}", herd.summary);
}

#[test]
fn etcd_mutex_is_safe_and_herd_free() {
    check("etcd-mutex", true);
}

#[test]
fn etcd_lock_api_is_safe_and_herd_free() {
    check("etcd-lock-api", true);
}

#[test]
fn etcd_cas_is_safe_but_wakes_the_herd() {
    check("etcd-cas", false);
}

#[test]
fn zk_queue_lock_is_safe_and_herd_free() {
    check("zk-queue-lock", true);
}

#[test]
fn zk_herd_lock_is_safe_but_wakes_the_herd() {
    check("zk-herd-lock", false);
}

#[test]
fn etcd_election_is_safe_and_herd_free() {
    check("etcd-election", true);
}

#[test]
fn zk_election_is_safe_and_herd_free() {
    check("zk-election", true);
}

#[test]
fn etcd_semaphore_admits_up_to_its_permits_at_once() {
    let text = r#"
name = "recipe-semaphore"
summary = "no faults"
duration = "30s"
[cluster]
servers = 3
[lock]
recipe = "etcd-semaphore"
name = "/semaphores/r"
ttl = "3s"
permits = 3
[resource]
mode = "unfenced"
[clients]
count = 6
start = "300ms"
stagger = "20ms"
hold = "100ms"
writes_per_hold = 1
think = "20ms"
"#;
    let scenario = load::parse("semaphore.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let SeedResult::Done { history, .. } = sweep::run_seed(&scenario, "semaphore.toml", 1) else {
        panic!("the semaphore run crashed")
    };
    assert!(tokens(&history).len() >= 200, "only {} acquisitions", tokens(&history).len());
    let report = Property::SingleHolder.check(&history);
    assert_eq!(report.verdict, Verdict::Pass, "{}", report.summary);
    // It is a semaphore, not a mutex: three holders at once happen.
    let mut holders = 0i64;
    let mut most = 0i64;
    for entry in &history.entries {
        if let Event::Belief { phase, .. } = &entry.event {
            holders += if *phase == coordsim_checker::history::Phase::Start { 1 } else { -1 };
            most = most.max(holders);
        }
    }
    assert_eq!(most, 3, "the semaphore's three permits are all used at some point");
    // With one permit fewer than holders, the same history breaks the rule.
    let mut squeezed = history.clone();
    for entry in &mut squeezed.entries {
        if let Event::Invoke { call: coordsim_checker::history::Call::Lock { permits, .. }, .. } = &mut entry.event {
            *permits = 2;
        }
    }
    assert_eq!(Property::SingleHolder.check(&squeezed).verdict, Verdict::Fail);
}
