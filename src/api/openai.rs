//! OpenAI-compatible request bodies (`/v1/chat/completions`, `/v1/completions`), composed in evalscope's
//! key order (spec §2.1) and serialised once, as Python's `json.dumps(ensure_ascii=False)` writes them.

use std::sync::Arc;

use rand::Rng;
use serde_json::{json, Map, Value};

use crate::dataset::Item;
use crate::plan::{ApiKind, GenParams};
use crate::pyjson;

/// Builds request bodies for one invocation.
#[derive(Debug, Clone)]
pub struct BodyComposer {
    model: String,
    params: GenParams,
    template: Option<String>,
    api: ApiKind,
}

/// How a key is set: flags overwrite (plain bodies) or only fill gaps (dataset-provided bodies).
#[derive(Clone, Copy, PartialEq, Eq)]
enum SetMode {
    Overwrite,
    FillGaps,
}

fn put(body: &mut Map<String, Value>, mode: SetMode, key: &str, value: Value) {
    match mode {
        SetMode::Overwrite => {
            body.insert(key.to_string(), value);
        }
        SetMode::FillGaps => {
            body.entry(key.to_string()).or_insert(value);
        }
    }
}

/// Escapes `s` for use inside a JSON string literal (no surrounding quotes).
fn json_escape(s: &str) -> String {
    let quoted = serde_json::to_string(s).expect("strings always serialise");
    quoted[1..quoted.len() - 1].to_string()
}

fn prompt_text(item: &Item) -> String {
    match item {
        Item::Text(t) => t.clone(),
        Item::Chat(messages) => messages
            .iter()
            .rev()
            .find_map(|m| m.get("content").and_then(Value::as_str))
            .unwrap_or("")
            .to_string(),
        Item::Texts(ts) => ts.first().cloned().unwrap_or_default(),
        Item::Rerank { query, .. } => query.clone(),
        Item::Body(_) | Item::Tokens(_) => String::new(),
    }
}

impl BodyComposer {
    /// A composer for `model` with the flags' parameters and an optional `--query-template`.
    pub fn new(model: &str, params: GenParams, template: Option<String>) -> Self {
        BodyComposer {
            model: model.to_string(),
            params,
            template,
            api: ApiKind::OpenAi,
        }
    }

    /// The same composer for `api`: embedding and rerank APIs get their own body shapes (spec §2.2–2.3).
    pub fn for_api(mut self, api: ApiKind) -> Self {
        self.api = api;
        self
    }

    /// evalscope's `set_request_max_tokens`: a per-turn output cap (trace replays, multi-turn) written into
    /// `body` under the API's own key: `max_output_tokens` for the Responses API, else `max_tokens`.
    pub fn set_max_tokens(&self, body: &mut Map<String, Value>, max_tokens: u64) {
        let key = match self.api {
            ApiKind::Responses => "max_output_tokens",
            _ => "max_tokens",
        };
        body.insert(key.to_string(), json!(max_tokens));
    }

