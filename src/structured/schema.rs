//! One compiled JSON Schema ([`boon`]: drafts 4, 6, 7, 2019-09 and 2020-12, chosen by `$schema`, else
//! 2020-12, as Python's `jsonschema` picks the latest draft). The schema itself is checked against its
//! draft's metaschema when compiled, so a schema that is not valid JSON Schema is refused there.
//! `format` is an annotation, not an assertion (the 2020-12 default, and what vLLM's and llama.cpp's
//! grammars enforce at most). No `$ref` outside the schema is ever loaded: no file, no network.

use std::error::Error;

use serde_json::Value;

use super::schema_error::SchemaError;

/// Where a schema sits for `$ref` resolution (never fetched: only references inside it resolve).
const LOCATION: &str = "urn:llmperf:schema";

/// Refuses every external document.
struct NoLoader;

impl boon::UrlLoader for NoLoader {
    fn load(&self, url: &str) -> Result<Value, Box<dyn Error>> {
        Err(format!("{url}: llmperf resolves only references inside the schema").into())
    }
}

/// A compiled JSON Schema.
pub struct Schema {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Schema")
    }
}

/// `e`'s message on one line.
fn one_line(e: impl std::fmt::Display) -> String {
    e.to_string().replace(['\r', '\n'], " ")
}

impl Schema {
    /// Compiles `schema`; the error says why it is not valid JSON Schema.
    pub fn compile(schema: &Value) -> Result<Schema, SchemaError> {
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        compiler.use_loader(Box::new(NoLoader));
        compiler
            .add_resource(LOCATION, schema.clone())
            .map_err(|e| SchemaError::Invalid(one_line(e)))?;
        let mut schemas = boon::Schemas::new();
        let index = compiler.compile(LOCATION, &mut schemas).map_err(|e| {
            SchemaError::Invalid(match e {
                boon::CompileError::ValidationError { src, .. } => one_line(format!("{src:#}")),
                other => one_line(other),
            })
        })?;
        Ok(Schema { schemas, index })
    }

    /// Validates `instance`; the error names the first place that does not conform.
    pub fn check(&self, instance: &Value) -> Result<(), SchemaError> {
        self.schemas
            .validate(instance, self.index)
            .map_err(|e| SchemaError::Mismatch(one_line(format!("{e:#}"))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drafts_refs_and_formats() {
        // 2020-12 by default: `$defs` and `prefixItems`.
        let s = Schema::compile(&json!({
            "$defs": {"pos": {"type": "integer", "minimum": 0}},
            "type": "array", "prefixItems": [{"$ref": "#/$defs/pos"}, {"type": "string"}]
        }))
        .unwrap();
        assert!(s.check(&json!([1, "a"])).is_ok());
        assert!(s.check(&json!([-1, "a"])).is_err());
        // draft-07 when the schema says so: `items` as a list.
        let s = Schema::compile(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "array", "items": [{"type": "integer"}]
        }))
        .unwrap();
        assert!(s.check(&json!(["x"])).is_err());
        // `format` is an annotation.
        let s = Schema::compile(&json!({"type": "string", "format": "float"})).unwrap();
        assert!(s.check(&json!("not a date")).is_ok());
    }

    #[test]
    fn invalid_schemas_and_external_refs_are_refused() {
        for bad in [
            json!({"type": "strin"}),
            json!({"required": "city"}),
            json!({"properties": []}),
            json!({"$ref": "https://example.com/s.json"}),
            json!({"$ref": "file:///etc/passwd"}),
        ] {
            let e = Schema::compile(&bad).unwrap_err().to_string();
            assert!(!e.contains('\n') && !e.is_empty(), "{bad}: {e}");
        }
    }

    #[test]
    fn errors_are_one_line() {
        let s = Schema::compile(
            &json!({"type": "object", "properties": {"a": {"type": "integer"}},
            "required": ["a", "b"]}),
        )
        .unwrap();
        let e = s.check(&json!({"a": "x"})).unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
    }
}
