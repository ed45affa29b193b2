//! `kontext_bench` and `mmmu_multi_image` from parquet files laid out as their hub copies (written here
//! with the `parquet` crate: `datasets.Image` struct columns `{bytes, path}`, snappy, as pyarrow writes
//! them), from `--dataset-path` and from the Hugging Face cache; and their errors. Downloads from the hubs
//! are in `hub_download.rs`.

use std::path::Path;

use base64::Engine as _;
use serde_json::Value;

use crate::common::parquet::{write_parquet, Col};
use crate::common::*;

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

pub fn png(w: u32, h: u32) -> Vec<u8> {
    encoded(w, h, image::ImageFormat::Png, false)
}

fn rgba_png(w: u32, h: u32) -> Vec<u8> {
    encoded(w, h, image::ImageFormat::Png, true)
}

fn jpeg(w: u32, h: u32) -> Vec<u8> {
    encoded(w, h, image::ImageFormat::Jpeg, false)
}

/// The size of a `data:image/jpeg;base64,` URL's picture, checking it is a baseline JPEG.
pub fn jpeg_size(part: &Value) -> (u32, u32) {
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

pub fn text(part: &Value) -> &str {
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

fn run(dataset: &str, path: Option<&Path>, number: &str) -> Vec<Value> {
    let sim = fast_sim();
    let mut run = Run::at(&sim, "/v1/chat/completions")
        .model("vl")
        .flag("--dataset", dataset);
    if let Some(p) = path {
        run = run.flag("--dataset-path", p);
    }
    run.flag("--number", number)
        .flags("--no-test-connection")
        .ok();
    bodies(&sim)
}

#[test]
fn kontext_bench_sends_each_row_as_text_and_a_jpeg() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("kontext-bench");
    kontext_fixture(&root);
    let bodies = run("kontext_bench", Some(&root), "3");
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
        .join("hf/datasets--black-forest-labs--kontext-bench");
    kontext_fixture(&repo.join("snapshots/0123abcd"));
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "0123abcd").unwrap();
    let sim = fast_sim();
    // Offline: the cached snapshot `refs/main` names, no hub asked.
    Run::at(&sim, "/v1/chat/completions")
        .model("vl")
        .online(cache.path())
        .env("HF_HUB_OFFLINE", "1")
        .flags("--dataset kontext_bench --data-source huggingface --number 2 --no-test-connection")
        .ok();
    let bodies = bodies(&sim);
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        text(&bodies[0]["messages"][0]["content"][0]),
        "Make the sky purple"
    );
}

pub fn mmmu_subject(root: &Path, subject: &str, split: &str, rows: Vec<MmmuRow>) {
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

pub struct MmmuRow {
    pub id: &'static str,
    pub question: &'static str,
    pub options: &'static str,
    pub images: Vec<Option<Vec<u8>>>,
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
    let bodies = run("mmmu_multi_image", Some(&root), "4");
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
            "datasets/AI-ModelScope--MMMU",
        ),
        (
            vec![
                "--dataset",
                "mmmu_multi_image",
                "--data-source",
                "huggingface",
            ],
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