    /// The body for `item` as a JSON object, `max_tokens` drawn from `rng` when a range was given.
    pub fn compose_value(&self, item: &Item, rng: &mut impl Rng) -> Map<String, Value> {
        match self.api {
            ApiKind::Embedding => {
                return super::embedding::embedding_body(item, &self.model, &self.params.extra_args)
            }
            ApiKind::Rerank => {
                return super::embedding::rerank_body(item, &self.model, &self.params.extra_args)
            }
            ApiKind::Responses => {
                let template = self
                    .template
                    .as_deref()
                    .map(|t| self.template_object(t, item));
                return super::responses::compose(item, template, &self.model, &self.params, rng);
            }
            ApiKind::OpenAi | ApiKind::Mock => {}
        }
        let (mut body, mode) = match (item, &self.template) {
            (Item::Body(b), _) => (b.clone(), SetMode::FillGaps),
            (_, Some(template)) => (self.body_from_template(template, item), SetMode::Overwrite),
            (Item::Text(t), None) => {
                let mut m = Map::new();
                m.insert("prompt".into(), Value::String(t.clone()));
                (m, SetMode::Overwrite)
            }
            (Item::Chat(messages), None) => {
                let mut m = Map::new();
                m.insert("messages".into(), Value::Array(messages.clone()));
                (m, SetMode::Overwrite)
            }
            (Item::Tokens(ids), None) => {
                let mut m = Map::new();
                m.insert("prompt".into(), json!(ids));
                (m, SetMode::Overwrite)
            }
            (Item::Texts(ts), None) => {
                let mut m = Map::new();
                m.insert("prompt".into(), json!(ts));
                (m, SetMode::Overwrite)
            }
            (Item::Rerank { query, .. }, None) => {
                let mut m = Map::new();
                m.insert("prompt".into(), json!(query));
                (m, SetMode::Overwrite)
            }
        };
        let p = &self.params;
        // No model at all only for a replayed trace without --model: its bodies name their own.
        if !self.model.is_empty() {
            put(&mut body, mode, "model", json!(self.model));
        }
        let max_tokens = if p.max_tokens.0 == p.max_tokens.1 {
            p.max_tokens.0
        } else {
            rng.random_range(p.max_tokens.0..=p.max_tokens.1)
        };
        put(&mut body, mode, "max_tokens", json!(max_tokens));
        if let Some(v) = p.min_tokens {
            put(&mut body, mode, "min_tokens", json!(v));
        }
        if let Some(v) = p.frequency_penalty {
            put(&mut body, mode, "frequency_penalty", json!(v));
        }
        if let Some(v) = p.repetition_penalty {
            put(&mut body, mode, "repetition_penalty", json!(v));
        }
        if p.logprobs {
            put(&mut body, mode, "logprobs", json!(true));
        }
        if let Some(v) = p.n_choices {
            put(&mut body, mode, "n", json!(v));
        }
        if let Some(v) = p.seed {
            put(&mut body, mode, "seed", json!(v));
        }
        if let Some(v) = &p.stop {
            put(&mut body, mode, "stop", json!(v));
        }
        put(&mut body, mode, "stream", json!(p.stream));
        if body.get("stream") == Some(&Value::Bool(true)) {
            put(
                &mut body,
                mode,
                "stream_options",
                json!({"include_usage": true}),
            );
        } else {
            body.shift_remove("stream_options");
        }
        if let Some(v) = &p.stop_token_ids {
            put(&mut body, mode, "stop_token_ids", json!(v));
        }
        put(&mut body, mode, "temperature", json!(p.temperature));
        if let Some(v) = p.top_p {
            put(&mut body, mode, "top_p", json!(v));
        }
        if let Some(v) = p.top_k {
            put(&mut body, mode, "top_k", json!(v));
        }
        for (k, v) in &p.extra_args {
            put(&mut body, mode, k, v.clone());
        }
        body
    }

    /// The body for `item`, serialised as evalscope sends and stores it.
    pub fn compose(&self, item: &Item, rng: &mut impl Rng) -> Arc<str> {
        Arc::from(pyjson::dumps(&self.compose_value(item, rng)))
    }

    /// [`BodyComposer::compose`] sent to `model` instead of the composer's own, when given
    /// (`--lora-modules`; the draws from `rng` are the same either way).
    pub fn compose_as(&self, item: &Item, rng: &mut impl Rng, model: Option<&str>) -> Arc<str> {
        let mut body = self.compose_value(item, rng);
        if let Some(model) = model {
            set_model(&mut body, model);
        }
        Arc::from(pyjson::dumps(&body))
    }

    /// The connection-test body: the run's request shape for the prompt "hello", with a small
    /// `max_tokens` (at least `min_tokens`) so the test costs the server little.
    pub fn connection_test(&self, item: &Item, rng: &mut impl Rng) -> Arc<str> {
        let mut small = self.clone();
        let least = match self.api {
            ApiKind::Responses => super::responses::PROBE_MIN_OUTPUT_TOKENS,
            _ => 4,
        };
        let floor = small.params.min_tokens.unwrap_or(0).max(least);
        let cap = small.params.max_tokens.1.min(floor);
        small.params.max_tokens = (cap, cap);
        small.compose(item, rng)
    }

