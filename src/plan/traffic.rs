//! The traffic mix of a plan: the models or LoRA adapters each request is sent to (`--lora-modules`,
//! `--lora-assignment`), the endpoints (`--url-strategy` with a repeated `--url`), the request id header
//! and the dry run. Checked once here; the runner and the engine read only these typed values.

use std::path::PathBuf;
use std::sync::Arc;

use super::*;

/// How `--lora-modules` are assigned to requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelAssignment {
    /// Uniformly at random (seeded).
    Random,
    /// In request order: request i gets model i mod n.
    RoundRobin,
    /// At random with the given weights (seeded).
    Weighted,
}

impl ModelAssignment {
    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            ModelAssignment::Random => "random",
            ModelAssignment::RoundRobin => "round-robin",
            ModelAssignment::Weighted => "weighted",
        }
    }
}

/// The models a run's requests are sent to (`--lora-modules`): each request's (conversation's, session's)
/// model is a pure function of the run's seed and its index, so it is the same in every shard, in a dry
/// run and in a rerun with the same seed.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelMix {
    /// The names, in the order given.
    pub models: Vec<Arc<str>>,
    /// Their weights, normalised to sum 1 (equal when none was given).
    pub weights: Vec<f64>,
    /// How requests are assigned.
    pub assignment: ModelAssignment,
    /// Cumulative weights (the last is 1).
    cumulative: Vec<f64>,
}

/// SplitMix64's finaliser: a well-mixed 64-bit value of `x`.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl ModelMix {
    /// A mix of `models` (name, weight) assigned by `assignment`; weights are normalised.
    pub fn new(models: Vec<(String, f64)>, assignment: ModelAssignment) -> ModelMix {
        let total: f64 = models.iter().map(|(_, w)| w).sum();
        let weights: Vec<f64> = models.iter().map(|(_, w)| w / total).collect();
        let mut acc = 0.0;
        let mut cumulative: Vec<f64> = weights
            .iter()
            .map(|w| {
                acc += w;
                acc
            })
            .collect();
        if let Some(last) = cumulative.last_mut() {
            *last = 1.0;
        }
        ModelMix {
            models: models.into_iter().map(|(n, _)| Arc::from(n)).collect(),
            weights,
            assignment,
            cumulative,
        }
    }

    /// The position of the model of request (or conversation, session) `index` in a run seeded `seed`.
    pub fn pick_index(&self, seed: u64, index: u64) -> usize {
        let n = self.models.len();
        let draw = || splitmix64(splitmix64(seed ^ 0x4C4F_5241_4D49_5821) ^ index);
        match self.assignment {
            ModelAssignment::RoundRobin => (index % n as u64) as usize,
            ModelAssignment::Random => ((u128::from(draw()) * n as u128) >> 64) as usize,
            ModelAssignment::Weighted => {
                let u = (draw() >> 11) as f64 / (1u64 << 53) as f64;
                self.cumulative.iter().position(|&c| u < c).unwrap_or(n - 1)
            }
        }
    }

    /// The model of request (or conversation, session) `index` in a run seeded `seed`.
    pub fn pick(&self, seed: u64, index: u64) -> &Arc<str> {
        &self.models[self.pick_index(seed, index)]
    }
}

/// How each request's endpoint is chosen among several (`--url-strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlStrategy {
    /// In turn, in the order requests are sent.
    RoundRobin,
    /// Uniformly at random.
    Random,
    /// The endpoint with the fewest requests in flight (ties in turn); an endpoint whose connection just
    /// failed is left out for a short while.
    LeastInflight,
}

impl UrlStrategy {
    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            UrlStrategy::RoundRobin => "round-robin",
            UrlStrategy::Random => "random",
            UrlStrategy::LeastInflight => "least-inflight",
        }
    }
}

/// Several endpoints (`--url-strategy` with a repeated `--url`).
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoints {
    /// Every endpoint after the URL rules, in the order given (the first is [`RunPlan::url`]).
    pub urls: Vec<Url>,
    /// How a request's endpoint is chosen.
    pub strategy: UrlStrategy,
}

