//! Reading scenario files: parse, validate, and on bad input a one-line error that names the
//! file, the line and the field.

use std::path::Path;

use coordsim_sim::scenario::Scenario;

use crate::library;

/// A scenario and where it came from.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub scenario: Scenario,
    /// How the user named it: a library name or a path.
    pub arg: String,
    /// The file shown in messages.
    pub source: String,
}

/// Bad input: printed as one line, exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// `file:line: field `x`: message`
    #[error("{file}:{line}: {message}")]
    Scenario { file: String, line: usize, message: String },
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("unknown scenario {name:?}: not a file, and not in the library ({known}); see `coordsim list`")]
    Unknown { name: String, known: String },
    #[error("{0}")]
    Usage(String),
}

/// Resolves a scenario argument: a path (it contains `/` or ends in `.toml`), else a library
/// name. A bare name never reads a file, so a stray file in the current folder cannot stand in
/// for a library scenario (write `./name` to run such a file).
pub fn resolve(arg: &str) -> Result<Loaded, InputError> {
    if arg.ends_with(".toml") || arg.contains('/') {
        let path = Path::new(arg);
        // A scenario is a few KB: 64 MiB is far past any, and bounds what a wrong path costs.
        let text = crate::input::read_text(path, 64 << 20).map_err(|error| match error {
            crate::input::InputFileError::Io(error) => InputError::Io { path: arg.to_string(), error },
            crate::input::InputFileError::NotUtf8 { line, at } => InputError::Scenario {
                file: arg.to_string(),
                line,
                message: format!("not UTF-8 text: byte {at} of the file"),
            },
            other => InputError::Usage(format!("{arg}: {other}")),
        })?;
        let scenario = parse(arg, &text)?;
        return Ok(Loaded { scenario, arg: arg.to_string(), source: arg.to_string() });
    }
    let Some(text) = library::get(arg) else {
        let known: Vec<&str> = library::all().map(|(name, _)| *name).collect();
        return Err(InputError::Unknown { name: arg.to_string(), known: known.join(", ") });
    };
    let source = library::path_of(arg);
    let scenario = parse(&source, text)?;
    Ok(Loaded { scenario, arg: arg.to_string(), source: format!("library: {source}") })
}

/// Parses and validates scenario `text`; `source` names the file in errors.
pub fn parse(source: &str, text: &str) -> Result<Scenario, InputError> {
    let scenario = parse_with(source, text, Scenario::validate)?;
    // An `[expect]` key that names no built-in property must name a checker this build of the
    // CLI registered (`testbed::register_for_cli`); otherwise it is a typo.
    let registered: Vec<&str> = crate::testbed::registered_for_cli().iter().map(|c| c.id()).collect();
    if let Some(unknown) = scenario.expect.checker_ids().find(|id| !registered.contains(id)) {
        let field = format!("expect.{unknown}");
        let properties: Vec<&str> = coordsim_checker::properties::Property::ALL.iter().map(|p| p.id()).collect();
        let checkers = match registered.is_empty() {
            true => "no checkers of your own are registered".to_string(),
            false => format!("registered checkers: {}", registered.join(", ")),
        };
        return Err(InputError::Scenario {
            file: source.to_string(),
            line: locate(text, &field).unwrap_or(1),
            message: format!(
                "field `{field}`: no property is named {unknown:?} (properties: {}; {checkers})",
                properties.join(", ")
            ),
        });
    }
    Ok(scenario)
}

/// [`parse`] for a Testbed's scenario, whose clients run the user's code (no `[lock]`, no `[kv]`).
pub fn parse_for_user_code(source: &str, text: &str) -> Result<Scenario, InputError> {
    parse_with(source, text, Scenario::validate_for_user_code)
}

