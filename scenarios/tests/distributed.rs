//! The distributed-sweep recipes in docs/ci/ run as written (issue 20): each file is parsed as
//! its engine would, its shard commands run here one folder per machine with a smaller sweep in
//! their environment, each shard's file goes where the engine would put it, and the merge
//! command, also as written, gives what one machine running the whole sweep gives.
//!
//! `cargo` in the files is a shim on PATH that runs the coordsim binary under test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use yaml_rust2::{Yaml, YamlLoader};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("distributed-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn documents(file: &str) -> Vec<Yaml> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ci").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A PATH whose `cargo coordsim ...` runs the binary under test.
fn shim_path(dir: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cargo = bin.join("cargo");
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = coordsim ] || {{ echo \"not a coordsim command: $*\" >&2; exit 97; }}\nshift\nexec {} \"$@\"\n",
        env!("CARGO_BIN_EXE_coordsim")
    );
    std::fs::write(&cargo, script).unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

/// Runs `command` with bash in `cwd`, with `env` and the shim first on PATH; it must exit 0.
fn bash(command: &str, cwd: &Path, env: &BTreeMap<String, String>, path: &str) -> Output {
    std::fs::create_dir_all(cwd).unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(env)
        .env("PATH", path)
        .output()
        .expect("bash runs");
    assert_eq!(out.status.code(), Some(0), "{command}\nstdout: {}\nstderr: {}", text(&out.stdout), text(&out.stderr));
    out
}

/// The file a sweep wrote, as JSON without its `command`, and with the output folders the
/// machines used (`outs`, which a file names) as `<out>`.
fn sweep_file(path: &Path, outs: &[PathBuf]) -> serde_json::Value {
    let mut text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for out in outs {
        text = text.replace(&out.display().to_string(), "<out>");
    }
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value.as_object_mut().expect("a sweep file is an object").remove("command");
    value
}

fn string(yaml: &Yaml, what: &str) -> String {
    yaml.as_str().unwrap_or_else(|| panic!("{what} is not a string: {yaml:?}")).to_string()
}

/// A job's `run` steps, in order.
fn run_steps(job: &Yaml) -> Vec<String> {
    job["steps"]
        .as_vec()
        .expect("a job has steps")
        .iter()
        .filter_map(|step| step["run"].as_str())
        .map(String::from)
        .collect()
}

/// The step of `job` that uses the action `name` (`actions/upload-artifact`).
fn uses<'a>(job: &'a Yaml, name: &str) -> &'a Yaml {
    job["steps"]
        .as_vec()
        .expect("a job has steps")
        .iter()
        .find(|step| step["uses"].as_str().is_some_and(|uses| uses.starts_with(name)))
        .unwrap_or_else(|| panic!("no step uses {name}"))
}

