//! Bug switches by name: the fields of [`Bugs`] (sim/core/src/scenario.rs), read through serde so that
//! a switch added there is known here without a list to keep in step. A switch's swarm scenario
//! (`scenarios/library/swarm-<switch>.toml`, the switch's name with `-` for `_`) is what
//! `coordsim sweep` runs with the switch on and off.

use coordsim_sim::scenario::Bugs;

use crate::load::InputError;

/// Every switch, in name order.
pub fn all() -> Vec<String> {
    match toml::Value::try_from(Bugs::default()) {
        Ok(toml::Value::Table(table)) => table.keys().cloned().collect(),
        _ => unreachable!("Bugs is a struct of booleans and serializes to a table"),
    }
}

/// The switches that are on in `bugs`, in name order.
pub fn enabled(bugs: &Bugs) -> Vec<String> {
    match toml::Value::try_from(*bugs) {
        Ok(toml::Value::Table(table)) => {
            table.into_iter().filter(|(_, on)| on.as_bool() == Some(true)).map(|(name, _)| name).collect()
        }
        _ => unreachable!("Bugs is a struct of booleans and serializes to a table"),
    }
}

/// `bugs` with `switches` turned on.
///
/// # Panics
/// If a name is not a switch: names come from [`parse_list`] or [`all`].
pub fn turn_on(bugs: &Bugs, switches: &[String]) -> Bugs {
    let Ok(toml::Value::Table(mut table)) = toml::Value::try_from(*bugs) else {
        unreachable!("Bugs is a struct of booleans and serializes to a table")
    };
    for switch in switches {
        assert!(table.contains_key(switch), "unknown bug switch {switch:?}");
        table.insert(switch.clone(), toml::Value::Boolean(true));
    }
    toml::Value::Table(table).try_into().expect("a table of the known switches deserializes")
}

/// Parses `all` or a comma-separated list of switch names (each once, in the order given).
pub fn parse_list(text: &str) -> Result<Vec<String>, InputError> {
    let known = all();
    if text.trim() == "all" {
        return Ok(known);
    }
    let mut switches: Vec<String> = Vec::new();
    for name in text.split(',').map(str::trim) {
        if !known.iter().any(|k| k == name) {
            return Err(InputError::Usage(format!(
                "unknown bug switch {name:?}: use all or one of {}",
                known.join(", ")
            )));
        }
        if !switches.iter().any(|s| s == name) {
            switches.push(name.to_string());
        }
    }
    Ok(switches)
}

/// The library name of `switch`'s swarm scenario.
pub fn swarm_scenario(switch: &str) -> String {
    format!("swarm-{}", switch.replace('_', "-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_of_bugs_is_a_switch() {
        let switches = all();
        assert!(switches.contains(&"grant_without_lease_check".to_string()), "{switches:?}");
        assert!(switches.contains(&"ignore_keepalive_failure".to_string()), "{switches:?}");
        for switch in &switches {
            let on = turn_on(&Bugs::default(), std::slice::from_ref(switch));
            assert_eq!(enabled(&on), vec![switch.clone()]);
        }
        assert!(enabled(&Bugs::default()).is_empty());
    }

    #[test]
    fn switch_lists_parse_and_unknown_names_are_named() {
        assert_eq!(parse_list("all").unwrap(), all());
        let two = parse_list("watch_skip_at_compaction, ignore_keepalive_failure,watch_skip_at_compaction").unwrap();
        assert_eq!(two, vec!["watch_skip_at_compaction", "ignore_keepalive_failure"]);
        let error = parse_list("watch_skip_at_compaction,no_such_bug").unwrap_err().to_string();
        assert!(error.starts_with("unknown bug switch \"no_such_bug\": use all or one of "), "{error}");
        assert!(parse_list("").is_err());
    }
}