fn parse_with(
    source: &str,
    text: &str,
    validate: fn(&Scenario) -> Result<(), coordsim_sim::scenario::ScenarioError>,
) -> Result<Scenario, InputError> {
    let scenario: Scenario = toml::from_str(text).map_err(|error| {
        let mut line = error.span().map_or(1, |span| line_of(text, span.start));
        let mut message = error.message().trim().replace('\n', " ");
        if message.is_empty() {
            // The toml crate says nothing for some bad characters; a lone CR is the common one.
            let content = text.lines().nth(line - 1).unwrap_or_default();
            message = if content.contains('\r') {
                "a carriage return (\\r) that does not end a line".to_string()
            } else {
                "invalid character".to_string()
            };
        }
        // A missing field is reported at the table that lacks it, not at some key on that line;
        // a field missing at the top level has no table, and toml points at the document's end.
        let context = if let Some(field) = message.strip_prefix("missing field `").and_then(|m| m.split('`').next()) {
            match missing_at_top_level(text, field) {
                true => {
                    line = 1;
                    "top level: ".to_string()
                }
                false => table_at(text, line).map(|table| format!("table `{table}`: ")).unwrap_or_default(),
            }
        } else {
            field_at(text, line).map(|field| format!("field `{field}`: ")).unwrap_or_default()
        };
        InputError::Scenario { file: source.to_string(), line, message: format!("{context}{message}") }
    })?;
    validate(&scenario).map_err(|error| InputError::Scenario {
        file: source.to_string(),
        line: locate(text, &error.field).unwrap_or(1),
        message: format!("field `{}`: {}", error.field, error.message),
    })?;
    Ok(scenario)
}

/// Whether `field` is a required top-level field of a scenario that the text's top level lacks.
fn missing_at_top_level(text: &str, field: &str) -> bool {
    const TOP_LEVEL_REQUIRED: &[&str] = &["name", "summary", "duration", "cluster", "clients"];
    TOP_LEVEL_REQUIRED.contains(&field)
        && toml::from_str::<toml::Table>(text).is_ok_and(|table| !table.contains_key(field))
}

/// The table (`clients`, `nemesis[1]`) that line `line` belongs to; `None` at the top level.
fn table_at(text: &str, line: usize) -> Option<String> {
    let mut table = None;
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for content in text.lines().take(line) {
        let trimmed = content.trim();
        if let Some(name) = trimmed.strip_prefix("[[").and_then(|h| h.strip_suffix("]]")) {
            let count = counts.entry(name.trim().to_string()).or_insert(0);
            table = Some(format!("{}[{count}]", name.trim()));
            *count += 1;
        } else if let Some(name) = trimmed.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            table = Some(name.trim().to_string());
        }
    }
    table
}

