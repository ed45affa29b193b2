//! What a request body asks for beyond text: `tools` (with `tool_choice`) and a JSON `response_format`,
//! checked and compiled once into JSON Schema validators ([`schema::Schema`]).
//!
//! Three callers: the datasets, when a row is loaded (a bad row is a usage error naming its file and
//! line, before anything is written); the plan, for the `tools` / `response_format` of `--extra-args`; and
//! the aggregator ([`crate::tool_calls`]), which validates what came back. A leaf: no crate imports.
//!
//! Accepted shapes (OpenAI's chat completions API, as vLLM, SGLang and llama.cpp take it):
//! * `tools`: a list of `{"type": "function", "function": {"name": …, "description"?: …, "parameters"?:
//!   <JSON Schema>}}` (`type` may be left out); an empty list offers nothing.
//! * `tool_choice`: `"none"`, `"auto"`, `"required"`, or `{"type": "function", "function": {"name": N}}`
//!   with N one of the tools. `"none"` means the request does not offer its tools.
//! * `response_format`: `{"type": "text"}`, `{"type": "json_object"}` (the output must be a JSON object)
//!   or `{"type": "json_schema", "json_schema": {"name": …, "schema"?: <JSON Schema>, "strict"?: …}}`.

mod schema;
mod schema_error;

use serde_json::{Map, Value};

pub use schema::Schema;
pub use schema_error::SchemaError;

/// Why a body's `tools`, `tool_choice` or `response_format` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// `tools` is not a list.
    #[error("\"tools\" must be a list of function definitions, not {0}")]
    ToolsNotList(&'static str),
    /// An entry of `tools` is not a function definition.
    #[error("\"tools\"[{index}] is not a function definition: {why}")]
    NotFunction {
        /// Its position in the list.
        index: usize,
        /// What is wrong.
        why: &'static str,
    },
    /// A tool's `parameters` is not valid JSON Schema.
    #[error("\"tools\"[{index}] ({name}): \"parameters\" is not valid JSON Schema: {why}")]
    Parameters {
        /// Its position in the list.
        index: usize,
        /// The function's name.
        name: String,
        /// The compiler's message.
        why: String,
    },
    /// `tool_choice` is not one of the accepted forms.
    #[error("\"tool_choice\" {0}")]
    ToolChoice(String),
    /// `response_format` is not one of the accepted forms, or its schema is not valid JSON Schema.
    #[error("\"response_format\" {0}")]
    ResponseFormat(String),
}

/// One offered function.
#[derive(Debug)]
pub struct ToolSpec {
    /// `function.name`.
    pub name: String,
    /// `function.parameters`, compiled (`None`: no parameters given, any JSON is accepted).
    pub parameters: Option<Schema>,
}

/// The output a `response_format` asks for.
#[derive(Debug)]
pub enum OutputSpec {
    /// `json_object`: a JSON object.
    JsonObject,
    /// `json_schema`: JSON that validates against the schema (`None`: no schema given, any JSON).
    JsonSchema(Option<Schema>),
}

/// What one request asks for.
#[derive(Debug)]
pub struct RequestSpec {
    /// The functions of `tools` (empty when there are none).
    pub tools: Vec<ToolSpec>,
    /// The request offers its tools: there are some and `tool_choice` is not `"none"`.
    pub tools_offered: bool,
    /// The JSON output `response_format` asks for, if any.
    pub output: Option<OutputSpec>,
}

impl RequestSpec {
    /// The tool named `name`, if offered.
    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Reads and compiles the `tools`, `tool_choice` and `response_format` of a body. `Ok(None)`: the
    /// body asks for neither tools nor JSON output.
    pub fn from_body(body: &Map<String, Value>) -> Result<Option<RequestSpec>, SpecError> {
        Self::from_parts(
            body.get("tools"),
            body.get("tool_choice"),
            body.get("response_format"),
        )
    }

