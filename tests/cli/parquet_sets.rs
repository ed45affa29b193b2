//! `kontext_bench` and `mmmu_multi_image` from parquet files laid out as their hub copies (written here
//! with the `parquet` crate: `datasets.Image` struct columns `{bytes, path}`, snappy, as pyarrow writes
//! them), from `--dataset-path` and from the Hugging Face cache; and their errors.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use serde_json::Value;

use crate::common::*;

/// One top-level column of a fixture file.
enum Col<'a> {
    /// A string column.
    Text(&'a str, Vec<Option<&'a str>>),
    /// A `datasets.Image` column: encoded bytes, or a null image.
    Image(&'a str, Vec<Option<Vec<u8>>>),
}

fn write_parquet(path: &Path, cols: &[Col]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let fields: Vec<String> = cols
        .iter()
        .map(|c| match c {
            Col::Text(n, _) => format!("optional binary {n} (STRING);"),
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
    // Each leaf: its values and definition levels.
    let mut leaves: Vec<(Vec<ByteArray>, Vec<i16>)> = Vec::new();
    for c in cols {
        match c {
            Col::Text(_, v) => leaves.push((
                v.iter().flatten().map(|s| ByteArray::from(*s)).collect(),
                v.iter().map(|s| i16::from(s.is_some())).collect(),
            )),
            Col::Image(_, v) => {
                leaves.push((
                    v.iter()
                        .flatten()
                        .map(|b| ByteArray::from(b.clone()))
                        .collect(),
                    v.iter().map(|b| if b.is_some() { 2 } else { 0 }).collect(),
                ));
                // `path` is null inside a present struct (level 1), absent with a null image (0).
                leaves.push((
                    Vec::new(),
                    v.iter().map(|b| i16::from(b.is_some())).collect(),
                ));
            }
        }
    }
    let mut writer = SerializedFileWriter::new(File::create(path).unwrap(), schema, props).unwrap();
    let mut group = writer.next_row_group().unwrap();
    let mut leaf = leaves.iter();
    while let Some(mut col) = group.next_column().unwrap() {
        let (values, defs) = leaf.next().unwrap();
        col.typed::<ByteArrayType>()
            .write_batch(values, Some(defs), None)
            .unwrap();
        col.close().unwrap();
    }
    group.close().unwrap();
    writer.close().unwrap();
}

fn encoded(w: u32, h: u32, format: image::ImageFormat, rgba: bool) -> Vec<u8> {
    let img = if rgba {
        image::DynamicImage::ImageRgba8(image::RgbaImage::from_fn(w, h, |x, y| {
            [(x * 20) as u8, (y * 20) as u8, 90, 128].into()
        }))
    } else {
        image::DynamicImage::ImageRgb8(image::RgbImage::from_fn(w, h, |x, y| {
            [(x * 20) as u8, 40, (y * 20) as u8].into()
        }))
    };
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), format)
        .unwrap();
    out
}

fn png(w: u32, h: u32) -> Vec<u8> {
    encoded(w, h, image::ImageFormat::Png, false)
}

fn rgba_png(w: u32, h: u32) -> Vec<u8> {
    encoded(w, h, image::ImageFormat::Png, true)
}

fn jpeg(w: u32, h: u32) -> Vec<u8> {
    encoded(w, h, image::ImageFormat::Jpeg, false)
}

/// The size of a `data:image/jpeg;base64,` URL's picture, checking it is a baseline JPEG.
fn jpeg_size(part: &Value) -> (u32, u32) {
    assert_eq!(part["type"], "image_url", "{part}");
    let url = part["image_url"]["url"].as_str().unwrap();
    let b64 = url
        .strip_prefix("data:image/jpeg;base64,")
        .unwrap_or_else(|| panic!("a JPEG data URL: {}", &url[..40.min(url.len())]));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(&bytes[..2], b"\xff\xd8", "JPEG SOI marker");
    let img = image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg).unwrap();
    assert_eq!(img.color(), image::ColorType::Rgb8);
    (img.width(), img.height())
}

fn text(part: &Value) -> &str {
    assert_eq!(part["type"], "text", "{part}");
    part["text"].as_str().unwrap()
}

fn bodies(sim: &llmperf::sim::SimServer) -> Vec<Value> {
    sim.requests()
        .iter()
        .map(|r| serde_json::from_str(&r.1).unwrap())
        .collect()
}

