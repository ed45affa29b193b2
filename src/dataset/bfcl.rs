//! `bfcl`: the Berkeley Function Calling Leaderboard's published question/function files
//! (`BFCL_v3_simple.json`, `BFCL_v4_parallel_multiple.json`, …: JSON Lines despite the name), read
//! directly. Each entry becomes one chat body `{"messages": <its first turn>, "tools": <its functions>}`;
//! flags fill the other keys (`--extra-args` last, without overriding), as for `line_by_line` bodies.
//!
//! The functions are turned into OpenAI tools as BFCL's own OpenAI-style handlers turn them (its
//! `convert_to_tool` with the `GORILLA_TO_OPENAPI` table):
//! * `parameters.type` becomes `"object"`;
//! * each property's type is mapped: `integer`, `byte`, `short`, `long`, `Bigint` → `integer`; `number`,
//!   `float`, `double` → `number`; `string`, `char`, `any`, `Any`, `String` → `string`; `boolean`, `bool` →
//!   `boolean`; `array`, `list`, `tuple`, `ArrayList`, `Array`, `Queue`, `Stack` → `array`; `dict`,
//!   `object`, `HashMap`, `Hashtable` → `object`; any other type, and a property without one → `string`;
//! * a `float` property also gets `"format": "float"` and ` This is a float type value.` after its
//!   description;
//! * an `array` / `object` property with `properties` is mapped the same way, recursively; else, with
//!   `items`, the items' type is mapped, and then the items' own `items` type (a list of lists) or the
//!   items' `properties` (a list of dicts).
//!
//! BFCL also rewrites the Java and JavaScript categories' parameters into strings for its prompting
//! handlers; that is not done here (their types map through the table). `question` may be a list of turns
//! (v3/v4: the first turn is sent; later turns need the executed calls' results), a list of messages, or
//! a string (one user message); `function` a list or one object. An entry without `function` (BFCL's
//! multi-turn categories name theirs through `involved_classes`, in other files) is an error naming its
//! line, as is a function list that does not make valid tools. The `possible_answer` files are not read:
//! llmperf measures whether calls are well-formed against the schema, not BFCL's accuracy.

use anyhow::{anyhow, bail, Result};
use serde_json::{json, Map, Value};

use super::Item;

/// BFCL's parameter types and their JSON Schema types (its `GORILLA_TO_OPENAPI`).
const TYPES: [(&str, &str); 26] = [
    ("integer", "integer"),
    ("number", "number"),
    ("float", "number"),
    ("string", "string"),
    ("boolean", "boolean"),
    ("bool", "boolean"),
    ("array", "array"),
    ("list", "array"),
    ("dict", "object"),
    ("object", "object"),
    ("tuple", "array"),
    ("any", "string"),
    ("byte", "integer"),
    ("short", "integer"),
    ("long", "integer"),
    ("double", "number"),
    ("char", "string"),
    ("ArrayList", "array"),
    ("Array", "array"),
    ("HashMap", "object"),
    ("Hashtable", "object"),
    ("Queue", "array"),
    ("Stack", "array"),
    ("Any", "string"),
    ("String", "string"),
    ("Bigint", "integer"),
];

/// The JSON Schema type of a BFCL type (`string` for unknown ones).
fn mapped(t: &str) -> &'static str {
    TYPES
        .iter()
        .find(|(from, _)| *from == t)
        .map_or("string", |(_, to)| to)
}

/// Maps a schema's `type` in place (a missing one counts as unknown only where BFCL defaults it).
fn map_type(schema: &mut Map<String, Value>) {
    if let Some(Value::String(t)) = schema.get("type") {
        let to = mapped(t);
        schema.insert("type".into(), json!(to));
    }
}

/// BFCL's `_cast_to_openai_type` over one `properties` object.
fn cast_properties(properties: &mut Map<String, Value>) {
    for value in properties.values_mut() {
        let Value::Object(p) = value else { continue };
        match p.get("type").and_then(Value::as_str) {
            None => {
                p.insert("type".into(), json!("string"));
            }
            Some(t) => {
                if t == "float" {
                    p.insert("format".into(), json!("float"));
                    let description = p.get("description").and_then(Value::as_str).unwrap_or("");
                    let description = format!("{description} This is a float type value.");
                    p.insert("description".into(), json!(description));
                }
                map_type(p);
            }
        }
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
        if kind != "array" && kind != "object" {
            continue;
        }
        if let Some(Value::Object(nested)) = p.get_mut("properties") {
            cast_properties(nested);
        } else if let Some(Value::Object(items)) = p.get_mut("items") {
            map_type(items);
            match items.get("type").and_then(Value::as_str) {
                Some("array") => {
                    if let Some(Value::Object(inner)) = items.get_mut("items") {
                        map_type(inner);
                    }
                }
                Some("object") => {
                    if let Some(Value::Object(nested)) = items.get_mut("properties") {
                        cast_properties(nested);
                    }
                }
                _ => {}
            }
        }
    }
}

/// One BFCL function as an OpenAI tool.
fn tool(function: &Value) -> Result<Value> {
    let Value::Object(f) = function else {
        bail!("a function is not an object");
    };
    let mut f = f.clone();
    if let Some(Value::Object(parameters)) = f.get_mut("parameters") {
        parameters.insert("type".into(), json!("object"));
        if let Some(Value::Object(properties)) = parameters.get_mut("properties") {
            cast_properties(properties);
        }
    }
    Ok(json!({"type": "function", "function": Value::Object(f)}))
}