/// `--dry-run [N]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryRun {
    /// Bodies built per run.
    pub bodies: u64,
    /// `--dry-run-file`: where the bodies go (stdout without it).
    pub file: Option<PathBuf>,
}

/// The plan's traffic mix.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrafficPlan {
    /// `--lora-modules`: each request's model.
    pub models: Option<Arc<ModelMix>>,
    /// `--url-strategy`: every endpoint and the strategy.
    pub endpoints: Option<Endpoints>,
    /// The header carrying each request's id (`None` with `--no-request-id`).
    pub request_id_header: Option<String>,
    /// `--dry-run`.
    pub dry_run: Option<DryRun>,
    /// `--mock-request-log`.
    pub mock_request_log: Option<PathBuf>,
    /// Warnings to log when the run starts (the plan has no log yet).
    pub warnings: Vec<String>,
}

pub use crate::sim::DEFAULT_REQUEST_ID_HEADER;

/// Headers llmperf writes itself (or that frame the request): not a request id header.
const RESERVED_HEADERS: [&str; 6] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "authorization",
];

/// `NAME` or `NAME=WEIGHT` (weight a number > 0).
fn lora_module(item: &str) -> Result<(String, Option<f64>), UsageError> {
    let item = item.trim();
    let (name, weight) = match item.rsplit_once('=') {
        Some((name, w)) => {
            let weight = match w.trim().parse::<f64>() {
                Ok(v) if v > 0.0 && v.is_finite() => v,
                _ => {
                    return usage(format!(
                        "--lora-modules {item:?}: the weight after `=` must be a number > 0 (NAME or NAME=WEIGHT; adapter paths are the server's own --lora-modules)"
                    ))
                }
            };
            (name.trim(), Some(weight))
        }
        None => (item, None),
    };
    if name.is_empty() {
        return usage(format!(
            "--lora-modules {item:?}: the model name is empty (NAME or NAME=WEIGHT)"
        ));
    }
    Ok((name.to_string(), weight))
}

/// `--lora-modules` and `--lora-assignment`.
fn model_mix(cli: &Cli) -> Result<Option<Arc<ModelMix>>, UsageError> {
    let t = &cli.traffic;
    if t.lora_modules.is_empty() {
        if t.lora_assignment.is_some() {
            return usage("--lora-assignment assigns the models of --lora-modules: add --lora-modules, or drop it");
        }
        return Ok(None);
    }
    let mut models: Vec<(String, f64)> = Vec::new();
    let mut weighted = false;
    for item in &t.lora_modules {
        let (name, weight) = lora_module(item)?;
        if models.iter().any(|(n, _)| *n == name) {
            return usage(format!("--lora-modules: {name:?} is listed twice"));
        }
        weighted |= weight.is_some();
        models.push((name, weight.unwrap_or(1.0)));
    }
    let assignment = match t.lora_assignment.as_deref() {
        None if weighted => ModelAssignment::Weighted,
        None | Some("random") => ModelAssignment::Random,
        Some("round-robin") => ModelAssignment::RoundRobin,
        Some(_) => ModelAssignment::Weighted,
    };
    if weighted && assignment != ModelAssignment::Weighted {
        return usage(format!(
            "--lora-assignment {} ignores the weights of --lora-modules: drop the =WEIGHT parts, or use --lora-assignment weighted",
            assignment.name()
        ));
    }
    if matches!(cli.api, ApiName::Local | ApiName::LocalVllm) {
        return usage("--lora-modules: --api local / local_vllm start a server with one model; point --url at a server that serves the adapters instead");
    }
    let trace_override = cli
        .dataset_args
        .as_ref()
        .is_some_and(|a| a.contains_key("model_override"));
    if trace_override {
        return usage(
            "--lora-modules sets every body's model: drop model_override from --dataset-args",
        );
    }
    Ok(Some(Arc::new(ModelMix::new(models, assignment))))
}

/// The endpoint kind of a URL: the API path suffix it ends with.
fn endpoint_kind(url: &Url) -> &'static str {
    let path = url.path().trim_end_matches('/');
    ENDPOINT_SUFFIXES
        .iter()
        .find(|s| path.ends_with(*s))
        .copied()
        .unwrap_or("")
}