pub fn kontext_fixture(root: &Path) {
    write_parquet(
        &root.join("data/test-00000-of-00001.parquet"),
        &[
            Col::Image("image", vec![Some(jpeg(20, 10)), Some(rgba_png(8, 12))]),
            Col::Text("instruction", vec![Some("Make the sky purple"), None]),
            Col::Text("category", vec![Some("Style"), Some("Text")]),
        ],
    );
}

fn run(dataset: &str, path: Option<&Path>, number: &str, env: &[(&str, &str)]) -> Vec<Value> {
    let sim = fast_sim();
    let mut run = Run::at(&sim, "/v1/chat/completions")
        .model("vl")
        .flag("--dataset", dataset);
    if let Some(p) = path {
        run = run.flag("--dataset-path", p);
    }
    run = run.flag("--number", number).flags("--no-test-connection");
    for (key, value) in env {
        run = run.env(key, value);
    }
    run.ok();
    bodies(&sim)
}

#[test]
fn kontext_bench_sends_each_row_as_text_and_a_jpeg() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("kontext-bench");
    kontext_fixture(&root);
    let bodies = run("kontext_bench", Some(&root), "3", &[]);
    assert_eq!(bodies.len(), 3);
    let first = bodies[0]["messages"].as_array().unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0]["role"], "user");
    let c = first[0]["content"].as_array().unwrap();
    assert_eq!(c.len(), 2);
    assert_eq!(text(&c[0]), "Make the sky purple");
    assert_eq!(jpeg_size(&c[1]), (20, 10));
    let c = bodies[1]["messages"][0]["content"].as_array().unwrap();
    assert_eq!(text(&c[0]), "Describe the image", "null instruction");
    assert_eq!(jpeg_size(&c[1]), (8, 12), "RGBA PNG re-encoded as JPEG");
    assert_eq!(bodies[2], bodies[0], "rows cycled");
}

#[test]
fn kontext_bench_is_found_in_the_hugging_face_cache() {
    let cache = tempfile::tempdir().unwrap();
    let repo = cache
        .path()
        .join("datasets--black-forest-labs--kontext-bench");
    kontext_fixture(&repo.join("snapshots/0123abcd"));
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "0123abcd").unwrap();
    let empty = tempfile::tempdir().unwrap();
    let env = [
        ("HF_HUB_CACHE", cache.path().to_str().unwrap()),
        ("MODELSCOPE_CACHE", empty.path().to_str().unwrap()),
    ];
    let bodies = run("kontext_bench", None, "2", &env);
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        text(&bodies[0]["messages"][0]["content"][0]),
        "Make the sky purple"
    );
}

fn mmmu_subject(root: &Path, subject: &str, split: &str, rows: Vec<MmmuRow>) {
    let mut images: Vec<Vec<Option<Vec<u8>>>> = vec![Vec::new(); 7];
    for r in &rows {
        for (n, col) in images.iter_mut().enumerate() {
            col.push(r.images.get(n).cloned().flatten());
        }
    }
    let names: Vec<String> = (1..=7).map(|n| format!("image_{n}")).collect();
    let mut cols = vec![
        Col::Text("id", rows.iter().map(|r| Some(r.id)).collect()),
        Col::Text("question", rows.iter().map(|r| Some(r.question)).collect()),
        Col::Text("options", rows.iter().map(|r| Some(r.options)).collect()),
    ];
    for (name, col) in names.iter().zip(images) {
        cols.push(Col::Image(name, col));
    }
    cols.push(Col::Text(
        "answer",
        rows.iter().map(|_| Some("A")).collect(),
    ));
    write_parquet(
        &root
            .join(subject)
            .join(format!("{split}-00000-of-00001.parquet")),
        &cols,
    );
}

struct MmmuRow {
    id: &'static str,
    question: &'static str,
    options: &'static str,
    images: Vec<Option<Vec<u8>>>,
}

