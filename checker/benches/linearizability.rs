//! Single-core speed on the Jepsen etcd histories of tests/data/porcupine, against Porcupine
//! 1.3.0's figures on this machine type: 0.40 s for all 102 files, 0.14 s for etcd_002 alone.
//! Histories are parsed once, outside the measurement; partitions run sequentially.

use std::path::{Path, PathBuf};

use coordsim_checker::import::{RegisterHistory, porcupine_log};
use coordsim_checker::linearizability::models::RegisterModel;
use coordsim_checker::linearizability::{CheckOptions, check};
use criterion::{Criterion, criterion_group, criterion_main};

fn jepsen_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/porcupine/jepsen")
}

fn load(file: &str) -> RegisterHistory {
    porcupine_log::read(&jepsen_dir().join(file)).expect("test data parses")
}

fn single_core() -> CheckOptions {
    CheckOptions { parallel: false, ..CheckOptions::default() }
}

fn etcd_histories(c: &mut Criterion) {
    let all: Vec<RegisterHistory> = (0..=102).map(|i| load(&format!("etcd_{i:03}.log"))).collect();
    let etcd_002 = load("etcd_002.log");
    let model = RegisterModel::new();
    let options = single_core();
    let mut group = c.benchmark_group("porcupine_etcd");
    group.sample_size(20);
    group.bench_function("all_102_files", |b| {
        b.iter(|| {
            for history in &all {
                std::hint::black_box(check(&model, history, &options).unwrap());
            }
        })
    });
    group.bench_function("etcd_002", |b| b.iter(|| std::hint::black_box(check(&model, &etcd_002, &options).unwrap())));
    group.finish();
}

criterion_group!(benches, etcd_histories);
criterion_main!(benches);