/// The `--url` a plan without `--url-strategy` uses: the last one (argparse); with it, the first.
pub(super) fn primary_url(cli: &Cli) -> &str {
    match cli.traffic.url_strategy {
        Some(_) => cli.urls.first().map_or("", String::as_str),
        None => cli.url(),
    }
}

/// `--url-strategy`: every `--url` through the same rules as the first (`first`, already final), checked
/// to be the same kind of endpoint.
fn endpoints(
    cli: &Cli,
    api: ApiKind,
    first: &Url,
    rewrite: &dyn Fn(&mut Url),
    warnings: &mut Vec<String>,
) -> Result<Option<Endpoints>, UsageError> {
    let Some(strategy) = cli.traffic.url_strategy.as_deref() else {
        return Ok(None);
    };
    let strategy = match strategy {
        "round-robin" => UrlStrategy::RoundRobin,
        "random" => UrlStrategy::Random,
        _ => UrlStrategy::LeastInflight,
    };
    if matches!(cli.api, ApiName::Local | ApiName::LocalVllm) {
        return usage("--url-strategy: --api local / local_vllm start one server at its own URL; drop --url-strategy");
    }
    if api == ApiKind::Mock {
        return usage("--url-strategy: --api mock sends to its own simulator; start simulators with `llmperf serve-mock` and give each URL with --url --api openai");
    }
    let mut urls = vec![first.clone()];
    for raw in cli.urls.iter().skip(1) {
        let (mut url, appended) = complete_url_for(raw, api.endpoint_suffix())?;
        if api == ApiKind::Responses {
            responses_url(&mut url, cli)?;
        }
        rewrite(&mut url);
        if appended {
            warnings.push(format!("--url {raw} names no endpoint: using {url}"));
        }
        if endpoint_kind(&url) != endpoint_kind(first) {
            return usage(format!(
                "--url-strategy: every --url must name the same kind of endpoint ({first} and {url} differ)"
            ));
        }
        urls.push(url);
    }
    Ok(Some(Endpoints { urls, strategy }))
}

/// The request id header, `None` with `--no-request-id` (or when `--headers` sends a fixed one).
fn request_id_header(
    cli: &Cli,
    headers: &[(String, String)],
    warnings: &mut Vec<String>,
) -> Result<Option<String>, UsageError> {
    let t = &cli.traffic;
    if t.no_request_id {
        if t.request_id_header.is_some() {
            return usage("--request-id-header names the id header that --no-request-id turns off: drop one of them");
        }
        return Ok(None);
    }
    let name = t
        .request_id_header
        .clone()
        .unwrap_or_else(|| DEFAULT_REQUEST_ID_HEADER.to_string());
    if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err()
        || RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str())
    {
        return usage(format!(
            "--request-id-header {name:?}: not a header name llmperf can send ids in (letters, digits and -_.!#$%&'*+^`|~; not Host, Content-*, Transfer-Encoding, Connection or Authorization)"
        ));
    }
    if let Some(session) = &cli.turns.session_header {
        if session.eq_ignore_ascii_case(&name) {
            return usage(format!(
                "--session-header {session}: the request id header has that name too: choose another name for one of them (--request-id-header NAME)"
            ));
        }
    }
    if headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(&name)) {
        if t.request_id_header.is_some() {
            return usage(format!(
                "--headers sets {name} and --request-id-header sends an id in it: drop one of them"
            ));
        }
        warnings.push(format!(
            "--headers sets {name}: that value is sent with every request and llmperf sends no request ids of its own (--request-id-header NAME sends them under another name)"
        ));
        return Ok(None);
    }
    Ok(Some(name))
}

/// `--dry-run`, `--dry-run-file`.
fn dry_run(cli: &Cli) -> Result<Option<DryRun>, UsageError> {
    let t = &cli.traffic;
    let Some(bodies) = t.dry_run else {
        if t.dry_run_file.is_some() {
            return usage(
                "--dry-run-file is where --dry-run writes its bodies: add --dry-run, or drop it",
            );
        }
        return Ok(None);
    };
    if cli.scenario.scenario.is_some() {
        return usage("--dry-run: --scenario agentx builds its sessions' bodies while it replays them; there is nothing to show before");
    }
    if cli.sla.sla_auto_tune {
        return usage("--dry-run: --sla-auto-tune decides its runs while it searches; dry-run one of its loads instead (--parallel N)");
    }
    Ok(Some(DryRun {
        bodies,
        file: t.dry_run_file.clone(),
    }))
}

