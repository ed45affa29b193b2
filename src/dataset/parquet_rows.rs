//! Rows of Hugging Face parquet datasets, read with the `parquet` crate's record API (no Arrow), and the
//! files of one split in a folder (a `--dataset-path`, or a hub copy's snapshot, searched recursively).
//!
//! Only the cell shapes the image datasets use are kept apart: strings, binary, `null`, and the
//! `datasets.Image` struct `{bytes, path}`; any other value is kept as its display text. One string
//! column can also be read alone ([`text_column`]: SWE-smith's `messages`), the other columns left
//! undecoded.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use parquet::schema::types::Type;

/// One cell of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// `null` (or a missing column).
    Null,
    /// A UTF-8 string column.
    Text(String),
    /// A binary column.
    Bytes(Vec<u8>),
    /// A `datasets.Image` value: encoded image bytes, or a path to the image file.
    Image {
        /// The encoded file (PNG, JPEG, …), when stored inline.
        bytes: Option<Vec<u8>>,
        /// The file path, when the image is stored by reference.
        path: Option<String>,
    },
    /// Any other value, as text.
    Other(String),
}

/// One row: column name → cell.
pub type Record = BTreeMap<String, Cell>;

impl Cell {
    fn from_field(field: &Field) -> Cell {
        match field {
            Field::Null => Cell::Null,
            Field::Str(s) => Cell::Text(s.clone()),
            Field::Bytes(b) => Cell::Bytes(b.data().to_vec()),
            Field::Group(group) => {
                let mut bytes = None;
                let mut path = None;
                let mut other = false;
                for (name, value) in group.get_column_iter() {
                    match (name.as_str(), value) {
                        ("bytes", Field::Bytes(b)) => bytes = Some(b.data().to_vec()),
                        ("path", Field::Str(s)) => path = Some(s.clone()),
                        ("bytes" | "path", Field::Null) => {}
                        _ => other = true,
                    }
                }
                if other {
                    Cell::Other(field.to_string())
                } else {
                    Cell::Image { bytes, path }
                }
            }
            other => Cell::Other(other.to_string()),
        }
    }

    /// The text of a string cell (`None` for `null`; other values as their display text).
    pub fn text(&self) -> Option<String> {
        match self {
            Cell::Null => None,
            Cell::Text(s) | Cell::Other(s) => Some(s.clone()),
            Cell::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Cell::Image { .. } => None,
        }
    }
}

fn record(row: &Row) -> Record {
    row.get_column_iter()
        .map(|(name, field)| (name.clone(), Cell::from_field(field)))
        .collect()
}

/// The rows of `files`, in file order, read lazily (one row group at a time).
pub fn rows(files: Vec<PathBuf>) -> impl Iterator<Item = Result<Record>> {
    files.into_iter().flat_map(|file| {
        let opened = File::open(&file)
            .with_context(|| format!("reading {}", file.display()))
            .and_then(|f| {
                SerializedFileReader::new(f)
                    .with_context(|| format!("{}: not a readable parquet file", file.display()))
            });
        let iter: Box<dyn Iterator<Item = Result<Record>>> = match opened {
            Ok(reader) => {
                let name = file.display().to_string();
                Box::new(reader.into_iter().map(move |row| {
                    row.map(|r| record(&r))
                        .with_context(|| format!("{name}: reading a row"))
                }))
            }
            Err(e) => Box::new(std::iter::once(Err(e))),
        };
        iter
    })
}

/// Rows decoded per batch by [`text_column`]: SWE-smith rows hold hundreds of kilobytes each.
const TEXT_BATCH_ROWS: usize = 16;

