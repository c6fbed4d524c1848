//! The bindings run end to end at smoke size with the flavours every checkout has (the Rust
//! clients, through this binary's `rust-driver`) and one whose package is missing (C without
//! a driver): every item is measured or reported unavailable with a reason, the ratios and
//! targets are filled, the files are written. Never how fast.

use std::path::PathBuf;

use statestore_bench::bindings::report;
use statestore_bench::bindings::result::BindingResult;
use statestore_bench::bindings::runner::{self, Tools};
use statestore_bench::bindings::{markdown, targets, BindingsProfile, Flavour};

#[test]
fn rust_flavours_measure_and_a_missing_package_is_unavailable() {
    let profile = BindingsProfile::smoke();
    let flavours = [Flavour::RustAsync, Flavour::RustBlocking, Flavour::CAsync];
    let items = profile.items(&flavours);
    let tools = Tools {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_statestore-bench")),
        drivers_dir: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("drivers"),
        python: None,
        node: None,
        node_dir: None,
        c_driver: None,
    };
    let mut seen = 0;
    let (probes, mut results) =
        runner::run(&profile, &tools, &items, |_| seen += 1).expect("the run starts");
    assert_eq!(seen, items.len());
    assert_eq!(results.len(), items.len());
    let c = probes
        .iter()
        .find(|p| p.flavour == Flavour::CAsync)
        .expect("C probed");
    assert!(
        c.unavailable
            .as_deref()
            .is_some_and(|r| r.contains("C driver")),
        "{c:?}"
    );
    for r in &results {
        match r.flavour {
            Flavour::CAsync => {
                assert!(r.unavailable.is_some() && !r.failed_run(), "{}", r.name)
            }
            _ => {
                assert!(r.ok(), "{}: {:?}", r.name, r.outcome.error);
                match r.kind {
                    "throughput" => {
                        assert_eq!(Some(r.outcome.ops), profile.op_cap, "{}", r.name);
                        assert!(
                            r.figures.ops_per_sec > 0.0 && r.figures.p99_us >= r.figures.p50_us,
                            "{}",
                            r.name
                        );
                    }
                    "boundary" => assert!(r.ns_per_call.is_some_and(|ns| ns > 0.0), "{}", r.name),
                    "memory" => assert!(r.memory.is_some(), "{}", r.name),
                    "batch" => assert!(
                        r.loop_s.is_some_and(|s| s > 0.0)
                            && r.batch_s.is_some_and(|s| s > 0.0)
                            && r.batch_speedup.is_some_and(|x| x > 0.0),
                        "{}",
                        r.name
                    ),
                    "idle" => assert!(
                        r.figures.elapsed_s > 0.0
                            && r.idle_cpu_ms.is_some_and(|ms| ms >= 0.0)
                            && r.idle_ctx_switches.is_some(),
                        "{}",
                        r.name
                    ),
                    other => panic!("unknown kind {other}"),
                }
            }
        }
    }
    report::compare(&mut results);
    let blocking: Vec<&BindingResult> = results
        .iter()
        .filter(|r| r.flavour == Flavour::RustBlocking && r.kind == "throughput")
        .collect();
    assert!(blocking
        .iter()
        .all(|r| r.ratio_to_rust_async.is_some() && r.ratio_to_baseline.is_none()));
    let checks = targets::evaluate(&results);
    assert_eq!(checks.len(), 9);
    let dir = tempfile::tempdir().expect("temp dir");
    let written = report::write_files(dir.path(), profile.name, &probes, &results, &checks, None)
        .expect("written");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&written.json).expect("json"))
            .expect("valid JSON");
    assert_eq!(
        json["scenarios"].as_array().map(Vec::len),
        Some(results.len())
    );
    let svg = std::fs::read_to_string(&written.svg).expect("svg");
    assert!(svg.starts_with("<svg") && svg.contains("rust-async"));
    let table = markdown::render(&probes, &results);
    assert!(table.contains("| embedded | SET | 16B | 1 |") && table.contains("c-async: "));
}