    /// The connection test's prompt "hello", in the run's request shape: token ids under
    /// `--tokenize-prompt` (when a tokenizer can give them), messages or a plain prompt otherwise.
    pub fn probe_item(apply_chat_template: bool, token_ids: Option<Vec<u32>>) -> Item {
        match token_ids {
            Some(ids) if !ids.is_empty() => Item::Tokens(ids),
            _ if apply_chat_template => {
                Item::Chat(vec![json!({"role": "user", "content": "hello"})])
            }
            _ => Item::Text("hello".into()),
        }
    }

    /// `--query-template` with `%m` and `%p` substituted, and whether it held `%p` (the prompt).
    fn template_object(&self, template: &str, item: &Item) -> (Map<String, Value>, bool) {
        let substitutes_prompt = template.contains("%p");
        let text = template
            .replace("%m", &json_escape(&self.model))
            .replace("%p", &json_escape(&prompt_text(item)));
        let body = match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => m,
            // Checked when the plan was built; an escaped substitution keeps it valid JSON.
            _ => Map::new(),
        };
        (body, substitutes_prompt)
    }

    fn body_from_template(&self, template: &str, item: &Item) -> Map<String, Value> {
        let (mut body, substitutes_prompt) = self.template_object(template, item);
        if !substitutes_prompt {
            let messages = match item {
                Item::Chat(m) => Value::Array(m.clone()),
                Item::Text(t) => Value::String(t.clone()),
                Item::Tokens(ids) => json!(ids),
                Item::Texts(ts) => json!(ts),
                Item::Rerank { query, .. } => Value::String(query.clone()),
                Item::Body(_) => Value::Null,
            };
            body.insert("messages".into(), messages);
        }
        body
    }
}