#[test]
fn the_github_actions_matrix_shards_the_detection_sweep_and_merges_to_one_machines_result() {
    let workflow = &documents("github-detection.yml")[0];
    let dir = scratch("github");
    let path = shim_path(&dir);
    // The workflow's environment, with a smaller sweep: one switch, eight seeds.
    let mut env: BTreeMap<String, String> = workflow["env"]
        .as_hash()
        .expect("the workflow sets BUGS and SEEDS")
        .iter()
        .map(|(k, v)| (string(k, "an env name"), v.as_str().map_or_else(|| format!("{v:?}"), String::from)))
        .collect();
    assert_eq!(env.keys().collect::<Vec<_>>(), ["BUGS", "SEEDS"]);
    env.insert("BUGS".into(), "deposed_leader_expires_leases".into());
    env.insert("SEEDS".into(), "1..8".into());

    let shard = &workflow["jobs"]["shard"];
    let shards: Vec<i64> = shard["strategy"]["matrix"]["shard"]
        .as_vec()
        .expect("a matrix of shards")
        .iter()
        .map(|k| k.as_i64().expect("shard numbers"))
        .collect();
    assert_eq!(shards, (1..=shards.len() as i64).collect::<Vec<_>>(), "shards 1..N");
    let [command] = run_steps(shard).try_into().expect("one run step per shard");
    assert!(command.contains(&format!("/{} ", shards.len())), "--shard K/N with N the matrix's size: {command}");
    let upload = &uses(shard, "actions/upload-artifact")["with"];
    let (artifact, file) = (string(&upload["name"], "the artifact's name"), string(&upload["path"], "its path"));
    for k in &shards {
        let machine = dir.join(format!("shard-{k}"));
        bash(&command.replace("${{ matrix.shard }}", &k.to_string()), &machine, &env, &path);
        // download-artifact puts each artifact in a folder named after it.
        let name = artifact.replace("${{ matrix.shard }}", &k.to_string());
        let into = dir.join("merge/shards").join(name);
        std::fs::create_dir_all(&into).unwrap();
        std::fs::copy(machine.join(&file), into.join(Path::new(&file).file_name().unwrap())).unwrap();
    }
    let merge = &workflow["jobs"]["merge"];
    assert_eq!(merge["needs"].as_str(), Some("shard"));
    let [command] = run_steps(merge).try_into().expect("one run step to merge");
    bash(&command, &dir.join("merge"), &env, &path);
    let merged = string(&uses(merge, "actions/upload-artifact")["with"]["path"], "the merged file");

    let whole = dir.join("whole");
    let unsharded = format!("cargo coordsim sweep --bugs \"$BUGS\" --seeds \"$SEEDS\" --out {}", whole.display());
    bash(&unsharded, &dir, &env, &path);
    assert_eq!(sweep_file(&dir.join("merge").join(merged), &[]), sweep_file(&whole.join("detection.json"), &[]));
}

#[test]
fn the_kubernetes_indexed_job_shards_the_scenario_sweep_and_its_merge_job_gives_one_machines_result() {
    let jobs = documents("kubernetes-sweep.yaml");
    let [sweep, merge] = jobs.as_slice() else { panic!("two Jobs: the sweep and the merge") };
    let dir = scratch("kubernetes");
    let path = shim_path(&dir);
    let results = dir.join("results");
    std::fs::create_dir_all(&results).unwrap();

    assert_eq!(sweep["kind"].as_str(), Some("Job"));
    let spec = &sweep["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let completions = spec["completions"].as_i64().expect("completions");
    let container = &spec["template"]["spec"]["containers"][0];
    let env_of = |container: &Yaml| -> BTreeMap<String, String> {
        container["env"]
            .as_vec()
            .map(|list| {
                list.iter().map(|e| (string(&e["name"], "an env name"), string(&e["value"], "its value"))).collect()
            })
            .unwrap_or_default()
    };
    let mut env = env_of(container);
    assert_eq!(env.keys().collect::<Vec<_>>(), ["RESULTS", "SCENARIOS", "SEEDS"]);
    // A smaller sweep, and the shared volume here.
    env.insert("SCENARIOS".into(), "split-brain-gc-pause".into());
    env.insert("SEEDS".into(), "1..4".into());
    env.insert("RESULTS".into(), results.display().to_string());
    assert_eq!(container["command"].as_vec().map(|c| c.len()), Some(2), "bash -c");
    let command = string(&container["args"][0], "the shard's command");
    assert!(command.contains(&format!("/{completions}\"")), "--shard K/N with N the completions: {command}");
    for index in 0..completions {
        let mut pod = env.clone();
        pod.insert("JOB_COMPLETION_INDEX".into(), index.to_string());
        bash(&command, &dir.join(format!("pod-{index}")), &pod, &path);
    }

    let merger = &merge["spec"]["template"]["spec"]["containers"][0];
    let mut merge_env = env_of(merger);
    merge_env.insert("RESULTS".into(), results.display().to_string());
    bash(&string(&merger["args"][0], "the merge command"), &dir.join("merge"), &merge_env, &path);

    let whole = dir.join("whole");
    let unsharded =
        format!("cargo coordsim run \"$SCENARIOS\" --seeds \"$SEEDS\" --report none --out {}", whole.display());
    bash(&unsharded, &dir, &env, &path);
    let mut outs: Vec<PathBuf> = (0..completions).map(|index| results.join(format!("shard-{index}"))).collect();
    outs.push(whole.clone());
    assert_eq!(sweep_file(&results.join("sweep.json"), &outs), sweep_file(&whole.join("sweep.json"), &outs));
}