/// The traffic mix of `cli`, given the final first endpoint `url`, the headers and how the prompt
/// settings rewrite an endpoint (`rewrite`, e.g. `--tokenize-prompt`'s `…/completions`).
pub(super) fn traffic_plan(
    cli: &Cli,
    api: ApiKind,
    url: &Url,
    headers: &[(String, String)],
    rewrite: &dyn Fn(&mut Url),
) -> Result<TrafficPlan, UsageError> {
    let mut warnings = Vec::new();
    let endpoints = endpoints(cli, api, url, rewrite, &mut warnings)?;
    let request_id_header = request_id_header(cli, headers, &mut warnings)?;
    let mock_request_log = cli.traffic.mock_request_log.clone();
    if mock_request_log.is_some() && api != ApiKind::Mock {
        return usage("--mock-request-log is the built-in simulator's request log: add --api mock, or drop it");
    }
    Ok(TrafficPlan {
        models: model_mix(cli)?,
        endpoints,
        request_id_header,
        dry_run: dry_run(cli)?,
        mock_request_log,
        warnings,
    })
}

impl TrafficPlan {
    /// Every endpoint of the run: the plan's `url` alone, or each `--url` with `--url-strategy`.
    pub fn urls(&self, url: &Url) -> Vec<Url> {
        match &self.endpoints {
            Some(e) => e.urls.clone(),
            None => vec![url.clone()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(spec: &[(&str, f64)], how: ModelAssignment) -> ModelMix {
        ModelMix::new(spec.iter().map(|(n, w)| (n.to_string(), *w)).collect(), how)
    }

    #[test]
    fn round_robin_is_exact_and_weighted_draws_follow_the_weights() {
        let rr = mix(
            &[("a", 1.0), ("b", 1.0), ("c", 1.0)],
            ModelAssignment::RoundRobin,
        );
        let picks: Vec<usize> = (0..7).map(|i| rr.pick_index(9, i)).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2, 0]);
        let w = mix(
            &[("a", 5.0), ("b", 3.0), ("c", 2.0)],
            ModelAssignment::Weighted,
        );
        assert_eq!(w.weights, [0.5, 0.3, 0.2]);
        let n = 100_000u64;
        let mut counts = [0u64; 3];
        for i in 0..n {
            counts[w.pick_index(42, i)] += 1;
        }
        for (c, p) in counts.iter().zip([0.5, 0.3, 0.2]) {
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (*c as f64 - n as f64 * p).abs() < 5.0 * sd,
                "{counts:?} against {p}"
            );
        }
        // A pure function of (seed, index): the same again, and different under another seed.
        let again: Vec<usize> = (0..50).map(|i| w.pick_index(42, i)).collect();
        assert_eq!(
            again,
            (0..50).map(|i| w.pick_index(42, i)).collect::<Vec<_>>()
        );
        assert_ne!(
            again,
            (0..50).map(|i| w.pick_index(43, i)).collect::<Vec<_>>()
        );
        let r = mix(&[("a", 1.0), ("b", 1.0)], ModelAssignment::Random);
        let ones = (0..10_000).filter(|&i| r.pick_index(1, i) == 1).count();
        assert!((4_500..5_500).contains(&ones), "{ones}");
    }

    #[test]
    fn lora_module_items() {
        assert_eq!(lora_module("a").unwrap(), ("a".into(), None));
        assert_eq!(lora_module(" a = 0.5 ").unwrap(), ("a".into(), Some(0.5)));
        assert_eq!(
            lora_module("org/m=v2=3").unwrap(),
            ("org/m=v2".into(), Some(3.0))
        );
        for bad in ["a=0", "a=-1", "a=/path/to/adapter", "=2", "a=nan"] {
            let e = lora_module(bad).unwrap_err().0;
            assert!(e.contains("--lora-modules"), "{bad}: {e}");
        }
    }
}
