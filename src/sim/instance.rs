//! JSON values that do (or on purpose do not) validate against a JSON Schema: the simulator's tool-call
//! arguments and JSON outputs.
//!
//! [`valid`] builds the smallest plausible instance from the keywords that say what a value is: `const`,
//! `enum`, `type` (the first of a list), `properties` (every property, required or not), `items` /
//! `prefixItems` with `minItems`, `minimum` / `exclusiveMinimum` / `maximum`, `minLength` / `maxLength`,
//! `anyOf` / `oneOf` (the first branch), `allOf` (merged objects), local `$ref`s (`#/$defs/…`,
//! `#/definitions/…`) and `additionalProperties`. Keywords it does not model (`pattern`, `format`,
//! `not`, `if`/`then`, `multipleOf`, …) may make the instance invalid; the tests use schemas built from the
//! modelled ones.
//!
//! [`invalid`] breaks an object schema's instance in a way every validator sees: a required property
//! left out; else a property given a value of the wrong type; else a list instead of an object.

use serde_json::{json, Map, Value};

/// `$ref`s followed before giving up (recursive schemas).
const MAX_DEPTH: u32 = 16;

/// An instance of `schema` (the whole document, for local `$ref`s).
pub(crate) fn valid(schema: &Value) -> Value {
    build(schema, schema, 0)
}

/// A local `$ref` target.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer)
}

fn type_of(schema: &Map<String, Value>) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => Some(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    }
}

fn number(schema: &Map<String, Value>, integer: bool) -> Value {
    let get = |k: &str| schema.get(k).and_then(Value::as_f64);
    let mut v = 1.0_f64;
    if let Some(min) = get("minimum") {
        v = v.max(min);
    }
    if let Some(min) = get("exclusiveMinimum") {
        v = v.max(min + 1.0);
    }
    if let Some(max) = get("maximum") {
        v = v.min(max);
    }
    if let Some(max) = get("exclusiveMaximum") {
        v = v.min(max - 1.0);
    }
    if integer {
        json!(v.ceil() as i64)
    } else {
        json!(v)
    }
}

fn string(schema: &Map<String, Value>) -> Value {
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let max = schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .unwrap_or(u64::MAX) as usize;
    let mut s = String::from("hello");
    while s.chars().count() < min {
        s.push('o');
    }
    Value::String(s.chars().take(max.max(min)).collect())
}

fn array(root: &Value, schema: &Map<String, Value>, depth: u32) -> Value {
    let mut out: Vec<Value> = schema
        .get("prefixItems")
        .and_then(Value::as_array)
        .map(|p| p.iter().map(|s| build(root, s, depth + 1)).collect())
        .unwrap_or_default();
    let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1) as usize;
    let items = schema
        .get("items")
        .filter(|i| i.is_object() || i.is_boolean());
    while out.len() < min {
        match items {
            Some(Value::Bool(false)) => break,
            Some(i) => out.push(build(root, i, depth + 1)),
            None => out.push(json!("hello")),
        }
    }
    Value::Array(out)
}

fn object(root: &Value, schema: &Map<String, Value>, depth: u32) -> Value {
    let mut out = Map::new();
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (k, s) in props {
            out.insert(k.clone(), build(root, s, depth + 1));
        }
    }
    if let Some(Value::Array(required)) = schema.get("required") {
        for k in required.iter().filter_map(Value::as_str) {
            if !out.contains_key(k) {
                let extra = match schema.get("additionalProperties") {
                    Some(s @ Value::Object(_)) => build(root, s, depth + 1),
                    _ => json!("hello"),
                };
                out.insert(k.to_string(), extra);
            }
        }
    }
    Value::Object(out)
}

fn build(root: &Value, schema: &Value, depth: u32) -> Value {
    let Value::Object(s) = schema else {
        return json!({});
    };
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(target) = s
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve(root, r))
    {
        return build(root, target, depth + 1);
    }
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    if let Some(first) = s
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(first) = s.get(key).and_then(Value::as_array).and_then(|b| b.first()) {
            return build(root, first, depth + 1);
        }
    }
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        let mut merged = Map::new();
        for part in all {
            if let Value::Object(o) = build(root, part, depth + 1) {
                merged.extend(o);
            }
        }
        if let Value::Object(o) = object(root, s, depth) {
            merged.extend(o);
        }
        return Value::Object(merged);
    }
    match type_of(s) {
        Some("string") => string(s),
        Some("integer") => number(s, true),
        Some("number") => number(s, false),
        Some("boolean") => json!(true),
        Some("null") => Value::Null,
        Some("array") => array(root, s, depth),
        Some("object") => object(root, s, depth),
        _ if s.contains_key("properties") || s.contains_key("required") => object(root, s, depth),
        _ if s.contains_key("items") || s.contains_key("prefixItems") => array(root, s, depth),
        _ => json!("hello"),
    }
}

/// A value of a type other than `schema` asks for.
fn wrong_type(schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => json!(12345),
        _ => json!("not-the-right-type"),
    }
}

/// A value that parses as JSON but does not validate against `schema` (an object schema).
pub(crate) fn invalid(schema: &Value) -> Value {
    let mut value = valid(schema);
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .and_then(|r| r.first())
        .and_then(Value::as_str);
    if let (Some(k), Value::Object(o)) = (required, &mut value) {
        o.remove(k);
        return value;
    }
    let first = schema
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|p| p.iter().find(|(_, s)| s.get("type").is_some()));
    if let (Some((k, s)), Value::Object(o)) = (first, &mut value) {
        o.insert(k.clone(), wrong_type(s));
        return value;
    }
    json!(["not", "an", "object"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structured::Schema;

    #[test]
    fn instances_validate_and_broken_ones_do_not() {
        let schemas = [
            json!({"type": "object", "properties": {"city": {"type": "string", "minLength": 8, "maxLength": 9},
                "unit": {"enum": ["c", "f"]}, "days": {"type": "integer", "minimum": 3, "maximum": 7},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                "loc": {"type": "object", "properties": {"lat": {"type": "number", "exclusiveMinimum": 40}}, "required": ["lat"]}},
                "required": ["city", "days"], "additionalProperties": false}),
            json!({"$defs": {"p": {"type": "object", "properties": {"n": {"type": ["integer", "null"]}}, "required": ["n"]}},
                "type": "object", "properties": {"a": {"$ref": "#/$defs/p"}, "b": {"anyOf": [{"type": "boolean"}, {"type": "string"}]},
                "c": {"const": 3}}, "required": ["a"]}),
            json!({"type": "object", "properties": {"free": {"type": "string"}}}),
            json!({"type": "object", "allOf": [{"properties": {"x": {"type": "integer"}}, "required": ["x"]}]}),
            json!({"type": "object"}),
        ];
        for s in &schemas {
            let compiled = Schema::compile(s).unwrap();
            let v = valid(s);
            assert!(compiled.check(&v).is_ok(), "{s} -> {v}");
            let bad = invalid(s);
            if s.get("properties").is_some() || s.get("required").is_some() {
                assert!(compiled.check(&bad).is_err(), "{s} -> {bad}");
            }
        }
        assert_eq!(
            invalid(&json!({"type": "object"})),
            json!(["not", "an", "object"])
        );
    }
}