    /// [`RequestSpec::from_body`] on the three values themselves.
    pub fn from_parts(
        tools: Option<&Value>,
        tool_choice: Option<&Value>,
        response_format: Option<&Value>,
    ) -> Result<Option<RequestSpec>, SpecError> {
        let tools = match tools {
            None | Some(Value::Null) => Vec::new(),
            Some(v) => read_tools(v)?,
        };
        let choice_none = read_tool_choice(tool_choice, &tools)?;
        let output = match response_format {
            None | Some(Value::Null) => None,
            Some(v) => read_response_format(v)?,
        };
        if tools.is_empty() && output.is_none() {
            return Ok(None);
        }
        Ok(Some(RequestSpec {
            tools_offered: !tools.is_empty() && !choice_none,
            tools,
            output,
        }))
    }
}

/// Whether a body carries any of the keys this module reads (a cheap look before the full check).
pub fn mentions_structure(body: &Map<String, Value>) -> bool {
    ["tools", "tool_choice", "response_format"]
        .iter()
        .any(|k| body.get(*k).is_some_and(|v| !v.is_null()))
}

/// Checks a body's `tools`, `tool_choice` and `response_format` (compiling every schema once).
pub fn check_body(body: &Map<String, Value>) -> Result<(), SpecError> {
    if mentions_structure(body) {
        RequestSpec::from_body(body)?;
    }
    Ok(())
}

/// The JSON type name of `v`, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn read_tools(v: &Value) -> Result<Vec<ToolSpec>, SpecError> {
    let Value::Array(list) = v else {
        return Err(SpecError::ToolsNotList(kind(v)));
    };
    let mut tools = Vec::with_capacity(list.len());
    for (index, entry) in list.iter().enumerate() {
        let not = |why| SpecError::NotFunction { index, why };
        let Value::Object(tool) = entry else {
            return Err(not("not an object"));
        };
        match tool.get("type") {
            None => {}
            Some(Value::String(t)) if t == "function" => {}
            Some(_) => return Err(not("\"type\" must be \"function\"")),
        }
        let Some(Value::Object(function)) = tool.get("function") else {
            return Err(not("no \"function\" object"));
        };
        let name = match function.get("name") {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            _ => return Err(not("\"function\" has no \"name\" string")),
        };
        let parameters = match function.get("parameters") {
            None | Some(Value::Null) => None,
            Some(p @ Value::Object(_)) => {
                Some(Schema::compile(p).map_err(|why| SpecError::Parameters {
                    index,
                    name: name.clone(),
                    why: why.to_string(),
                })?)
            }
            Some(_) => return Err(not("\"parameters\" must be a JSON Schema object")),
        };
        tools.push(ToolSpec { name, parameters });
    }
    Ok(tools)
}

/// Checks `tool_choice`; `true` when it is `"none"`.
fn read_tool_choice(choice: Option<&Value>, tools: &[ToolSpec]) -> Result<bool, SpecError> {
    match choice {
        None | Some(Value::Null) => Ok(false),
        Some(Value::String(s)) => match s.as_str() {
            "none" => Ok(true),
            "auto" | "required" => Ok(false),
            other => Err(SpecError::ToolChoice(format!(
                "must be \"none\", \"auto\", \"required\" or a function, not {other:?}"
            ))),
        },
        Some(Value::Object(o)) => {
            let name = o
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    SpecError::ToolChoice(
                        "object must be {\"type\": \"function\", \"function\": {\"name\": …}}"
                            .into(),
                    )
                })?;
            if tools.iter().any(|t| t.name == name) {
                Ok(false)
            } else {
                Err(SpecError::ToolChoice(format!(
                    "names {name:?}, which is not one of the tools"
                )))
            }
        }
        Some(v) => Err(SpecError::ToolChoice(format!(
            "must be a string or an object, not {}",
            kind(v)
        ))),
    }
}

