use super::*;

fn spec(reads: f64, cas: f64, deletes: f64, updates: f64) -> KvSpec {
    let text = format!(
        "keys = 1\ninterval = \"50ms\"\nreads = {reads}\ncas = {cas}\ndeletes = {deletes}\nupdates = {updates}"
    );
    toml::from_str(&text).expect("a valid [kv] table")
}

#[test]
fn a_draw_picks_reads_then_cas_then_deletes_then_updates_and_the_rest_are_puts() {
    let spec = spec(0.4, 0.2, 0.1, 0.2);
    let picks: Vec<Op> =
        [0.0, 0.39, 0.41, 0.59, 0.61, 0.69, 0.71, 0.89, 0.91, 0.999].map(|d| Op::pick(&spec, d)).into();
    use Op::*;
    assert_eq!(picks, [Get, Get, Cas, Cas, Delete, Delete, Update, Update, Put, Put]);
}

#[test]
fn without_updates_the_draw_picks_as_before_updates_existed() {
    // The etcd scenarios' histories must not change: same draw, same operation.
    let spec = spec(0.5, 0.1, 0.0, 0.0);
    assert_eq!(Op::pick(&spec, 0.55), Op::Cas);
    assert_eq!(Op::pick(&spec, 0.6), Op::Put);
}

#[test]
fn a_read_modify_write_guards_on_the_version_read_and_records_the_value_read() {
    let seen = Seen { value: Some("c1-3".into()), version: 17 };
    let guard = Guard::on_version(&seen);
    assert_eq!(guard, Guard::Version { value: "c1-3".into(), version: 17 });
    assert_eq!(guard.expected(), Some("c1-3"));
    let absent = Guard::on_version(&Seen { value: None, version: 0 });
    assert_eq!(absent, Guard::Absent, "an absent key is written back by a create (etcd: create_revision 0)");
    assert_eq!(absent.expected(), None);
}

#[test]
fn a_conflict_learns_nothing_of_the_key() {
    let step = Step::conflict(9);
    assert_eq!(step.seen, None);
    assert_eq!(Step::learned(9, Seen { value: None, version: 0 }).seen, Some(Seen { value: None, version: 0 }));
}