#[test]
fn mmmu_multi_image_round_robins_subjects_and_places_images() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("MMMU");
    mmmu_subject(
        &root,
        "Art",
        "validation",
        vec![
            MmmuRow {
                id: "validation_Art_1",
                question: "Compare <image 1> with <image 2>",
                options: "['A', 'B']",
                images: vec![Some(png(4, 3)), Some(jpeg(5, 6))],
            },
            MmmuRow {
                id: "validation_Art_2",
                question: "Only one <image 1>",
                options: "['A', 'B']",
                images: vec![Some(png(9, 9))],
            },
            MmmuRow {
                id: "validation_Art_3",
                question: "Which image is brightest?",
                options: "[]",
                images: vec![None, Some(png(5, 5)), Some(png(6, 6)), Some(png(7, 7))],
            },
        ],
    );
    // Another split of the same subject is never read.
    mmmu_subject(
        &root,
        "Art",
        "dev",
        vec![MmmuRow {
            id: "dev_Art_1",
            question: "DEV <image 1> <image 2>",
            options: "[]",
            images: vec![Some(png(2, 2)), Some(png(2, 2))],
        }],
    );
    mmmu_subject(
        &root,
        "Accounting",
        "validation",
        vec![MmmuRow {
            id: "validation_Accounting_1",
            question: "<image_2> is left of <image 1>. Which?",
            options: "['yes', 'no']",
            images: vec![Some(jpeg(10, 10)), Some(rgba_png(16, 8))],
        }],
    );
    let bodies = run("mmmu_multi_image", Some(&root), "4", &[]);
    assert_eq!(bodies.len(), 4);
    let content = |i: usize| -> Vec<Value> {
        let m = bodies[i]["messages"].as_array().unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0]["role"], "user");
        m[0]["content"].as_array().unwrap().clone()
    };
    // Round 1: Accounting (evalscope's subject order), then Art.
    let c = content(0);
    assert_eq!(c.len(), 4);
    assert_eq!(jpeg_size(&c[0]), (16, 8), "<image_2> first, RGBA converted");
    assert_eq!(text(&c[1]), " is left of ");
    assert_eq!(jpeg_size(&c[2]), (10, 10));
    assert_eq!(text(&c[3]), ". Which?\nOptions: ['yes', 'no']");
    let c = content(1);
    assert_eq!(c.len(), 5);
    assert_eq!(text(&c[0]), "Compare ");
    assert_eq!(jpeg_size(&c[1]), (4, 3));
    assert_eq!(text(&c[2]), " with ");
    assert_eq!(jpeg_size(&c[3]), (5, 6));
    assert_eq!(text(&c[4]), "\nOptions: ['A', 'B']");
    // Round 2: Accounting is done, Art_2 has one image (skipped); round 3: Art_3, no placeholders and
    // empty options: the text, then the images in column order.
    let c = content(2);
    assert_eq!(c.len(), 4);
    assert_eq!(text(&c[0]), "Which image is brightest?");
    let sizes: Vec<(u32, u32)> = c[1..].iter().map(jpeg_size).collect();
    assert_eq!(sizes, [(5, 5), (6, 6), (7, 7)]);
    assert_eq!(bodies[3], bodies[0], "cycled");
    assert!(
        !bodies.iter().any(|b| b.to_string().contains("DEV")),
        "dev split not read"
    );
}

#[test]
fn parquet_datasets_fail_clearly_before_any_request() {
    let sim = fast_sim();
    let empty = tempfile::tempdir().unwrap();
    let no_parquet = tempfile::tempdir().unwrap();
    std::fs::write(no_parquet.path().join("README.md"), "# MMMU").unwrap();
    let tokenizer = crate::tokens::tokenizer_dir("qwen3");
    let cases: Vec<(Vec<&str>, Option<i32>, &str)> = vec![
        (
            vec!["--dataset", "mmmu_multi_image"],
            Some(2),
            "datasets--MMMU--MMMU",
        ),
        (vec!["--dataset", "kontext_bench"], Some(2), "Looked in"),
        (
            vec![
                "--dataset",
                "kontext_bench",
                "--dataset-path",
                "/no/such/kontext",
            ],
            Some(2),
            "/no/such/kontext",
        ),
        (
            vec![
                "--dataset",
                "mmmu_multi_image",
                "--dataset-path",
                no_parquet.path().to_str().unwrap(),
            ],
            None,
            "no .parquet files",
        ),
        (
            vec![
                "--dataset",
                "mmmu_multi_image",
                "--dataset-path",
                no_parquet.path().to_str().unwrap(),
                "--tokenize-prompt",
                "--tokenizer-path",
                &tokenizer,
            ],
            Some(2),
            "--tokenize-prompt is not supported with --dataset mmmu_multi_image",
        ),
    ];
    for (args, code, needle) in cases {
        let run = Run::at(&sim, "/v1/chat/completions")
            .model("vl")
            .flags("--number 1")
            .args(&args)
            .env("HF_HUB_CACHE", empty.path())
            .env("MODELSCOPE_CACHE", empty.path());
        let o = run.output();
        let err = stderr(&o);
        match code {
            Some(c) => assert_eq!(o.status.code(), Some(c), "{args:?}: {err}"),
            None => assert!(!o.status.success(), "{args:?}: {err}"),
        }
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(run.out_entries(), 0, "{args:?}: nothing written");
    }
    assert!(sim.requests().is_empty(), "no request before the errors");
}
