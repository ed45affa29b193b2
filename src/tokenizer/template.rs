//! Chat templates: the Jinja template of a tokenizer rendered as Hugging Face `transformers` renders it
//! (`trim_blocks`, `lstrip_blocks`, loop controls, Python string/dict methods, `tojson` as Python's
//! `json.dumps(ensure_ascii=False)`, `raise_exception`), with the config's special tokens and the request's
//! `chat_template_kwargs` as variables.

use minijinja::value::Kwargs;
use minijinja::{Environment, Error, ErrorKind, Value};
use serde_json::Map;

/// A compiled chat template and the special tokens it may refer to.
pub struct ChatTemplate {
    env: Environment<'static>,
    /// `bos_token`, `eos_token`, … as strings (transformers' `special_tokens_map`).
    special_tokens: Vec<(String, serde_json::Value)>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("special_tokens", &self.special_tokens)
            .finish_non_exhaustive()
    }
}

const NAME: &str = "chat_template";

fn tojson(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let _: Option<Value> = kwargs.get("sort_keys")?;
    let _: Option<Value> = kwargs.get("ensure_ascii")?;
    let _: Option<Value> = kwargs.get("separators")?;
    kwargs.assert_all_used()?;
    let json = serde_json::to_value(&value)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("tojson: {e}")))?;
    let text = match indent {
        None => crate::pyjson::dumps(&json),
        Some(_) => crate::pyjson::dumps_indent4(&json),
    };
    Ok(Value::from_safe_string(text))
}

fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

impl ChatTemplate {
    /// Compiles `source`; `special_tokens` are the config's `bos_token`, `eos_token`, … values.
    pub fn new(
        source: String,
        special_tokens: Vec<(String, serde_json::Value)>,
    ) -> Result<Self, Error> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function("raise_exception", raise_exception);
        env.add_template_owned(NAME, source)?;
        Ok(ChatTemplate {
            env,
            special_tokens,
        })
    }

    /// Renders `messages` (OpenAI-style message objects). Variables, later ones winning: the special tokens,
    /// `kwargs` (`chat_template_kwargs`), then `messages` and `add_generation_prompt`.
    pub fn render(
        &self,
        messages: &[serde_json::Value],
        add_generation_prompt: bool,
        kwargs: &Map<String, serde_json::Value>,
    ) -> Result<String, Error> {
        let mut ctx: Map<String, serde_json::Value> = Map::new();
        for (k, v) in &self.special_tokens {
            ctx.insert(k.clone(), v.clone());
        }
        for (k, v) in kwargs {
            ctx.insert(k.clone(), v.clone());
        }
        ctx.insert(
            "messages".into(),
            serde_json::Value::from(messages.to_vec()),
        );
        ctx.insert(
            "add_generation_prompt".into(),
            serde_json::Value::Bool(add_generation_prompt),
        );
        self.env
            .get_template(NAME)?
            .render(Value::from_serialize(&ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_with_python_methods_and_special_tokens() {
        let t = ChatTemplate::new(
            "{{ bos_token }}{% for m in messages %}{{ m.role.upper() }}:{{ m.content.strip() }}\n{% endfor %}{% if add_generation_prompt %}A:{% endif %}{{ extra | default('') }}".into(),
            vec![("bos_token".into(), json!("<s>"))],
        )
        .unwrap();
        let msgs = [json!({"role": "user", "content": " hi "})];
        let mut kw = Map::new();
        kw.insert("extra".into(), json!("!"));
        assert_eq!(t.render(&msgs, true, &kw).unwrap(), "<s>USER:hi\nA:!");
        assert_eq!(t.render(&msgs, false, &Map::new()).unwrap(), "<s>USER:hi\n");
    }

    #[test]
    fn tojson_is_python_json_and_raise_exception_fails() {
        let t = ChatTemplate::new("{{ x | tojson }}".into(), vec![]).unwrap();
        let mut kw = Map::new();
        kw.insert("x".into(), json!({"a": [1, "é<"]}));
        assert_eq!(t.render(&[], false, &kw).unwrap(), r#"{"a": [1, "é<"]}"#);
        let t = ChatTemplate::new("{{ raise_exception('no system') }}".into(), vec![]).unwrap();
        assert!(t
            .render(&[], false, &Map::new())
            .unwrap_err()
            .to_string()
            .contains("no system"));
    }
}
