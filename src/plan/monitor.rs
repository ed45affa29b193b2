//! The plan of watching a run and of other tools' result formats: `--ui`, `--metrics-listen`,
//! `--metrics-linger-s`, `--save-format`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use super::{usage, UsageError};
use crate::cli::monitor::MonitorArgs;
pub use crate::cli::monitor::{SaveFormat, UiKind};

/// What these flags decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MonitorPlan {
    /// `--ui`.
    pub ui: UiKind,
    /// `--metrics-listen`: the address llmperf's own metrics are served on, `None` when off.
    pub metrics_listen: Option<SocketAddr>,
    /// `--metrics-linger-s`: how long the endpoint stays up after the last run.
    pub metrics_linger: Duration,
    /// `--save-format vllm-bench`: write `vllm bench serve`'s result file when each run ends.
    pub save_vllm_bench: bool,
}

/// Validates the flags (`api`: vLLM's result format describes generation runs only).
pub fn monitor_plan(args: &MonitorArgs, api: super::ApiKind) -> Result<MonitorPlan, UsageError> {
    if args.save_format == Some(SaveFormat::VllmBench) && api.input_only() {
        return usage(
            "--save-format vllm-bench: vLLM's result format describes text generation runs, not embedding or rerank ones",
        );
    }
    let metrics_listen = match &args.metrics_listen {
        Some(text) => Some(listen_addr(text)?),
        None => None,
    };
    let metrics_linger = match args.metrics_linger_s {
        None => Duration::ZERO,
        Some(_) if metrics_listen.is_none() => {
            return usage("--metrics-linger-s applies only with --metrics-listen")
        }
        Some(s) if !(s.is_finite() && (0.0..=86_400.0).contains(&s)) => {
            return usage(format!(
                "--metrics-linger-s {s}: must be a number of seconds from 0 to 86400"
            ))
        }
        Some(s) => Duration::from_secs_f64(s),
    };
    Ok(MonitorPlan {
        ui: args.ui,
        metrics_listen,
        metrics_linger,
        save_vllm_bench: args.save_format == Some(SaveFormat::VllmBench),
    })
}

/// `PORT` (on the loopback interface) or `HOST:PORT`.
fn listen_addr(text: &str) -> Result<SocketAddr, UsageError> {
    let bad = |why: &str| {
        UsageError(format!(
            "--metrics-listen {text}: {why} (give PORT for 127.0.0.1:PORT, or HOST:PORT)"
        ))
    };
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        let port: u16 = t.parse().map_err(|_| bad("not a port number"))?;
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    let mut addrs = t
        .to_socket_addrs()
        .map_err(|e| bad(&format!("not an address ({e})")))?;
    addrs.next().ok_or_else(|| bad("names no address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(listen: Option<&str>, linger: Option<f64>) -> Result<MonitorPlan, UsageError> {
        monitor_plan(
            &MonitorArgs {
                metrics_listen: listen.map(str::to_string),
                metrics_linger_s: linger,
                ..MonitorArgs::default()
            },
            super::super::ApiKind::OpenAi,
        )
    }

    #[test]
    fn a_port_alone_listens_on_loopback_and_an_address_where_given() {
        let p = plan(Some("9400"), Some(2.5)).unwrap();
        assert_eq!(p.metrics_listen, Some("127.0.0.1:9400".parse().unwrap()));
        assert_eq!(p.metrics_linger, Duration::from_millis(2500));
        let p = plan(Some("0.0.0.0:9401"), None).unwrap();
        assert_eq!(p.metrics_listen, Some("0.0.0.0:9401".parse().unwrap()));
        let p = plan(Some("[::1]:9402"), None).unwrap();
        assert_eq!(p.metrics_listen, Some("[::1]:9402".parse().unwrap()));
        assert_eq!(plan(None, None).unwrap(), MonitorPlan::default());
    }

    #[test]
    fn bad_values_name_their_flag() {
        for (listen, linger, needle) in [
            (Some("99999"), None, "--metrics-listen 99999"),
            (Some("nowhere"), None, "--metrics-listen nowhere"),
            (
                None,
                Some(3.0),
                "--metrics-linger-s applies only with --metrics-listen",
            ),
            (Some("9400"), Some(-1.0), "--metrics-linger-s -1"),
            (Some("9400"), Some(f64::NAN), "--metrics-linger-s NaN"),
        ] {
            let err = plan(listen, linger).unwrap_err().0;
            assert!(err.contains(needle), "{err}");
        }
    }
}
