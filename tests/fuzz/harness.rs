//! Runs a property for a number of cases or a time budget, and reports how many inputs it executed.

use std::cell::Cell;
use std::time::{Duration, Instant};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn env_num(name: &str) -> Option<f64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Stack for the fuzzing thread: nested strategies and values recurse deeply in debug builds.
const STACK_BYTES: usize = 256 << 20;

/// Checks `property` on inputs from the strategy `make` builds: `LLMPERF_FUZZ_SECONDS` seconds when set,
/// else `LLMPERF_FUZZ_CASES` cases (default 256). Panics with the shrunk failing input. Prints
/// `fuzz <name>: <n> executions in <t> s`. Runs on a thread with a large stack.
pub fn fuzz<S, M, P>(name: &str, make: M, property: P)
where
    S: Strategy,
    M: FnOnce() -> S + Send,
    P: Fn(S::Value) -> Result<(), TestCaseError> + Send,
{
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(format!("fuzz-{name}"))
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, || run(name, make(), property))
            .expect("spawn the fuzzing thread")
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    });
}

fn run<S: Strategy>(
    name: &str,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let budget = env_num("LLMPERF_FUZZ_SECONDS").map(Duration::from_secs_f64);
    let cases = env_num("LLMPERF_FUZZ_CASES").map_or(256, |c| c as u64);
    let executed = Cell::new(0u64);
    let t0 = Instant::now();
    loop {
        let batch = match budget {
            Some(_) => 2000,
            None => (cases - executed.get()).min(2000),
        };
        let config = Config {
            cases: batch as u32,
            failure_persistence: None,
            max_shrink_iters: 4096,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let result = runner.run(&strategy, |input| {
            executed.set(executed.get() + 1);
            property(input)
        });
        if let Err(e) = result {
            panic!("fuzz {name}: {e}");
        }
        let done = match budget {
            Some(b) => t0.elapsed() >= b,
            None => executed.get() >= cases,
        };
        if done {
            break;
        }
    }
    eprintln!(
        "fuzz {name}: {} executions in {:.1} s",
        executed.get(),
        t0.elapsed().as_secs_f64()
    );
}