/// The values of the string column `name` of `files`, in file order (`None` for `null` or a value that
/// is not a string), read lazily; a file without that column is an error naming it.
pub fn text_column(
    files: Vec<PathBuf>,
    name: &'static str,
) -> impl Iterator<Item = Result<Option<String>>> {
    files.into_iter().flat_map(move |file| {
        let iter: Box<dyn Iterator<Item = Result<Option<String>>>> = match projected(&file, name) {
            Ok(rows) => {
                let shown = file.display().to_string();
                Box::new(rows.map(move |row| {
                    let row = row.with_context(|| format!("{shown}: reading a row"))?;
                    Ok(row.get_column_iter().next().and_then(|(_, f)| match f {
                        Field::Str(s) => Some(s.clone()),
                        _ => None,
                    }))
                }))
            }
            Err(e) => Box::new(std::iter::once(Err(e))),
        };
        iter
    })
}

/// The rows of `file` projected onto its top-level column `name`.
fn projected(file: &Path, name: &str) -> Result<parquet::record::reader::RowIter<'static>> {
    let reader = File::open(file)
        .with_context(|| format!("reading {}", file.display()))
        .and_then(|f| {
            SerializedFileReader::new(f)
                .with_context(|| format!("{}: not a readable parquet file", file.display()))
        })?;
    let schema = reader.metadata().file_metadata().schema();
    let Some(field) = schema.get_fields().iter().find(|f| f.name() == name) else {
        let columns: Vec<&str> = schema.get_fields().iter().map(|f| f.name()).collect();
        bail!(
            "{}: no column `{name}` (its columns: {})",
            file.display(),
            columns.join(", ")
        );
    };
    let projection = Type::group_type_builder(schema.name())
        .with_fields(vec![field.clone()])
        .build()
        .with_context(|| format!("{}: projecting column {name}", file.display()))?;
    reader
        .into_iter()
        .project(Some(projection))
        .map(|rows| rows.with_batch_size(TEXT_BATCH_ROWS))
        .with_context(|| format!("{}: reading column {name}", file.display()))
}

/// Every `.parquet` file under `path` (or `path` itself when it is a file), sorted by path.
pub fn parquet_files(path: &Path) -> Result<Vec<PathBuf>> {
    super::files::with_extension(path, "parquet")
}

/// The files of one split, named the way the hub names them: a folder called `split` on the way from
/// `root`, or a file name starting `split-`, `split_` or `split.`. When no file is named after any split,
/// all files are that split (a folder holding only the split's files, or a single file).
pub fn split_files(root: &Path, files: Vec<PathBuf>, split: &str) -> Vec<PathBuf> {
    let named = |f: &PathBuf| {
        let rel = f.strip_prefix(root).unwrap_or(f);
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let file = parts.pop().unwrap_or_default();
        parts.iter().any(|p| p == split)
            || [
                format!("{split}-"),
                format!("{split}_"),
                format!("{split}."),
            ]
            .iter()
            .any(|p| file.starts_with(p.as_str()))
    };
    const SPLITS: [&str; 4] = ["train", "test", "validation", "dev"];
    let any_split_named = files.iter().any(|f| {
        SPLITS.iter().any(|s| {
            let rel = f.strip_prefix(root).unwrap_or(f).to_string_lossy();
            rel.split('/')
                .any(|p| p == *s || p.starts_with(&format!("{s}-")))
        })
    });
    if !any_split_named {
        return files;
    }
    files.into_iter().filter(named).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_files_follow_hub_names() {
        let root = Path::new("/d");
        let files: Vec<PathBuf> = [
            "/d/Art/dev-00000-of-00001.parquet",
            "/d/Art/validation-00000-of-00001.parquet",
            "/d/Art/test-00000-of-00001.parquet",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(
            split_files(root, files.clone(), "validation"),
            vec![PathBuf::from("/d/Art/validation-00000-of-00001.parquet")]
        );
        let nested = vec![PathBuf::from("/d/test/0000.parquet")];
        assert_eq!(split_files(root, nested.clone(), "test"), nested);
        let plain = vec![PathBuf::from("/d/kontext.parquet")];
        assert_eq!(split_files(root, plain.clone(), "test"), plain);
        let train_only = vec![PathBuf::from("/d/data/train-0.parquet")];
        assert!(split_files(root, train_only, "test").is_empty());
    }
}