/// Sets a body's `model` (in its place when it has one, else last): the model `--lora-modules` drew.
pub fn set_model(body: &mut Map<String, Value>, model: &str) {
    body.insert("model".to_string(), Value::String(model.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn params() -> GenParams {
        GenParams {
            max_tokens: (2048, 2048),
            min_tokens: None,
            frequency_penalty: None,
            repetition_penalty: None,
            logprobs: false,
            n_choices: None,
            seed: None,
            stop: None,
            stream: true,
            stop_token_ids: None,
            temperature: 0.0,
            top_p: None,
            top_k: None,
            extra_args: Map::new(),
        }
    }

    fn rng() -> rand::rngs::StdRng {
        rand::rngs::StdRng::seed_from_u64(1)
    }

    #[test]
    fn chat_body_matches_evalscope_bytes() {
        let c = BodyComposer::new("mock-model", params(), None);
        let item = Item::Chat(vec![json!({"role": "user", "content": "hello there"})]);
        // Observed evalscope 1.14.1 body (spec §2.1).
        assert_eq!(
            &*c.compose(&item, &mut rng()),
            r#"{"messages": [{"role": "user", "content": "hello there"}], "model": "mock-model", "max_tokens": 2048, "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.0}"#
        );
    }

    #[test]
    fn non_stream_body_with_seed_and_extra_args() {
        let mut p = params();
        p.stream = false;
        p.seed = Some(1);
        p.max_tokens = (12, 12);
        p.extra_args.insert("ignore_eos".into(), json!(true));
        let c = BodyComposer::new("mock-model", p, None);
        let item = Item::Chat(vec![json!({"role": "user", "content": "hello one"})]);
        assert_eq!(
            &*c.compose(&item, &mut rng()),
            r#"{"messages": [{"role": "user", "content": "hello one"}], "model": "mock-model", "max_tokens": 12, "seed": 1, "stream": false, "temperature": 0.0, "ignore_eos": true}"#
        );
    }

    #[test]
    fn all_parameters_in_evalscope_order() {
        let mut p = params();
        p.min_tokens = Some(3);
        p.frequency_penalty = Some(0.5);
        p.repetition_penalty = Some(1.1);
        p.logprobs = true;
        p.n_choices = Some(2);
        p.seed = Some(7);
        p.stop = Some(vec!["x".into()]);
        p.stop_token_ids = Some(vec![1, 2]);
        p.top_p = Some(0.9);
        p.top_k = Some(20);
        p.extra_args.insert("temperature".into(), json!(0.5));
        let c = BodyComposer::new("m", p, None);
        let body = c.compose(&Item::Text("t".into()), &mut rng());
        assert_eq!(
            &*body,
            r#"{"prompt": "t", "model": "m", "max_tokens": 2048, "min_tokens": 3, "frequency_penalty": 0.5, "repetition_penalty": 1.1, "logprobs": true, "n": 2, "seed": 7, "stop": ["x"], "stream": true, "stream_options": {"include_usage": true}, "stop_token_ids": [1, 2], "temperature": 0.5, "top_p": 0.9, "top_k": 20}"#
        );
    }

    #[test]
    fn dataset_bodies_keep_their_values() {
        let mut p = params();
        p.seed = Some(42);
        p.max_tokens = (32, 32);
        let c = BodyComposer::new("mock-model", p, None);
        let body: Map<String, Value> = serde_json::from_str(
            r#"{"messages": [{"role": "user", "content": "Give one tip"}], "max_tokens": 8, "temperature": 0.7}"#,
        )
        .unwrap();
        // Observed in the e_line_by_line golden run.
        assert_eq!(
            &*c.compose(&Item::Body(body), &mut rng()),
            r#"{"messages": [{"role": "user", "content": "Give one tip"}], "max_tokens": 8, "temperature": 0.7, "model": "mock-model", "seed": 42, "stream": true, "stream_options": {"include_usage": true}}"#
        );
    }

    #[test]
    fn max_tokens_range_is_drawn_within_bounds() {
        let mut p = params();
        p.max_tokens = (10, 12);
        let c = BodyComposer::new("m", p, None);
        let mut r = rng();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let v = c.compose_value(&Item::Text("t".into()), &mut r);
            seen.insert(v["max_tokens"].as_u64().unwrap());
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![10, 11, 12]);
    }

    #[test]
    fn template_substitutes_model_and_prompt() {
        let t = r#"{"model": "%m", "input": {"text": "%p"}, "messages": "x"}"#.to_string();
        let c = BodyComposer::new("m\"1", params(), Some(t));
        let item = Item::Chat(vec![json!({"role": "user", "content": "say \"hi\""})]);
        let v = c.compose_value(&item, &mut rng());
        assert_eq!(v["input"]["text"], json!("say \"hi\""));
        assert_eq!(v["model"], json!("m\"1"));
        assert_eq!(v["messages"], json!("x"));

        let t = r#"{"messages": [], "max_tokens": 1, "extra": true}"#.to_string();
        let c = BodyComposer::new("m", params(), Some(t));
        let v = c.compose_value(&item, &mut rng());
        assert_eq!(v["messages"][0]["content"], json!("say \"hi\""));
        assert_eq!(v["max_tokens"], json!(2048));
        assert_eq!(v["extra"], json!(true));
    }

    #[test]
    fn connection_test_is_small() {
        let mut p = params();
        p.min_tokens = Some(128);
        p.max_tokens = (128, 128);
        let c = BodyComposer::new("m", p, None);
        let hello = BodyComposer::probe_item(true, None);
        let v: Value = serde_json::from_str(&c.connection_test(&hello, &mut rng())).unwrap();
        assert_eq!(v["max_tokens"], json!(128));
        let c = BodyComposer::new("m", params(), None);
        let v: Value = serde_json::from_str(&c.connection_test(&hello, &mut rng())).unwrap();
        assert_eq!(v["max_tokens"], json!(4));
        assert_eq!(v["messages"][0]["content"], json!("hello"));
        let ids = BodyComposer::probe_item(true, Some(vec![7, 8]));
        let v: Value = serde_json::from_str(&c.connection_test(&ids, &mut rng())).unwrap();
        assert_eq!(
            v["prompt"],
            json!([7, 8]),
            "--tokenize-prompt probes with token ids"
        );
    }
}
