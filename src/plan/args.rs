//! The run's arguments file: every evalscope `Arguments` field in declaration order (spec §5.4), with this
//! run's values, secrets masked; llmperf's own settings follow after evalscope's keys.

use serde_json::{json, Map, Value};

use super::{LoadMode, RunPlan, RunSpec};
use crate::secret::{is_secret_header, MASK};

/// The arguments object for one run; `url` is the endpoint actually used, `run_dir` the run's folder.
pub fn args_json(plan: &RunPlan, spec: &RunSpec, url: &str, run_dir: &str) -> Map<String, Value> {
    let mut m = Map::new();
    endpoint_and_load(&mut m, plan, spec, url);
    output_and_prompts(&mut m, plan, spec, run_dir);
    generation(&mut m, plan);
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    // llmperf's own settings, after every evalscope key.
    put("llmperf_version", json!(env!("CARGO_PKG_VERSION")));
    if let Some(mock) = &plan.mock {
        put("mock_ttft_ms", json!(mock.ttft.as_secs_f64() * 1000.0));
        put("mock_itl_ms", json!(mock.itl.as_secs_f64() * 1000.0));
        put("mock_output_tokens", json!(mock.output_tokens));
        put("mock_threads", json!(mock.threads));
        if mock.invalid_output_rate > 0.0 {
            put("mock_invalid_output_rate", json!(mock.invalid_output_rate));
        }
        if mock.max_connections > 0 {
            put("mock_max_connections", json!(mock.max_connections));
        }
        if let Some(on) = plan.server_side.mock_prefix_cache {
            put("mock_prefix_cache", json!(if on { "on" } else { "off" }));
        }
    }
    crate::server_control::outcome::args_keys(&plan.server_control, &mut put);
    // vLLM's result format names it (`--burstiness`); written only when not Poisson.
    let burstiness = plan.server_side.arrival.burstiness;
    if burstiness != 1.0 && spec.load.schedule_rate().is_some() {
        put("burstiness", json!(burstiness));
    }
    // `--ramp-up`, for the load verdict of a merged run; written only when set.
    if let Some(d) = plan.server_side.arrival.ramp_up_s.filter(|d| *d > 0.0) {
        put("ramp_up", json!(d));
    }
    m
}

/// evalscope's endpoint and load keys, `model` to `sla_number_multiplier`.
fn endpoint_and_load(m: &mut Map<String, Value>, plan: &RunPlan, spec: &RunSpec, url: &str) {
    let headers: Map<String, Value> = plan
        .headers
        .iter()
        .map(|(k, v)| {
            let v = if is_secret_header(k) {
                MASK
            } else {
                v.as_str()
            };
            (k.clone(), json!(v))
        })
        .collect();
    let typed = &plan.as_typed;
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    // null for a replayed trace run without --model (its bodies name their models).
    put(
        "model",
        json!((!plan.model.is_empty()).then_some(&plan.model)),
    );
    put("model_id", json!(plan.model_id));
    put(
        "attn_implementation",
        json!(plan
            .local
            .as_ref()
            .and_then(|l| l.attn_implementation.clone())),
    );
    put("api", json!(plan.api_name.as_str()));
    put("tokenizer_path", json!(plan.tokens.tokenizer_path));
    put("port", json!(plan.port));
    put("url", json!(url));
    put("headers", Value::Object(headers));
    put("connect_timeout", json!(typed.connect_timeout_s));
    put("read_timeout", json!(typed.read_timeout_s));
    put("total_timeout", json!(typed.total_timeout_s));
    put(
        "api_key",
        if plan.api_key_given {
            json!(MASK)
        } else {
            Value::Null
        },
    );
    put("no_test_connection", json!(!plan.test_connection));
    put(
        "scenario",
        plan.workload
            .agentx()
            .map_or(Value::Null, |a| a.scenario.to_json()),
    );
    put("number", json!(spec.number));
    put("parallel", json!(spec.load.parallel_as_written()));
    // An SLA probe sets the rate as evalscope does: an integer (-1 when searching parallel).
    let sla = plan.sla.as_ref();
    put(
        "rate",
        match sla {
            Some(_) => json!(spec.load.rate_as_written() as i64),
            None => json!(spec.load.rate_as_written()),
        },
    );
    // argparse keeps the default as the int 0; a typed value is a float.
    put(
        "warmup_num",
        typed.warmup_num.map_or(json!(0), |w| json!(w)),
    );
    put("enable_pd_metrics", json!(plan.pd_metrics));
    put("open_loop", json!(plan.mode == LoadMode::Open));
    put("sleep_interval", json!(plan.sleep_interval.as_secs()));
    put("duration", json!(typed.duration_s));
    put("sla_auto_tune", json!(sla.is_some()));
    put(
        "sla_variable",
        json!(sla.map_or("parallel", |s| s.variable.name())),
    );
    put(
        "sla_params",
        sla.map_or(Value::Null, |s| s.params_json.clone()),
    );
    put("sla_num_runs", json!(sla.map_or(3, |s| s.num_runs)));
    put("sla_upper_bound", json!(sla.map_or(65536, |s| s.upper)));
    put("sla_lower_bound", json!(sla.map_or(1, |s| s.lower)));
    put(
        "sla_fixed_parallel",
        json!(sla.and_then(|s| s.fixed_parallel_given)),
    );
    put(
        "sla_number_multiplier",
        json!(sla.and_then(|s| s.multiplier_given)),
    );
}

