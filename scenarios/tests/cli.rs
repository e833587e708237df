//! The `coordsim` binary as a user meets it: exit codes, one-line errors on bad input, the
//! replay command on an unexpected verdict, and byte-identical output across processes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn coordsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_coordsim")).args(args).output().expect("the binary runs")
}

/// A fresh folder under the target dir for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn library_file(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("library").join(format!("{name}.toml"))).unwrap()
}

#[test]
fn list_shows_the_library() {
    let out = coordsim(&["list"]);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(stdout.contains("split-brain-gc-pause "), "{stdout}");
    assert!(stdout.contains("split-brain-gc-pause-fenced"), "{stdout}");
}

#[test]
fn run_as_expected_exits_0_and_writes_history_and_summary() {
    let dir = scratch("ok");
    let out = coordsim(&["run", "split-brain-gc-pause", "--seed", "5", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let seed_dir = dir.join("split-brain-gc-pause/seed-5");
    let summary = std::fs::read_to_string(seed_dir.join("summary.json")).unwrap();
    assert!(summary.contains("\"as_expected\": true"), "{summary}");
    assert!(seed_dir.join("history.json").is_file());
}

#[test]
fn same_seed_in_two_processes_gives_byte_identical_history() {
    let (a, b) = (scratch("det-a"), scratch("det-b"));
    for dir in [&a, &b] {
        let out = coordsim(&["run", "split-brain-gc-pause", "--seed", "9", "--out", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0));
    }
    let read = |dir: &Path, file: &str| std::fs::read(dir.join("split-brain-gc-pause/seed-9").join(file)).unwrap();
    assert_eq!(read(&a, "history.json"), read(&b, "history.json"));
    assert_eq!(read(&a, "summary.json"), read(&b, "summary.json"));
}

#[test]
fn unexpected_verdict_exits_1_and_prints_the_replay_command() {
    let dir = scratch("mismatch");
    // The unfenced scenario, wrongly expecting fencing to hold.
    let scenario = library_file("split-brain-gc-pause").replace("fencing = \"fail\"", "fencing = \"pass\"");
    let path = dir.join("wrong-expectation.toml");
    std::fs::write(&path, scenario).unwrap();
    let out = coordsim(&["run", path.to_str().unwrap(), "--seed", "2", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("MISMATCH"), "{stdout}");
    assert!(stdout.contains(&format!("cargo coordsim run {} --seed 2", path.display())), "{stdout}");
}

/// Bad input: exit 2, one line on stderr naming the file, the line and the field; no panic.
#[test]
fn metrics_prints_latency_handoff_and_drain_side_by_side() {
    let dir = scratch("metrics");
    let out = coordsim(&["run", "hundred-requests-etcd-mutex", "--seed", "1", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let out = coordsim(&["metrics", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.lines().next().unwrap().contains("hundred-requests-etcd-mutex seed 1"), "{table}");
    let row = |name: &str| table.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name}: {table}"));
    assert!(row("/locks/resource grants, drain").contains("100, "), "{table}");
    assert!(row("lock latency").contains(" ms / "), "{table}");
    // The same figures are in the run's summary.json.
    let summary = std::fs::read_to_string(dir.join("hundred-requests-etcd-mutex/seed-1/summary.json")).unwrap();
    assert!(summary.contains("\"handoff\"") && summary.contains("\"drain_us\""), "{summary}");

    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"schema\": \"coordsim-history/1\"}").unwrap();
    assert_bad_input(&coordsim(&["metrics", bad.to_str().unwrap()]), &["bad.json"]);
    let empty = scratch("metrics-empty");
    assert_bad_input(&coordsim(&["metrics", empty.to_str().unwrap()]), &["no history"]);
}

#[test]
fn profile_puts_every_scenario_on_a_time_profile_and_replays_with_it() {
    let dir = scratch("profile");
    let out = dir.to_str().unwrap();
    let run = coordsim(&["run", "hundred-requests-zk-queue-lock", "--seed", "1", "--profile", "auto", "--out", out]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let summary = std::fs::read_to_string(dir.join("hundred-requests-zk-queue-lock/seed-1/summary.json")).unwrap();
    assert!(
        summary.contains("run hundred-requests-zk-queue-lock --profile auto --seed 1"),
        "the replay keeps the profile: {summary}"
    );
    // On ZooKeeper's loopback profile the queue drains in about 6 s, not the 10 s of 1-10 ms links.
    let drain_us: u64 = summary
        .split("\"drain_us\": ")
        .nth(1)
        .unwrap()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((4_000_000..8_000_000).contains(&drain_us), "drain {drain_us} µs");
    assert_bad_input(
        &coordsim(&["run", "split-brain-gc-pause", "--seed", "1", "--profile", "etcd-9", "--out", out]),
        &["--profile", "etcd-3.4-loopback"],
    );
}

#[test]
fn compare_prints_recipes_side_by_side_with_etcd_faster_and_the_herd_visible() {
    let out = coordsim(&[
        "compare",
        "hundred-requests-etcd-mutex",
        "--recipes",
        "etcd-mutex,zk-queue-lock,etcd-cas",
        "--seeds",
        "1..3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let row = |recipe: &str| -> Vec<String> {
        let line = table.lines().find(|l| l.starts_with(&format!("| {recipe} |"))).unwrap_or_else(|| panic!("{table}"));
        line.split('|').map(|cell| cell.trim().to_string()).collect()
    };
    let ms = |cell: &str| -> f64 { cell.trim_end_matches(" ms").parse().unwrap_or_else(|_| panic!("{cell}: {table}")) };
    let (mutex, queue, cas) = (row("etcd-mutex"), row("zk-queue-lock"), row("etcd-cas"));
    assert_eq!((mutex[2].as_str(), queue[2].as_str()), ("etcd-3.4-loopback", "zookeeper-3.8-loopback"), "{table}");
    assert!(ms(&mutex[3]) < ms(&queue[3]), "etcd's mutex hands over faster than ZooKeeper's queue: {table}");
    assert_eq!(mutex[7], "0.99", "one wakeup per release but the first grant's: {table}");
    let herd: f64 = cas[7].parse().unwrap();
    assert!(herd > 10.0, "every release wakes the compare-and-swap's waiters: {table}");
    assert_bad_input(&coordsim(&["compare", "hundred-requests-etcd-mutex", "--recipes", "paxos"]), &["paxos"]);
    assert_bad_input(&coordsim(&["compare", "zk-stale-reads"]), &["[lock]"]);
}

fn assert_bad_input(out: &Output, needles: &[&str]) {
    assert_eq!(out.status.code(), Some(2), "stdout: {} stderr: {}", text(&out.stdout), text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} missing from {stderr:?}");
    }
}

#[test]
fn malformed_scenario_files_are_rejected_with_file_line_and_field() {
    let dir = scratch("bad");
    let good = library_file("split-brain-gc-pause");
    let cases = [
        ("unknown-field", good.replace("count = 2", "count = 2\ncolour = \"red\""), vec!["unknown field `colour`"]),
        (
            "bad-duration",
            good.replace("at = \"2s\"", "at = \"2 fortnights\""),
            vec!["field `nemesis[0].at`", "invalid duration"],
        ),
        ("missing-cluster", good.replace("[cluster]\nservers = 3\n", ""), vec!["missing field `cluster`"]),
        ("bad-target", good.replace("target = \"c1\"", "target = \"c7\""), vec!["field `nemesis[0].target`", "\"c7\""]),
    ];
    for (name, content, needles) in cases {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, &content).unwrap();
        let out = coordsim(&["run", path.to_str().unwrap(), "--seed", "1", "--out", dir.to_str().unwrap()]);
        let mut needles = needles.clone();
        let file = path.to_str().unwrap().to_string();
        needles.push(&file);
        assert_bad_input(&out, &needles);
        assert_eq!(text(&out.stderr).trim().lines().count(), 1, "one line: {}", text(&out.stderr));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), content, "the user's file is left as it was");
    }
}

#[test]
fn key_value_knobs_that_do_not_fit_are_rejected_with_file_line_and_field() {
    let dir = scratch("bad-kv");
    let zk = library_file("zk-stale-reads");
    let etcd = library_file("stale-reads");
    let cases = [
        ("unknown-api", zk.replace("api = \"zookeeper\"", "api = \"consul\""), vec!["field `kv.api`", "consul"]),
        (
            "bad-zk-reads",
            zk.replace("zk_reads = \"local\"", "zk_reads = \"eventually\""),
            vec!["field `kv.zk_reads`", "eventually"],
        ),
        (
            "zk-reads-on-etcd",
            etcd.replace("keys = 3", "keys = 3\nzk_reads = \"sync\""),
            vec!["field `kv.zk_reads`", "only for api = \"zookeeper\""],
        ),
        ("zk-deletes", zk.replace("cas = 0.2", "cas = 0.2\ndeletes = 0.1"), vec!["field `kv.deletes`", "version"]),
        ("too-many-readers", zk.replace("readers = 3", "readers = 6"), vec!["field `kv.readers`", "no writer"]),
        (
            "shares-above-one",
            library_file("over-locking-cas").replace("updates = 1.0", "updates = 1.0\nreads = 0.5"),
            vec!["field `kv.updates`", "at most 1"],
        ),
    ];
    for (name, content, mut needles) in cases {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, &content).unwrap();
        let out = coordsim(&["run", path.to_str().unwrap(), "--seed", "1", "--out", dir.to_str().unwrap()]);
        let file = path.to_str().unwrap().to_string();
        needles.push(&file);
        assert_bad_input(&out, &needles);
        assert_eq!(text(&out.stderr).trim().lines().count(), 1, "one line: {}", text(&out.stderr));
    }
}

#[test]
fn bad_flags_and_names_exit_2() {
    assert_bad_input(&coordsim(&["run", "split-brain-gc-pause", "--seeds", "9..1"]), &["empty range"]);
    assert_bad_input(&coordsim(&["run", "split-brain-gc-pause", "--seed", "x"]), &["--seed"]);
    assert_bad_input(&coordsim(&["run", "no-such-scenario"]), &["unknown scenario \"no-such-scenario\""]);
    assert_bad_input(&coordsim(&["run", "missing/file.toml"]), &["missing/file.toml"]);
    assert_bad_input(&coordsim(&["frobnicate"]), &["frobnicate"]);
}

#[test]
fn check_rejects_a_malformed_history_with_exit_2() {
    let dir = scratch("history");
    let path = dir.join("history.json");
    std::fs::write(&path, "{\"schema\": \"coordsim-history/1\", \"scenario\": 3}").unwrap();
    assert_bad_input(&coordsim(&["check", path.to_str().unwrap()]), &["history.json", "line 1"]);
}

#[test]
fn check_recomputes_verdicts_of_a_recorded_history() {
    let dir = scratch("recheck");
    let out = coordsim(&["run", "split-brain-gc-pause", "--seed", "4", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let history = dir.join("split-brain-gc-pause/seed-4/history.json");
    let out = coordsim(&["check", history.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "a violated property exits 1");
    assert!(text(&out.stdout).contains("mutual_exclusion   fail"), "{}", text(&out.stdout));
}

fn jepsen_log(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../checker/tests/data/porcupine/jepsen").join(name)
}

#[test]
fn check_judges_jepsen_etcd_logs_for_linearizability() {
    // Verdicts from Porcupine's test suite (expected.tsv).
    let out = coordsim(&["check", jepsen_log("etcd_000.log").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("NOT linearizable"), "{stdout}");
    assert!(stdout.contains("could not be placed next"), "{stdout}");
    let out = coordsim(&["check", jepsen_log("etcd_002.log").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("linearizable"));
}

#[test]
fn check_rejects_malformed_jepsen_input_with_its_line() {
    let dir = scratch("jepsen-bad");
    let path = dir.join("broken.log");
    let mut content = std::fs::read_to_string(jepsen_log("etcd_002.log")).unwrap();
    content.push_str("INFO  jepsen.util - 3\t:ok\t:frobnicate\t7\n");
    std::fs::write(&path, &content).unwrap();
    let line = content.lines().count().to_string();
    assert_bad_input(&coordsim(&["check", path.to_str().unwrap()]), &["broken.log", &format!("line {line}")]);
    let unknown = dir.join("history.txt");
    std::fs::write(&unknown, "x").unwrap();
    assert_bad_input(&coordsim(&["check", unknown.to_str().unwrap()]), &["--format"]);
}

fn checker_data(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../checker/tests/data").join(path).to_str().unwrap().to_string()
}

/// issue 19: folders and several files, one line each and a total; the worst outcome decides.
#[test]
fn check_takes_folders_and_prints_a_line_per_file_and_a_total() {
    let out = coordsim(&["check", &checker_data("knossos")]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(stdout.lines().count(), 123, "{stdout}");
    assert!(stdout.contains("mutex/bad/etcd.edn: NOT linearizable"), "{stdout}");
    let total = stdout.lines().last().unwrap();
    assert!(total.starts_with("122 files in "), "{total}");
    // The multi-register history is valid only from x = y = 0 (SOURCE.md).
    assert!(total.ends_with(": 113 valid, 9 violated, 0 unknown, 0 bad input"), "{total}");
    let out =
        coordsim(&["check", &checker_data("knossos/cas-register/good"), &checker_data("porcupine/kv/c50-ok.txt")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("c50-ok.txt: linearizable (1712 operations, kv model"), "{}", text(&out.stdout));
    let out = coordsim(&["check", &checker_data("knossos/multi-register"), "--initial", "x=0,y=0"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// issue 19: exit 3 for unknown, exit 2 for an empty history, in every format.
#[test]
fn unknown_exits_3_and_empty_input_exits_2_in_every_format() {
    let dir = scratch("check-formats");
    let out = coordsim(&["run", "over-locking-cas", "--seed", "1", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json = dir.join("over-locking-cas/seed-1/history.json");
    let edn = checker_data("knossos/cas-register/bad/cas-failure.edn");
    let log = jepsen_log("etcd_002.log");
    for path in [json.to_str().unwrap(), &edn, log.to_str().unwrap()] {
        let out = coordsim(&["check", path, "--memory-limit", "1KiB"]);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(3), "{path}: {stdout}");
        assert!(stdout.contains("memory limit reached (1 KiB)"), "{stdout}");
    }
    for (name, content) in [("empty.json", ""), ("empty.log", "\n"), ("empty.edn", "; nothing\n[]"), ("blank.txt", " ")]
    {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        assert_bad_input(&coordsim(&["check", path.to_str().unwrap()]), &[name]);
    }
    assert_bad_input(&coordsim(&["check", &edn, "--memory-limit", "lots"]), &["512MiB"]);
    assert_bad_input(&coordsim(&["check", &edn, "--initial", "x"]), &["--initial 0"]);
}

/// issue 4: the drawn plan, pasted into the scenario as a fixed timeline, is the same run.
#[test]
fn show_plan_pasted_as_a_fixed_timeline_replays_the_same_history() {
    let dir = scratch("plan");
    let out = coordsim(&["run", "chaos-fenced-mutex", "--seed", "3", "--show-plan"]);
    assert_eq!(out.status.code(), Some(0));
    let plan = text(&out.stdout);
    assert!(plan.contains("[[nemesis]]"), "{plan}");
    let original = library_file("chaos-fenced-mutex");
    let (head, tail) = original.split_at(original.find("[chaos]").unwrap());
    let fixed = format!("{head}{plan}\n{}", &tail[tail.find("[expect]").unwrap()..]);
    let path = dir.join("fixed.toml");
    std::fs::write(&path, fixed).unwrap();
    let (a, b) = (dir.join("a"), dir.join("b"));
    assert_eq!(
        coordsim(&["run", "chaos-fenced-mutex", "--seed", "3", "--out", a.to_str().unwrap()]).status.code(),
        Some(0)
    );
    assert_eq!(
        coordsim(&["run", path.to_str().unwrap(), "--seed", "3", "--out", b.to_str().unwrap()]).status.code(),
        Some(0)
    );
    let history = |dir: &Path| std::fs::read(dir.join("chaos-fenced-mutex/seed-3/history.json")).unwrap();
    assert_eq!(history(&a), history(&b));
}

#[test]
fn closed_or_full_stdout_is_not_a_panic() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_coordsim")).arg("list").stdout(full).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot write to stdout"), "{}", text(&out.stderr));
}

/// `coordsim list | head -0`: the reader is gone before the first line; the process ends as
/// `cat` does, by SIGPIPE, with nothing on stderr.
#[test]
fn a_closed_pipe_on_stdout_ends_the_process_by_sigpipe() {
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_coordsim"))
        .arg("list")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

#[test]
fn unwritable_output_folder_is_reported_before_any_run() {
    let out = coordsim(&["run", "split-brain-gc-pause", "--seeds", "1..3", "--out", "/proc/coordsim"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stdout).is_empty(), "nothing ran: {}", text(&out.stdout));
}

#[test]
fn two_scenarios_of_one_name_are_refused() {
    let dir = scratch("same-name");
    let path = dir.join("copy.toml");
    std::fs::write(&path, library_file("split-brain-gc-pause")).unwrap();
    let out = coordsim(&["run", "split-brain-gc-pause", path.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert_bad_input(&out, &["both named \"split-brain-gc-pause\""]);
}

/// issue 21: a user's own files in an output folder survive run, sweep, shrink and report; a
/// re-run removes coordsim's own stale report.
#[test]
fn a_users_files_in_the_output_folder_survive_every_command() {
    let dir = scratch("owned");
    let out = dir.to_str().unwrap();
    let seed_dir = dir.join("split-brain-gc-pause/seed-4");
    std::fs::create_dir_all(&seed_dir).unwrap();
    let notes = seed_dir.join("notes.txt");
    std::fs::write(&notes, "mine").unwrap();
    // A run beside the user's notes: they stay, the run's files are listed as coordsim's.
    let run = coordsim(&["run", "split-brain-gc-pause", "--seed", "4", "--out", out]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine");
    assert!(seed_dir.join("report.html").exists());
    let manifest = std::fs::read_to_string(seed_dir.join(".coordsim-files")).unwrap();
    assert!(manifest.contains("history.json") && !manifest.contains("notes.txt"), "{manifest}");
    // The same seed without reports: its old report would contradict nothing less, so it goes.
    let run = coordsim(&["run", "split-brain-gc-pause", "--seed", "4", "--out", out, "--report", "none"]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert!(!seed_dir.join("report.html").exists(), "a stale report of ours is removed");
    // A file of the user's where coordsim writes is refused, with its path, and kept.
    for (name, args) in [
        ("report.html", vec!["report", seed_dir.to_str().unwrap()]),
        ("history.json", vec!["run", "split-brain-gc-pause", "--seed", "4", "--out", out]),
    ] {
        let path = seed_dir.join(name);
        let before = std::fs::read(&path).ok();
        std::fs::write(&path, "my own file").unwrap();
        assert_bad_input(&coordsim(&args), &[&format!("{name}: exists and was not written by coordsim")]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "my own file");
        match before {
            Some(bytes) => std::fs::write(&path, bytes).unwrap(),
            None => std::fs::remove_file(&path).unwrap(),
        }
    }
    std::fs::write(dir.join("sweep.json"), "mine").unwrap();
    assert_bad_input(&coordsim(&["run", "split-brain-gc-pause", "--seed", "4", "--out", out]), &["sweep.json: exists"]);
    std::fs::write(dir.join("minimal.toml"), "mine").unwrap();
    assert_bad_input(
        &coordsim(&["shrink", "split-brain-gc-pause", "--seed", "4", "--out", out]),
        &["minimal.toml: exists"],
    );
    std::fs::write(dir.join("detection.json"), "mine").unwrap();
    assert_bad_input(
        &coordsim(&["sweep", "--bugs", "ignore_keepalive_failure", "--seeds", "1..1", "--out", out]),
        &["detection.json: exists"],
    );
    for file in ["sweep.json", "minimal.toml", "detection.json"] {
        assert_eq!(std::fs::read_to_string(dir.join(file)).unwrap(), "mine");
    }
}

/// issue 38: an endless or blocking input is refused at once, and a file over `--max-input`
/// before it is read; a history with an early error is refused at its line.
#[test]
fn endless_blocking_and_oversized_inputs_are_refused_before_they_are_read() {
    assert_bad_input(&coordsim(&["check", "/dev/zero"]), &["/dev/zero", "not a regular file (a device)"]);
    let dir = scratch("inputs");
    let fifo = dir.join("history.json");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // A FIFO with no writer: opening it would block for ever.
    assert_bad_input(&coordsim(&["check", fifo.to_str().unwrap()]), &["not a regular file (a FIFO)"]);
    assert_bad_input(&coordsim(&["run", fifo.to_str().unwrap()]), &["not a regular file (a FIFO)"]);
    std::fs::remove_file(&fifo).unwrap();
    let big = dir.join("big.json");
    let entry = r#"{"time_ns": 1, "node": "c1", "type": "invoke", "op": 1, "call": {"f": "get", "key": "k"}}"#;
    let mut history = String::from(
        r#"{"schema": "coordsim-history/1", "scenario": "x", "seed": 1, "duration_ns": 10, "nodes": [], "entries": ["#,
    );
    history.push_str(entry);
    history.push_str(",\n{\"time_ns\": 2, \"node\": \"c1\", \"type\": \"bogus\"}");
    for _ in 0..20_000 {
        history.push_str(",\n");
        history.push_str(entry);
    }
    history.push_str("]}\n");
    std::fs::write(&big, &history).unwrap();
    let path = big.to_str().unwrap();
    assert_bad_input(&coordsim(&["check", path, "--max-input", "1MiB"]), &["over the limit", "--max-input raises it"]);
    assert_bad_input(&coordsim(&["check", path]), &["line 2", "unknown variant `bogus`"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// issue 38: a 1 MB value holding a newline, quoted back in an error, stays one short line.
#[test]
fn a_huge_value_with_a_newline_is_quoted_back_as_one_short_line() {
    let dir = scratch("huge-value");
    let file = dir.join("huge.toml");
    let value = format!("{}\\nx", "p".repeat(1_000_000));
    let scenario = library_file("split-brain-gc-pause").replacen("kind = \"pause\"", &format!("kind = \"{value}\""), 1);
    std::fs::write(&file, scenario).unwrap();
    let out = coordsim(&["run", file.to_str().unwrap()]);
    assert_bad_input(&out, &["huge.toml:", "nemesis[0].kind", "bytes in all", "expected one of"]);
    let stderr = text(&out.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.len() < 500, "{} bytes", stderr.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every file a folder holds, with its bytes: to compare a folder before and after a command.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.push((path.clone(), Vec::new()));
                stack.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// issue 38: a command that would overwrite a user's file refuses before it works, and leaves
/// the folder exactly as it was (no history beside a refused summary, no report over the user's).
#[test]
fn a_refused_output_folder_is_left_exactly_as_it_was() {
    let dir = scratch("refused");
    let seed_dir = dir.join("split-brain-gc-pause/seed-2");
    std::fs::create_dir_all(&seed_dir).unwrap();
    std::fs::write(seed_dir.join("summary.json"), "{\"mine\": true}").unwrap();
    let before = snapshot(&dir);
    let run = coordsim(&["run", "all", "--seeds", "1..2", "--out", dir.to_str().unwrap()]);
    assert_bad_input(&run, &["seed-2/summary.json: exists and was not written by coordsim"]);
    assert!(!text(&run.stdout).contains("seed     1"), "refused before the first seed ran");
    assert_eq!(snapshot(&dir), before);

    let reports = dir.join("model");
    std::fs::create_dir_all(&reports).unwrap();
    std::fs::write(reports.join("report.html"), "<html>my own report</html>").unwrap();
    let before = snapshot(&dir);
    let model = coordsim(&["model", "lease-lock", "--report", reports.to_str().unwrap()]);
    assert_bad_input(&model, &["report.html: exists and was not written by coordsim"]);
    assert_eq!(snapshot(&dir), before);
    std::fs::remove_dir_all(&dir).unwrap();
}
