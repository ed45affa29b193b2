//! Parquet fixture files as the hub's datasets store them (written with the `parquet` crate the way
//! pyarrow writes a `datasets` table: nullable string, bool and `datasets.Image` struct `{bytes, path}`
//! columns, snappy, one row group).
#![allow(dead_code)]

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

/// One top-level column of a fixture file.
pub enum Col<'a> {
    /// A string column.
    Text(&'a str, Vec<Option<&'a str>>),
    /// A bool column.
    Bool(&'a str, Vec<Option<bool>>),
    /// A `datasets.Image` column: encoded bytes, or a null image.
    Image(&'a str, Vec<Option<Vec<u8>>>),
}

/// The values and definition levels of one leaf column.
enum Leaf {
    Bytes(Vec<ByteArray>, Vec<i16>),
    Bools(Vec<bool>, Vec<i16>),
}

fn leaves(cols: &[Col]) -> Vec<Leaf> {
    let mut out = Vec::new();
    for c in cols {
        match c {
            Col::Text(_, v) => out.push(Leaf::Bytes(
                v.iter().flatten().map(|s| ByteArray::from(*s)).collect(),
                v.iter().map(|s| i16::from(s.is_some())).collect(),
            )),
            Col::Bool(_, v) => out.push(Leaf::Bools(
                v.iter().flatten().copied().collect(),
                v.iter().map(|b| i16::from(b.is_some())).collect(),
            )),
            Col::Image(_, v) => {
                out.push(Leaf::Bytes(
                    v.iter()
                        .flatten()
                        .map(|b| ByteArray::from(b.clone()))
                        .collect(),
                    v.iter().map(|b| if b.is_some() { 2 } else { 0 }).collect(),
                ));
                // `path` is null inside a present struct (level 1), absent with a null image (0).
                out.push(Leaf::Bytes(
                    Vec::new(),
                    v.iter().map(|b| i16::from(b.is_some())).collect(),
                ));
            }
        }
    }
    out
}

/// Writes `cols` (of equal length) as the parquet file `path`, creating its folder.
pub fn write_parquet(path: &Path, cols: &[Col]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let fields: Vec<String> = cols
        .iter()
        .map(|c| match c {
            Col::Text(n, _) => format!("optional binary {n} (STRING);"),
            Col::Bool(n, _) => format!("optional boolean {n};"),
            Col::Image(n, _) => format!(
                "optional group {n} {{ optional binary bytes; optional binary path (STRING); }}"
            ),
        })
        .collect();
    let schema = Arc::new(
        parse_message_type(&format!("message schema {{ {} }}", fields.join(" "))).unwrap(),
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build(),
    );
    let leaves = leaves(cols);
    let mut writer = SerializedFileWriter::new(File::create(path).unwrap(), schema, props).unwrap();
    let mut group = writer.next_row_group().unwrap();
    let mut leaf = leaves.iter();
    while let Some(mut col) = group.next_column().unwrap() {
        match leaf.next().unwrap() {
            Leaf::Bytes(values, defs) => {
                col.typed::<ByteArrayType>()
                    .write_batch(values, Some(defs), None)
            }
            Leaf::Bools(values, defs) => {
                col.typed::<BoolType>()
                    .write_batch(values, Some(defs), None)
            }
        }
        .unwrap();
        col.close().unwrap();
    }
    group.close().unwrap();
    writer.close().unwrap();
}

/// [`write_parquet`] into memory (a file to serve from a fake hub).
pub fn parquet_bytes(cols: &[Col]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write_parquet(&path, cols);
    std::fs::read(path).unwrap()
}
