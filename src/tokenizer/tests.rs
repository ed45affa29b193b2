//! Tests with the real Qwen3 and SmolLM2 tokenizer files (`$LLMPERF_SHARED_DIR/tokenizers/`).

use super::*;
use serde_json::json;

fn shared_tokenizer(name: &str) -> Tokenizer {
    let dir = crate::test_support::tokenizer_dir(name);
    let dir = dir.to_str().unwrap();
    Tokenizer::load(dir).unwrap_or_else(|e| panic!("{dir}: {e:#}"))
}

#[test]
fn qwen3_template_matches_the_documented_rendering() {
    let t = shared_tokenizer("qwen3");
    assert_eq!(t.vocab_size(), 151_669);
    let empty = [json!({"role": "user", "content": ""})];
    let text = t.render_chat(&empty, true, &Map::new()).unwrap();
    assert_eq!(
        text,
        "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n"
    );
    // SOURCE.md: an empty user message renders to 8 tokens.
    assert_eq!(t.chat_token_count(&empty, &Map::new()).unwrap(), 8);
    let mut kw = Map::new();
    kw.insert("enable_thinking".into(), json!(false));
    let text = t.render_chat(&empty, true, &kw).unwrap();
    assert!(
        text.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
        "{text:?}"
    );
}

#[test]
fn smollm2_template_adds_its_default_system_prompt() {
    let t = shared_tokenizer("smollm2-135m-instruct");
    assert_eq!(t.vocab_size(), 49_152);
    let text = t
        .render_chat(
            &[json!({"role": "user", "content": "hi"})],
            true,
            &Map::new(),
        )
        .unwrap();
    assert_eq!(
        text,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn allowed_ids_skip_special_tokens_and_stay_ascending() {
    let t = shared_tokenizer("qwen3");
    let allowed = t.allowed_ids();
    let im_start = t.inner.token_to_id("<|im_start|>").unwrap();
    let eot = t.inner.token_to_id("<|endoftext|>").unwrap();
    assert!(!allowed.contains(&im_start) && !allowed.contains(&eot));
    assert!(allowed.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(allowed.len() + t.special_ids().len(), t.vocab_size());
    // Decode keeps special tokens; encode adds none.
    let ids = t.encode("<|im_start|>hello").unwrap();
    assert_eq!(ids[0], im_start);
    assert_eq!(t.decode(&ids).unwrap(), "<|im_start|>hello");
}

#[test]
fn template_list_and_jinja_file_are_found() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        crate::test_support::tokenizer_dir("smollm2-135m-instruct").join("tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    let config = json!({
        "bos_token": {"content": "<|im_start|>", "special": true},
        "chat_template": [
            {"name": "tool_use", "template": "TOOLS"},
            {"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}"}
        ]
    });
    std::fs::write(dir.path().join("tokenizer_config.json"), config.to_string()).unwrap();
    let msgs = [json!({"role": "user", "content": "x"})];
    let t = Tokenizer::load(dir.path().to_str().unwrap()).unwrap();
    assert_eq!(
        t.render_chat(&msgs, true, &Map::new()).unwrap(),
        "<|im_start|>x"
    );
    // chat_template.jinja wins over the config's template.
    std::fs::write(
        dir.path().join("chat_template.jinja"),
        "J:{{ messages[0].content }}",
    )
    .unwrap();
    let t = Tokenizer::load(dir.path().to_str().unwrap()).unwrap();
    assert_eq!(t.render_chat(&msgs, true, &Map::new()).unwrap(), "J:x");
    // A tokenizer.json file alone loads, without a template.
    let t = Tokenizer::load(dir.path().join("tokenizer.json").to_str().unwrap()).unwrap();
    assert!(
        t.has_chat_template(),
        "the folder's chat_template.jinja is beside the file"
    );
    std::fs::remove_file(dir.path().join("chat_template.jinja")).unwrap();
    std::fs::remove_file(dir.path().join("tokenizer_config.json")).unwrap();
    let t = Tokenizer::load(dir.path().join("tokenizer.json").to_str().unwrap()).unwrap();
    assert!(!t.has_chat_template());
    assert!(t
        .render_chat(&msgs, true, &Map::new())
        .unwrap_err()
        .to_string()
        .contains("--no-apply-chat-template"));
}