/// evalscope's output, tracker and prompt keys, `db_commit_interval` to `dataset_args`.
fn output_and_prompts(m: &mut Map<String, Value>, plan: &RunPlan, spec: &RunSpec, run_dir: &str) {
    let typed = &plan.as_typed;
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put("db_commit_interval", json!(plan.db_commit_interval));
    put(
        "queue_size_multiplier",
        json!(plan.tuning.queue_size_multiplier),
    );
    put(
        "in_flight_task_multiplier",
        json!(plan.tuning.in_flight_task_multiplier),
    );
    put("num_workers", json!(plan.tuning.num_workers));
    put("log_every_n_query", json!(plan.log_every_n));
    put("debug", json!(plan.debug));
    put("enable_progress_tracker", json!(plan.progress_tracker));
    let vis = plan.visualizer.as_ref();
    let masked = |key: Option<&String>| key.map_or(Value::Null, |_| json!(MASK));
    put("visualizer", json!(vis.map(|v| v.kind.name())));
    put(
        "wandb_api_key",
        masked(vis.and_then(|v| v.wandb_api_key.as_ref())),
    );
    put(
        "swanlab_api_key",
        masked(vis.and_then(|v| v.swanlab_api_key.as_ref())),
    );
    put(
        "swanlab_host",
        json!(vis.and_then(|v| v.swanlab_host.as_ref())),
    );
    put("name", json!(plan.name));
    put("alias", json!(plan.alias));
    put("outputs_dir", json!(run_dir));
    put("no_timestamp", json!(plan.no_timestamp));
    put("max_prompt_length", json!(plan.prompt_length.1));
    put("min_prompt_length", json!(plan.prompt_length.0));
    put("prefix_length", json!(plan.tokens.prefix_length));
    put("prefix_count", json!(plan.tokens.prefix_count));
    put("prompt", json!(typed.prompt));
    put("query_template", json!(typed.query_template));
    put("apply_chat_template", json!(plan.apply_chat_template));
    put("image_width", json!(plan.image.width));
    put("image_height", json!(plan.image.height));
    put("image_format", json!(plan.image.format_name()));
    put("image_num", json!(plan.image.num));
    put("image_patch_size", json!(plan.image.patch_size));
    put("dataset", json!(plan.dataset_name()));
    put("dataset_path", json!(typed.dataset_path));
    put(
        "data_source",
        match (&typed.data_source, plan.workload.agentx()) {
            (Some(_), _) | (None, None) => json!(typed.data_source),
            (None, Some(a)) => json!(a.provenance.source),
        },
    );
    put("dataset_offset", json!(spec.dataset_offset));
    put("dataset_args", json!(typed.dataset_args));
}

