//! The fuzzer in `cargo test` (issue 47): a fixed number of cases of each target — the policy
//! repository, kubeconfigs, Lua customizations — through the real entry points; none may
//! panic, hang (each case is bounded) or put a credential in an error message. The soak runs
//! many more (`fedsched fuzz --cases 1000000 …`, BENCHMARKS.md); a case it finds failing
//! becomes a regression test here or next to the code it broke.

use std::time::Duration;

use fedsched::testbed::fuzz::{self, Options, Target};

fn run(targets: Vec<Target>, seed: u64, cases: u64) -> fuzz::Report {
    run_from(targets, seed, 0, cases)
}

fn run_from(targets: Vec<Target>, seed: u64, first: u64, cases: u64) -> fuzz::Report {
    let work = tempfile::tempdir().expect("temp dir");
    let o = Options {
        targets,
        seed,
        first,
        cases,
        bound: Duration::from_secs(60),
        jobs: 2,
        work: work.path().to_path_buf(),
        corpus: Vec::new(),
    };
    fuzz::run(&o, &|_, _| {})
}

#[test]
fn a_fixed_number_of_fuzz_cases_of_every_target_neither_panic_nor_hang() {
    let report = run(Target::ALL.to_vec(), 47, 72);
    let failed: Vec<String> = report.failures.iter().chain(&report.hung).map(ToString::to_string).collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert_eq!(report.ran, 72);
}

/// A case is a function of (seed, case): the repro line runs exactly the failing input.
#[test]
fn a_case_is_the_same_input_on_every_run() {
    let corpus = fuzz::repo::Corpus::new(&[]);
    for target in Target::ALL {
        for case in [0, 7, 123] {
            let a = fuzz::show(&fuzz::generate(target, 9, case, &corpus));
            let b = fuzz::show(&fuzz::generate(target, 9, case, &corpus));
            assert_eq!(a, b, "{} case {case}", target.name());
        }
        let a = fuzz::show(&fuzz::generate(target, 9, 1, &corpus));
        let b = fuzz::show(&fuzz::generate(target, 9, 2, &corpus));
        assert_ne!(a, b, "{}: two cases, one input", target.name());
    }
}

/// Cases the release soak found panicking inside kube's client (seed 2 of 150,000 cases): a
/// kubeconfig that starts with a UTF-16 byte-order mark and has an odd number of bytes (case
/// 1228), and a server URL without a scheme, `"127.0.0.1:1"` (case 110545). Each is now an
/// error for its member.
#[test]
fn the_kubeconfig_cases_the_soak_found_panicking_are_errors_now() {
    for case in [1228, 110545] {
        let report = run_from(vec![Target::Kubeconfig], 2, case, 1);
        let failed: Vec<String> = report.failures.iter().chain(&report.hung).map(ToString::to_string).collect();
        assert!(failed.is_empty(), "case {case}: {}", failed.join("\n"));
        assert_eq!(report.ran, 1);
    }
}