/// The first turn's messages of a `question`.
fn messages(question: &Value) -> Result<Vec<Value>> {
    match question {
        Value::String(s) => Ok(vec![json!({"role": "user", "content": s})]),
        Value::Array(turns) if turns.first().is_some_and(Value::is_array) => {
            Ok(turns[0].as_array().cloned().unwrap_or_default())
        }
        Value::Array(list) if list.iter().all(Value::is_object) && !list.is_empty() => {
            Ok(list.clone())
        }
        _ => bail!("\"question\" must be a list of turns, a list of messages or a string"),
    }
}

/// One entry as a request body.
fn body(entry: &Value) -> Result<Map<String, Value>> {
    let question = entry
        .get("question")
        .ok_or_else(|| anyhow!("no \"question\""))?;
    let functions = match entry.get("function") {
        Some(Value::Array(list)) => list.clone(),
        Some(one @ Value::Object(_)) => vec![one.clone()],
        Some(_) => bail!("\"function\" must be a list of function definitions"),
        None => bail!(
            "no \"function\" list (BFCL's multi-turn entries name their functions through \"involved_classes\", which llmperf does not read)"
        ),
    };
    let tools = functions.iter().map(tool).collect::<Result<Vec<_>>>()?;
    let mut body = Map::new();
    body.insert("messages".into(), Value::Array(messages(question)?));
    body.insert("tools".into(), Value::Array(tools));
    crate::structured::check_body(&body)?;
    Ok(body)
}

/// Reads a BFCL question file (at most `limit` entries).
pub fn parse(text: &str, limit: usize) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if items.len() >= limit {
            break;
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let entry: Value = serde_json::from_str(line)
            .map_err(|e| anyhow!("line {}: not valid JSON ({e})", n + 1))?;
        let body = body(&entry).map_err(|e| anyhow!("line {}: {e:#}", n + 1))?;
        items.push(Item::Body(body));
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(line: &str) -> Map<String, Value> {
        match parse(line, 10).unwrap().remove(0) {
            Item::Body(b) => b,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn types_map_as_bfcl_maps_them() {
        let line = r#"{"id": "simple_0", "question": [[{"role": "user", "content": "Area of a triangle with base 10 and height 5?"}]], "function": [{"name": "geometry.area_triangle", "description": "Area.", "parameters": {"type": "dict", "properties": {"base": {"type": "integer", "description": "Base."}, "height": {"type": "float", "description": "Height."}, "unit": {"description": "Unit."}, "dims": {"type": "tuple", "items": {"type": "float"}}, "grid": {"type": "list", "items": {"type": "list", "items": {"type": "long"}}}, "opts": {"type": "dict", "properties": {"exact": {"type": "bool"}}}, "pts": {"type": "array", "items": {"type": "dict", "properties": {"x": {"type": "double"}}}}, "x": {"type": "Vector"}}, "required": ["base", "height"]}}]}"#;
        let body = first(line);
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": "Area of a triangle with base 10 and height 5?"}])
        );
        let f = &body["tools"][0];
        assert_eq!(f["type"], json!("function"));
        assert_eq!(f["function"]["name"], json!("geometry.area_triangle"));
        let p = &f["function"]["parameters"];
        assert_eq!(p["type"], json!("object"));
        let props = &p["properties"];
        assert_eq!(props["base"]["type"], json!("integer"));
        assert_eq!(
            props["height"],
            json!({"type": "number", "description": "Height. This is a float type value.", "format": "float"})
        );
        assert_eq!(props["unit"]["type"], json!("string"));
        assert_eq!(
            props["dims"],
            json!({"type": "array", "items": {"type": "number"}})
        );
        assert_eq!(
            props["grid"]["items"],
            json!({"type": "array", "items": {"type": "integer"}})
        );
        assert_eq!(
            props["opts"]["properties"]["exact"]["type"],
            json!("boolean")
        );
        assert_eq!(
            props["pts"]["items"]["properties"]["x"]["type"],
            json!("number")
        );
        assert_eq!(props["x"]["type"], json!("string"));
        assert_eq!(p["required"], json!(["base", "height"]));
    }

    #[test]
    fn question_forms_and_bad_entries() {
        let b = first(
            r#"{"question": "hi", "function": {"name": "f", "parameters": {"type": "dict", "properties": {}}}}"#,
        );
        assert_eq!(b["messages"], json!([{"role": "user", "content": "hi"}]));
        assert_eq!(b["tools"].as_array().unwrap().len(), 1);
        let two_turns = r#"{"question": [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]], "function": []}"#;
        assert_eq!(
            first(two_turns)["messages"],
            json!([{"role": "user", "content": "a"}])
        );
        let e = parse(
            "\n{\"question\": [[]], \"involved_classes\": [\"GorillaFileSystem\"]}\n",
            10,
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("line 2: no \"function\" list"),
            "{e}"
        );
        let e = parse(r#"{"question": "q", "function": [{"name": "f", "parameters": {"type": "dict", "properties": {"n": {"type": "integer", "minimum": "zero"}}}}]}"#, 10)
            .unwrap_err();
        assert!(e.to_string().contains("line 1: \"tools\"[0] (f)"), "{e}");
        assert!(parse("{not json", 10)
            .unwrap_err()
            .to_string()
            .starts_with("line 1: not valid JSON"));
    }
}
