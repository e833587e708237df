//! etcd's Election service over the wire: campaign, proclaim, leader, observe, resign; and the
//! ZooKeeper election recipe's leader query.

use std::time::Duration;

use coordsim_sim::client::election::{campaign, leader, observe, proclaim, resign};
use coordsim_sim::client::{Client, Session};
use coordsim_sim::recorder::Recorder;
use coordsim_sim::scenario::KeepAliveMode;
use coordsim_sim::testbed;

const NAME: &str = "/election/e";
const BUDGET: Duration = Duration::from_secs(3);

async fn session(client: &Client, recorder: &Recorder, node: &str) -> Session {
    Session::open(client, recorder, node, 3000, None, false, KeepAliveMode::Background).await.expect("a session opens")
}

#[test]
fn leadership_passes_in_campaign_order_and_observers_see_each_change() {
    // c1 leads, proclaims a new value, resigns after 2 s; its old leader key is then refused.
    let first = |client: Client, recorder: Recorder| async move {
        let session = session(&client, &recorder, "c1").await;
        let elected = campaign(&client, &session, &recorder, "c1", NAME, "c1").await.unwrap();
        assert_eq!(proclaim(&client, &elected, "c1-v2", BUDGET).await, Ok(true));
        let now = leader(&client, NAME, BUDGET).await.unwrap().expect("someone leads");
        assert_eq!((now.value.as_str(), now.create_revision), ("c1-v2", elected.rev));
        madsim::time::sleep(Duration::from_secs(2)).await;
        resign(&client, &recorder, "c1", &elected, BUDGET).await;
        assert_eq!(proclaim(&client, &elected, "c1-v3", BUDGET).await, Ok(false), "a resigned leader cannot proclaim");
        vec![elected.rev.to_string()]
    };
    // c2 campaigns while c1 leads: it waits, then leads with a higher term.
    let second = |client: Client, recorder: Recorder| async move {
        madsim::time::sleep(Duration::from_millis(500)).await;
        let session = session(&client, &recorder, "c2").await;
        let elected = campaign(&client, &session, &recorder, "c2", NAME, "c2").await.unwrap();
        let now = leader(&client, NAME, BUDGET).await.unwrap().expect("someone leads");
        assert_eq!(now.value, "c2");
        vec![elected.rev.to_string()]
    };
    // c3 observes: every value the leadership takes, in order.
    let observer = |client: Client, _| async move {
        let mut seen = None;
        let mut values = Vec::new();
        while values.last().map(String::as_str) != Some("c2") {
            if let Ok(Some(kv)) = observe(&client, NAME, seen, Duration::from_secs(1)).await {
                seen = Some((kv.create_revision, kv.mod_revision));
                if values.last() != Some(&kv.value) {
                    values.push(kv.value);
                }
            }
        }
        values
    };
    let results = testbed::run(
        3,
        3,
        vec![testbed::script(first), testbed::script(second), testbed::script(observer)],
        Duration::from_secs(60),
    );
    let term = |i: usize| results[i][0].parse::<i64>().unwrap();
    assert!(term(1) > term(0), "the second leader's term is higher: {results:?}");
    let observed = &results[2];
    assert!(observed.ends_with(&["c1-v2".to_string(), "c2".to_string()]), "{observed:?}");
    assert!(["c1", "c1-v2", "c2"].ends_with(&observed.iter().map(String::as_str).collect::<Vec<_>>()), "{observed:?}");
}