/// The full path of what line `line` writes: `clients.count` for a key in `[clients]`,
/// `nemesis` for the header `[nemesis]` itself.
fn field_at(text: &str, line: usize) -> Option<String> {
    let content = text.lines().nth(line.checked_sub(1)?)?.trim();
    if content.starts_with('[') {
        return Some(content.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    }
    let key = key_on_line(text, line)?;
    Some(match table_at(text, line) {
        Some(table) => format!("{table}.{key}"),
        None => key,
    })
}

/// 1-based line of byte offset `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The key assigned on line `line`, if that line is `key = ...`.
fn key_on_line(text: &str, line: usize) -> Option<String> {
    let content = text.lines().nth(line.checked_sub(1)?)?;
    let (key, _) = content.split_once('=')?;
    let key = key.trim();
    (!key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')).then(|| key.to_string())
}

/// Finds the line of a field path like `clients.count`, `nemesis[1].target` or `name` in a
/// scenario file (flat tables and arrays of tables, as scenario files are written).
fn locate(text: &str, field: &str) -> Option<usize> {
    let (table, key) = match field.rsplit_once('.') {
        Some((table, key)) => (Some(table), key),
        None => (None, field),
    };
    let (table_name, wanted_index) = match table {
        Some(table) => match table.split_once('[') {
            Some((name, index)) => (Some(name), index.trim_end_matches(']').parse::<usize>().ok()),
            None => (Some(table), None),
        },
        None => (None, None),
    };
    let mut current: Option<String> = None;
    let mut seen: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut index_here = 0usize;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(header) = trimmed.strip_prefix("[[").and_then(|h| h.strip_suffix("]]")) {
            let count = seen.entry(header.trim().to_string()).or_insert(0);
            index_here = *count;
            *count += 1;
            current = Some(header.trim().to_string());
            continue;
        }
        if let Some(header) = trimmed.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            current = Some(header.trim().to_string());
            index_here = 0;
            continue;
        }
        let in_table = current.as_deref() == table_name && wanted_index.is_none_or(|i| i == index_here);
        if in_table && key_on_line(text, number + 1).as_deref() == Some(key) {
            return Some(number + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = include_str!("../library/split-brain-gc-pause.toml");

    fn error_of(text: &str) -> String {
        parse("bad.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn an_expectation_for_a_property_that_does_not_exist_names_its_line_and_the_properties() {
        let text = format!("{GOOD}\nmutual_exlusion = \"fail\"\n");
        let error = error_of(&text);
        assert!(error.contains(&format!("bad.toml:{}", text.lines().count())), "{error}");
        assert!(error.contains("expect.mutual_exlusion"), "{error}");
        assert!(error.contains("mutual_exclusion, fencing"), "{error}");
        assert!(error.contains("no checkers of your own are registered"), "{error}");
    }

    #[test]
    fn library_lists_every_file_of_the_library_folder() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("library");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".toml"))
            .map(|name| name.trim_end_matches(".toml").to_string())
            .collect();
        files.sort();
        let mut listed: Vec<String> = library::all().map(|(name, _)| name.to_string()).collect();
        listed.sort();
        assert_eq!(files, listed);
    }

    #[test]
    fn library_scenarios_parse() {
        for (name, text) in library::all() {
            let scenario = parse(name, text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&scenario.name, name, "a library scenario is named after its file");
        }
    }

    #[test]
    fn unknown_field_names_file_line_and_field() {
        let text = GOOD.replace("writes_per_hold = 3", "writes_per_hold = 3\nburst = 2");
        let error = error_of(&text);
        let line = text.lines().position(|l| l.starts_with("burst")).unwrap() + 1;
        assert!(error.starts_with(&format!("bad.toml:{line}: ")), "{error}");
        assert!(error.contains("unknown field `burst`"), "{error}");
        assert!(!error.contains('\n'), "one line: {error}");
    }

    #[test]
    fn bad_duration_names_the_field() {
        let text = GOOD.replace("ttl = \"5s\"", "ttl = \"5 parsecs\"");
        let error = error_of(&text);
        let line = text.lines().position(|l| l.starts_with("ttl")).unwrap() + 1;
        assert!(error.starts_with(&format!("bad.toml:{line}: field `lock.ttl`: invalid duration")), "{error}");
    }

    #[test]
    fn a_deadline_clock_without_a_deadline_or_of_an_unknown_kind_is_an_error() {
        let text = GOOD.replace("ttl = \"5s\"", "ttl = \"5s\"\nclient_deadline_clock = \"wall\"");
        let error = error_of(&text);
        assert!(
            error.contains("field `lock.client_deadline_clock`: applies only with lock.client_deadline"),
            "{error}"
        );
        let text =
            GOOD.replace("ttl = \"5s\"", "ttl = \"5s\"\nclient_deadline = \"3s\"\nclient_deadline_clock = \"tai\"");
        let error = error_of(&text);
        let line = text.lines().position(|l| l.starts_with("client_deadline_clock")).unwrap() + 1;
        assert!(error.starts_with(&format!("bad.toml:{line}: ")) && error.contains("unknown variant `tai`"), "{error}");
    }

    #[test]
    fn an_unknown_etcd_release_or_an_interval_without_checkpoints_is_an_error() {
        let etcd = |body: &str| {
            GOOD.replace("[cluster]\nservers = 3\n", &format!("[cluster]\nservers = 3\n\n[cluster.etcd]\n{body}\n"))
        };
        let text = etcd("version = \"3.3\"");
        let error = error_of(&text);
        let line = text.lines().position(|l| l.starts_with("version")).unwrap() + 1;
        assert!(
            error.starts_with(&format!("bad.toml:{line}: ")) && error.contains("unknown etcd release \"3.3\""),
            "{error}"
        );
        let error = error_of(&etcd("lease_checkpoint_interval = \"2s\""));
        assert!(
            error.contains(
                "field `cluster.etcd.lease_checkpoint_interval`: applies only with cluster.etcd.lease_checkpoint = true"
            ),
            "{error}"
        );
        let error = error_of(&etcd("lease_checkpoint = true\nlease_checkpoint_interval = \"10ms\""));
        assert!(error.contains("must be between 1s and"), "{error}");
        assert!(super::parse("good.toml", &etcd("version = \"3.4.19\"\nlease_checkpoint = true")).is_ok());
    }

    #[test]
    fn missing_cluster_is_reported() {
        let text = GOOD.replace("[cluster]\nservers = 3\n", "");
        let error = error_of(&text);
        assert!(error.starts_with("bad.toml:"), "{error}");
        assert!(error.contains("missing field `cluster`"), "{error}");
    }

    #[test]
    fn unknown_nemesis_target_points_at_its_line() {
        let text = GOOD.replace("target = \"c1\"", "target = \"c9\"");
        let error = error_of(&text);
        let line = text.lines().position(|l| l.starts_with("target")).unwrap() + 1;
        assert!(
            error.starts_with(&format!("bad.toml:{line}: field `nemesis[0].target`: unknown node \"c9\"")),
            "{error}"
        );
    }

    #[test]
    fn out_of_range_values_are_rejected() {
        let error = error_of(&GOOD.replace("servers = 3", "servers = 0"));
        assert!(error.contains("field `cluster.servers`"), "{error}");
        let error = error_of(&GOOD.replace("count = 2", "count = 1000"));
        assert!(error.contains("field `clients.count`"), "{error}");
    }

    /// The error for `GOOD` with `ttl = "5s"` followed by `extra` (and `recipe` in place of
    /// etcd-mutex), and the line of `extra`'s first key.
    fn lock_error(recipe: &str, extra: &str) -> (String, usize) {
        let text = GOOD
            .replace("recipe = \"etcd-mutex\"", &format!("recipe = \"{recipe}\""))
            .replace("ttl = \"5s\"", &format!("ttl = \"5s\"\n{extra}"));
        let key = extra.split('=').next().unwrap().trim();
        let line = text.lines().position(|l| l.starts_with(&format!("{key} ="))).unwrap() + 1;
        (error_of(&text), line)
    }

    #[test]
    fn lock_entry_lifetime_and_keepalive_knobs_refuse_the_recipes_they_do_not_fit() {
        let cases = [
            ("zk-queue-lock", "lease = false", "field `lock.lease`: \"zk-queue-lock\" has no lease on its lock node"),
            ("etcd-lock-api", "lease = false", "field `lock.lease`: \"etcd-lock-api\" is a service of the server"),
            ("etcd-election", "lease = false", "field `lock.lease`: \"etcd-election\" is a service of the server"),
            ("etcd-mutex", "ephemeral = false", "field `lock.ephemeral`: \"etcd-mutex\" is an etcd recipe"),
            ("zk-herd-lock", "keepalive = \"between-holds\"", "field `lock.keepalive`: \"between-holds\" is for etcd"),
            ("etcd-mutex", "keepalive = \"sometimes\"", "field `lock.keepalive`: unknown variant `sometimes`"),
            ("etcd-mutex", "lease = \"no\"", "field `lock.lease`: invalid type"),
        ];
        for (recipe, extra, expected) in cases {
            let (error, line) = lock_error(recipe, extra);
            assert!(error.starts_with(&format!("bad.toml:{line}: {expected}")), "{recipe} {extra}: {error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
        for (recipe, extra) in [
            ("etcd-mutex", "lease = false"),
            ("etcd-cas", "lease = false"),
            ("etcd-semaphore", "lease = false"),
            ("zk-election", "ephemeral = false"),
            ("etcd-lock-api", "keepalive = \"between-holds\""),
        ] {
            let text = GOOD
                .replace("recipe = \"etcd-mutex\"", &format!("recipe = \"{recipe}\""))
                .replace("ttl = \"5s\"", &format!("ttl = \"5s\"\n{extra}"));
            parse("good.toml", &text).unwrap_or_else(|e| panic!("{recipe} {extra}: {e}"));
        }
    }

    #[test]
    fn unknown_library_name_lists_the_library() {
        let error = resolve("no-such-scenario").unwrap_err().to_string();
        assert!(error.contains("split-brain-gc-pause"), "{error}");
    }
}
