//! evalscope's `test_async_lifecycle.py` (PR #1507), the parts with an observable outcome: benchmarks run
//! one after the other and two at the same time (two processes here) against one server each send their
//! own requests and finish (2 × 2 + 2 × 2 requests), and an existing result database is never reused
//! (`errors::an_existing_database_is_never_overwritten`).

use crate::common::*;

#[test]
fn runs_one_after_the_other_and_at_the_same_time_each_finish() {
    let sim = fast_sim();
    let make = || {
        Run::at(&sim, "/v1/chat/completions")
            .flags("--prompt hello --no-stream --no-test-connection --number 2 --parallel 2")
    };
    for _ in 0..2 {
        let rows = make().ok_dir("parallel_2_number_2").rows();
        assert!(rows.len() == 2 && rows.iter().all(|r| r.success));
    }
    let (a, b) = (make(), make());
    let (mut pa, mut pb) = (a.command().spawn().unwrap(), b.command().spawn().unwrap());
    assert!(pa.wait().unwrap().success() && pb.wait().unwrap().success());
    for run in [a, b] {
        let rows = run.run_dir("parallel_2_number_2").rows();
        assert!(rows.len() == 2 && rows.iter().all(|r| r.success));
    }
    assert_eq!(sim.requests().len(), 8);
}