/// evalscope's generation keys, `frequency_penalty` to `multi_turn_args`.
fn generation(m: &mut Map<String, Value>, plan: &RunPlan) {
    let params = &plan.params;
    let max_tokens = match params.max_tokens {
        (a, b) if a == b => json!(a),
        (a, b) => json!([a, b]),
    };
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put("frequency_penalty", json!(params.frequency_penalty));
    put("repetition_penalty", json!(params.repetition_penalty));
    put(
        "logprobs",
        if params.logprobs {
            json!(true)
        } else {
            Value::Null
        },
    );
    put("max_tokens", max_tokens);
    put("min_tokens", json!(params.min_tokens));
    put("n_choices", json!(params.n_choices));
    put("seed", json!(params.seed));
    put("stop", json!(params.stop));
    put("stop_token_ids", json!(params.stop_token_ids));
    put("stream", json!(plan.params.stream));
    put("temperature", json!(params.temperature));
    put("top_p", json!(params.top_p));
    put("top_k", json!(params.top_k));
    put("extra_args", Value::Object(params.extra_args.clone()));
    put("tokenize_prompt", json!(plan.tokens.tokenize_prompt));
    let turns = plan.workload.multi_turn();
    put("multi_turn", json!(turns.is_some()));
    put("min_turns", json!(turns.map_or(1, |t| t.min_turns)));
    put("max_turns", json!(turns.and_then(|t| t.max_turns)));
    put(
        "multi_turn_args",
        turns
            .and_then(|t| t.legacy_args.clone())
            .map_or(Value::Null, Value::Object),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn golden_keys() -> Option<Vec<String>> {
        let dir =
            crate::test_support::shared_dir().join("reference/evalscope-golden/a_seed/outputs");
        let stamp = std::fs::read_dir(&dir).ok()?.next()?.ok()?.path();
        let text =
            std::fs::read_to_string(stamp.join("test1/parallel_1_number_20/benchmark_args.json"))
                .ok()?;
        let v: Map<String, Value> = serde_json::from_str(&text).ok()?;
        Some(v.keys().cloned().collect())
    }

    #[test]
    fn keys_follow_evalscope_then_extras_and_secrets_are_masked() {
        let cli = Cli::try_parse_from([
            "llmperf",
            "--model",
            "m",
            "--prompt",
            "p",
            "--api-key",
            "sk-secret",
            "--headers",
            "X-Api-Key=k2",
            "X-Team=t",
            "--max-tokens",
            "3",
            "9",
        ])
        .unwrap();
        let plan = RunPlan::from_cli(cli, chrono::Local::now()).unwrap();
        let m = args_json(&plan, &plan.runs[0], plan.url.as_str(), "out/run");
        let text = crate::pyjson::dumps_indent4(&m);
        assert!(
            !text.contains("sk-secret") && !text.contains("k2"),
            "{text}"
        );
        assert_eq!(m["headers"]["X-Team"], json!("t"));
        assert_eq!(m["api_key"], json!(MASK));
        assert_eq!(m["max_tokens"], json!([3, 9]));
        assert_eq!(m["rate"], json!(-1.0));
        let keys: Vec<String> = m.keys().cloned().collect();
        let golden = golden_keys().expect("golden benchmark_args.json under ../shared");
        assert_eq!(&keys[..golden.len()], &golden[..]);
        assert_eq!(keys[golden.len()], "llmperf_version");
    }

    /// evalscope's `test_arguments_secrets.py`: the API key, the Authorization header it becomes and the
    /// tracker keys are masked in `benchmark_args.json` (the request itself carries the raw key:
    /// `tests/cli/secrets.rs`).
    #[test]
    fn api_key_authorization_and_tracker_keys_are_masked() {
        for (tracker, flag) in [
            ("wandb", "--wandb-api-key"),
            ("swanlab", "--swanlab-api-key"),
        ] {
            let cli = Cli::try_parse_from([
                "llmperf",
                "--model",
                "m",
                "--prompt",
                "p",
                "--api-key",
                "secret-token",
                "--visualizer",
                tracker,
                flag,
                "tracker-token",
            ])
            .unwrap();
            let plan = RunPlan::from_cli(cli, chrono::Local::now()).unwrap();
            let m = args_json(&plan, &plan.runs[0], plan.url.as_str(), "out/run");
            assert_eq!(m["api_key"], json!(MASK));
            assert_eq!(m["headers"]["Authorization"], json!(MASK));
            assert_eq!(m[&format!("{tracker}_api_key")], json!(MASK));
            let text = crate::pyjson::dumps_indent4(&m);
            assert!(!text.contains("secret-token") && !text.contains("tracker-token"));
            assert!(!format!("{plan:?}").contains("secret-token"));
        }
    }

    /// evalscope's command line of a golden case, as argv: `{"a": 1}` split by spaces is joined again.
    fn golden_argv(command: &str) -> Vec<String> {
        let mut argv = vec!["llmperf".to_string()];
        let mut words = command.split_whitespace().skip(2);
        while let Some(word) = words.next() {
            let mut word = word.to_string();
            while word.starts_with('{') && word.matches('{').count() > word.matches('}').count() {
                word.push(' ');
                word.push_str(words.next().expect("a closed JSON object"));
            }
            argv.push(word);
        }
        argv
    }

    /// Every golden case's `benchmark_args.json` is what llmperf writes for the same command line, byte for
    /// byte over evalscope's keys (llmperf's own keys follow them): the typed plan loses nothing.
    #[test]
    fn benchmark_args_match_every_golden_byte_for_byte() {
        let data = tempfile::NamedTempFile::new().unwrap();
        let mut checked = 0;
        for case in std::fs::read_dir(crate::test_support::golden_root()).unwrap() {
            let case = case.unwrap().path();
            let Ok(command) = std::fs::read_to_string(case.join("command.txt")) else {
                continue;
            };
            let mut argv = golden_argv(command.lines().next().unwrap());
            // The plan checks that the dataset file exists; the golden shows the path as typed.
            let typed_path = argv
                .iter()
                .position(|a| a == "--dataset-path")
                .map(|i| std::mem::replace(&mut argv[i + 1], data.path().display().to_string()));
            let cli = match Cli::try_parse_from(&argv) {
                Ok(cli) => cli,
                // g_errors repeats --max-tokens/--min-tokens (argparse: the last wins), which clap
                // refuses today; every other case must parse.
                Err(_) if case.ends_with("g_errors") => continue,
                Err(e) => panic!("{}: {e}", case.display()),
            };
            let mut plan = RunPlan::from_cli(cli, chrono::Local::now()).unwrap();
            if typed_path.is_some() {
                plan.as_typed.dataset_path = typed_path;
            }
            for spec in &plan.runs {
                let name = crate::run_folder::run_name(spec);
                let files: Vec<_> = find(&case.join("outputs"), &name);
                assert_eq!(files.len(), 1, "{}: {name}", case.display());
                let golden_text = std::fs::read_to_string(&files[0]).unwrap();
                let golden: Map<String, Value> = serde_json::from_str(&golden_text).unwrap();
                let ours = args_json(
                    &plan,
                    spec,
                    golden["url"].as_str().unwrap(),
                    golden["outputs_dir"].as_str().unwrap(),
                );
                let evalscope_keys: Map<String, Value> =
                    ours.into_iter().take(golden.len()).collect();
                assert_eq!(
                    crate::pyjson::dumps_indent4(&evalscope_keys),
                    golden_text.trim_end(),
                    "{}",
                    files[0].display()
                );
                checked += 1;
            }
        }
        assert!(checked >= 8, "only {checked} golden runs compared");
    }

    /// The `benchmark_args.json` files under `dir` whose run folder is `run`.
    fn find(dir: &std::path::Path, run: &str) -> Vec<std::path::PathBuf> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n == run) {
                    let file = path.join("benchmark_args.json");
                    if file.is_file() {
                        found.push(file);
                    }
                } else {
                    found.extend(find(&path, run));
                }
            }
        }
        found
    }
}
