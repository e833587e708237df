//! Embeds every `library/swarm-*.toml` (the swarm scenario of a bug switch) without a list to keep
//! in step: a new switch needs only its file. The other library files are listed by hand in
//! `src/library.rs`, in the order `coordsim list` shows them.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let library = manifest.join("library");
    println!("cargo:rerun-if-changed={}", library.display());
    let mut names: Vec<String> = std::fs::read_dir(&library)
        .expect("scenarios/library exists")
        .map(|entry| entry.expect("a readable folder entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("swarm-") && name.ends_with(".toml"))
        .map(|name| name.trim_end_matches(".toml").to_string())
        .collect();
    names.sort(); // read_dir's order is the file system's: sort for a stable binary
    let mut code = String::from("/// (name, TOML text) of every swarm scenario, by name.\n");
    code.push_str("pub const SWARM: &[(&str, &str)] = &[\n");
    for name in names {
        let path = library.join(format!("{name}.toml"));
        code.push_str(&format!("    ({name:?}, include_str!({:?})),\n", path.display().to_string()));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("swarm.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
