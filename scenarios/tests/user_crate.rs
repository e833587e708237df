//! docs/test-your-own-code.md followed literally. Every `toml` and `rust` block of the page names
//! its file on its first line and is that file of `template/`, byte for byte; the template, copied
//! out of this tree with `coordsim` as its only coordsim dependency, builds, its passing test
//! passes, its failing test fails saying why, and the replay command it prints reproduces the
//! failing seed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

/// The page's code blocks as (language, first line, text).
fn blocks(page: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<&str>)> = None;
    for line in page.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(language)) => open = Some((language.trim().to_string(), Vec::new())),
            (Some((language, lines)), Some("")) => {
                let text = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
                out.push((language.clone(), lines.first().unwrap_or(&"").to_string(), text));
                open = None;
            }
            (Some((_, lines)), _) => lines.push(line),
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed code block in the page");
    out
}

/// The file a block's first line names: `# Cargo.toml of your crate` → `Cargo.toml`,
/// `// src/lib.rs of your crate: ...` → `src/lib.rs`, `# .cargo/config.toml: ...` →
/// `.cargo/config.toml`.
fn named_file(first_line: &str) -> Option<String> {
    let rest = first_line.strip_prefix("# ").or_else(|| first_line.strip_prefix("// "))?;
    let path = rest.split([' ', ':']).next()?;
    (path.ends_with(".toml") || path.ends_with(".rs")).then(|| path.to_string())
}

/// Every file the page shows, in its order.
fn page_files() -> Vec<(String, String)> {
    let page = std::fs::read_to_string(root().join("docs/test-your-own-code.md")).expect("the page");
    let mut files = Vec::new();
    for (language, first, text) in blocks(&page) {
        match language.as_str() {
            "toml" | "rust" => {
                let path = named_file(&first).unwrap_or_else(|| {
                    panic!("a {language} block of the page names no file on its first line: {first:?}")
                });
                files.push((path, text));
            }
            "text" | "console" | "sh" => {}
            other => panic!("a code block of the page has language {other:?}: name it toml, rust or text"),
        }
    }
    files
}

#[test]
fn every_code_block_of_the_page_is_a_file_of_the_template() {
    let files = page_files();
    let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    for expected in ["Cargo.toml", ".cargo/config.toml", "src/lib.rs", "tests/election.rs"] {
        assert!(names.contains(&expected), "the page shows no {expected}: {names:?}");
    }
    for (path, text) in &files {
        let template = std::fs::read_to_string(root().join("template").join(path))
            .unwrap_or_else(|e| panic!("template/{path} (shown on the page): {e}"));
        assert_eq!(&template, text, "the page's {path} differs from template/{path}");
    }
}

fn cargo(dir: &Path, args: &[&str]) -> Output {
    let target = root().join("target/user-crate");
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.args(args).current_dir(dir).env("CARGO_TARGET_DIR", &target);
    // Line tables only, as the workspace's own debug builds: full debug info of a second copy of
    // every dependency costs gigabytes of CI's disk and changes nothing the test looks at.
    command.env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only");
    // The user's crate is built as the page says, by its own .cargo/config.toml.
    for var in ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS"] {
        command.env_remove(var);
    }
    command.output().expect("cargo runs")
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn a_crate_made_from_the_page_builds_passes_fails_on_purpose_and_replays_as_printed() {
    // Out of this tree: a crate under the workspace's folder would be taken for a member.
    let dir = std::env::temp_dir().join(format!("coordsim-user-crate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let scenarios = root().join("scenarios");
    for (path, text) in page_files() {
        let text =
            text.replace("path = \"../coordsim/scenarios\"", &format!("path = {:?}", scenarios.display().to_string()));
        let file = dir.join(&path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
    }
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let coordsim_deps = manifest.lines().filter(|l| l.trim_start().starts_with("coordsim")).count();
    assert_eq!(coordsim_deps, 1, "coordsim is the one coordsim dependency:\n{manifest}");
    // The workspace's lock: the same versions, resolved without the network.
    std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    let tested = cargo(&dir, &["test", "--offline"]);
    let out = text(&tested);
    assert!(!tested.status.success(), "the failing test failed:\n{out}");
    assert!(out.contains("test one_leader_at_a_time ... ok"), "{out}");
    assert!(out.contains("test fails_on_purpose_a_leader_that_ignores_its_lease ... FAILED"), "{out}");
    assert!(out.contains("single_holder is fail (expected pass)"), "{out}");
    assert!(out.contains("two holders of /my/election"), "{out}");
    let replay = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: "))
        .unwrap_or_else(|| panic!("no replay line:\n{out}"))
        .to_string();
    let seed = replay.strip_prefix("COORDSIM_SEED=").and_then(|r| r.split(' ').next()).expect("the seed").to_string();
    assert!(
        replay.contains("-p my-service --test election fails_on_purpose_a_leader_that_ignores_its_lease -- --exact"),
        "{replay}"
    );

    // The replay as printed (offline, as above): the one test, the one seed, the same failure.
    let replayed = Command::new("sh")
        .arg("-c")
        .arg(replay.replacen("cargo test", "cargo test --offline", 1))
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", root().join("target/user-crate"))
        .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("sh runs");
    let again = text(&replayed);
    assert!(!replayed.status.success(), "{again}");
    assert!(again.contains(&format!("seed {seed}: single_holder is fail")), "{again}");
    assert!(again.contains("1 passed; 0 failed") || again.contains("0 passed; 1 failed"), "{again}");
    assert!(!again.contains("one_leader_at_a_time"), "the replay ran the failing test alone:\n{again}");
    let _ = std::fs::remove_dir_all(&dir);
}
