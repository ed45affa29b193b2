//! Secrets: `--api-key` and Authorization-like headers reach the server but never any output file, log
//! line (also with `--debug`), database column or error message — on success and on every failure path.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::common::*;
use llmperf::sim::{Fault, FaultRule, SimConfig, SimServer};

const SECRETS: [&str; 5] = [
    "sk-LLMPERF-api-key-7f3a9c",
    "xk-LLMPERF-x-api-key-51b2",
    "pa-LLMPERF-proxy-auth-88e0",
    "tk-LLMPERF-auth-token-2d6c",
    "ak-LLMPERF-api-key-hdr-93f1",
];

fn assert_no_secret(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for s in SECRETS {
        assert!(!text.contains(s), "{what} holds the secret {s}");
        // Also not split by a masking that keeps a prefix or suffix.
        assert!(
            !text.contains(&s[..s.len() - 4]),
            "{what} holds most of {s}"
        );
    }
}

fn assert_output_clean(o: &Output, out: &Path) {
    assert_no_secret("stdout", &o.stdout);
    assert_no_secret("stderr", &o.stderr);
    let all = files_under(out);
    assert!(!all.is_empty());
    for f in &all {
        assert_no_secret(&f.display().to_string(), &std::fs::read(f).unwrap());
        if f.extension().is_some_and(|e| e == "db") {
            // Every column as text, in case a value is stored compressed or encoded.
            let conn = rusqlite::Connection::open(f).unwrap();
            let mut stmt = conn.prepare("SELECT * FROM result").unwrap();
            let n = stmt.column_count();
            let mut rows = stmt.query([]).unwrap();
            while let Some(row) = rows.next().unwrap() {
                for i in 0..n {
                    let v: rusqlite::types::Value = row.get(i).unwrap();
                    assert_no_secret(
                        &format!("{} column {i}", f.display()),
                        format!("{v:?}").as_bytes(),
                    );
                }
            }
        }
    }
}

/// A run against `sim`'s chat endpoint with `--debug`, `--api-key` and four secret headers.
fn secret_run(sim: &SimServer) -> Run {
    Run::at(sim, "/v1/chat/completions")
        .flags("--prompt x --number 12 --parallel 2 --max-tokens 3 --debug")
        .flag("--api-key", SECRETS[0])
        .args(&[
            "--headers",
            &format!("X-Api-Key={}", SECRETS[1]),
            &format!("Proxy-Authorization=Basic {}", SECRETS[2]),
            &format!("X-Auth-Token={}", SECRETS[3]),
            &format!("api-key={}", SECRETS[4]),
        ])
}

#[test]
fn secrets_reach_the_server_but_no_file_log_or_column() {
    // Failures too: HTTP errors, resets and malformed chunks write error texts and debug lines.
    let sim = SimServer::start(SimConfig {
        ttft: Duration::from_millis(1),
        itl: Duration::from_millis(1),
        faults: vec![
            FaultRule {
                fault: Fault::Http500,
                every: 3,
            },
            FaultRule {
                fault: Fault::Reset,
                every: 5,
            },
            FaultRule {
                fault: Fault::Malformed,
                every: 7,
            },
        ],
        ..SimConfig::default()
    })
    .unwrap();
    let run = secret_run(&sim);
    let o = run.output();
    ok(&o);
    // The secrets were sent.
    let captured = sim.requests();
    assert_eq!(captured.len(), 13, "the connection test and 12 requests");
    let headers = &captured[1].2;
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(
        get("authorization"),
        Some(format!("Bearer {}", SECRETS[0]).as_str())
    );
    assert_eq!(get("x-api-key"), Some(SECRETS[1]));
    assert_eq!(get("x-auth-token"), Some(SECRETS[3]));
    // And written nowhere.
    assert_output_clean(&o, run.out());
    let stderr = stderr(&o);
    assert!(stderr.contains("DEBUG"), "--debug was on");
    assert!(
        stderr.contains("**********"),
        "the secrets are shown masked"
    );
}

#[test]
fn failed_connection_test_and_bad_flags_do_not_echo_secrets() {
    let sim = SimServer::start(SimConfig {
        faults: vec![FaultRule {
            fault: Fault::Http400,
            every: 1,
        }],
        ..SimConfig::default()
    })
    .unwrap();
    let run = secret_run(&sim);
    let o = run.output();
    assert_eq!(o.status.code(), Some(1));
    assert_output_clean(&o, run.out());

    // Usage errors: a header typed with the wrong separator, a key that is not a valid header value.
    for (flag, value) in [
        ("--headers", format!("Authorization: Bearer {}", SECRETS[0])),
        ("--api-key", format!("{}\nx", SECRETS[0])),
        ("--headers", format!("X-Api-Key={}\nx", SECRETS[1])),
    ] {
        let o = Run::new()
            .flags("--model m --prompt x")
            .flag(flag, value)
            .output();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert_no_secret("usage error", &o.stderr);
        assert_no_secret("usage error stdout", &o.stdout);
    }
}