fn read_response_format(v: &Value) -> Result<Option<OutputSpec>, SpecError> {
    let bad = |m: String| SpecError::ResponseFormat(m);
    let Value::Object(o) = v else {
        return Err(bad(format!("must be an object, not {}", kind(v))));
    };
    match o.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(OutputSpec::JsonObject)),
        Some("json_schema") => {
            let Some(Value::Object(js)) = o.get("json_schema") else {
                return Err(bad(
                    "of type \"json_schema\" needs a \"json_schema\" object".into(),
                ));
            };
            match js.get("schema") {
                None | Some(Value::Null) => Ok(Some(OutputSpec::JsonSchema(None))),
                Some(s @ (Value::Object(_) | Value::Bool(_))) => Schema::compile(s)
                    .map(|s| Some(OutputSpec::JsonSchema(Some(s))))
                    .map_err(|why| bad(format!("schema is not valid JSON Schema: {why}"))),
                Some(s) => Err(bad(format!(
                    "schema must be a JSON Schema object, not {}",
                    kind(s)
                ))),
            }
        }
        _ => Err(bad(
            "\"type\" must be \"text\", \"json_object\" or \"json_schema\"".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(body: Value) -> Result<Option<RequestSpec>, SpecError> {
        RequestSpec::from_body(body.as_object().unwrap())
    }

    fn weather() -> Value {
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})
    }

    #[test]
    fn plain_bodies_ask_for_nothing() {
        assert!(spec(json!({"messages": []})).unwrap().is_none());
        assert!(
            spec(json!({"tools": [], "response_format": {"type": "text"}}))
                .unwrap()
                .is_none()
        );
        assert!(!mentions_structure(
            json!({"tools": null}).as_object().unwrap()
        ));
    }

    #[test]
    fn tools_and_choices() {
        let s = spec(json!({"tools": [weather()]})).unwrap().unwrap();
        assert!(s.tools_offered && s.output.is_none());
        let p = s.tool("get_weather").unwrap().parameters.as_ref().unwrap();
        assert!(p.check(&json!({"city": "Paris"})).is_ok());
        assert!(p.check(&json!({"town": "Paris"})).is_err());
        let s = spec(json!({"tools": [weather()], "tool_choice": "none"}))
            .unwrap()
            .unwrap();
        assert!(!s.tools_offered);
        let named = json!({"type": "function", "function": {"name": "get_weather"}});
        assert!(spec(json!({"tools": [weather()], "tool_choice": named})).is_ok());
        let other = json!({"type": "function", "function": {"name": "nope"}});
        let e = spec(json!({"tools": [weather()], "tool_choice": other})).unwrap_err();
        assert!(e.to_string().contains("not one of the tools"), "{e}");
    }

    #[test]
    fn bad_tools_are_named() {
        let e = spec(json!({"tools": {"a": 1}})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"tools\" must be a list of function definitions, not an object"
        );
        let e = spec(json!({"tools": [weather(), {"type": "function"}]})).unwrap_err();
        assert_eq!(
            e,
            SpecError::NotFunction {
                index: 1,
                why: "no \"function\" object"
            }
        );
        let e =
            spec(json!({"tools": [{"function": {"name": "f", "parameters": {"type": "strin"}}}]}))
                .unwrap_err();
        assert!(
            matches!(&e, SpecError::Parameters { index: 0, name, .. } if name == "f"),
            "{e}"
        );
    }

    #[test]
    fn response_formats() {
        let s = spec(json!({"response_format": {"type": "json_object"}}))
            .unwrap()
            .unwrap();
        assert!(matches!(s.output, Some(OutputSpec::JsonObject)) && !s.tools_offered);
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        let s = spec(json!({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}))
            .unwrap()
            .unwrap();
        let Some(OutputSpec::JsonSchema(Some(schema))) = &s.output else {
            panic!("{s:?}")
        };
        assert!(schema.check(&json!({"n": 3})).is_ok());
        assert!(schema.check(&json!({"n": "3"})).is_err());
        let e = spec(json!({"response_format": {"type": "json_schema", "json_schema": {"schema": {"minimum": "0"}}}}))
            .unwrap_err();
        assert!(e.to_string().contains("not valid JSON Schema"), "{e}");
        let e = spec(json!({"response_format": {"type": "yaml"}})).unwrap_err();
        assert!(e.to_string().starts_with("\"response_format\""), "{e}");
    }
}
