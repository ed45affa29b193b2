//! A tokenizer id in no local cache, and the image datasets (`kontext_bench`, `mmmu_multi_image`,
//! `flickr8k`) without `--dataset-path`, downloaded from the fake hubs of `tests/common/fake_hub.rs`
//! into each hub's cache layout — the image datasets from ModelScope by default (evalscope's
//! `DatasetSource` ids), from the Hugging Face hub with `--data-source huggingface` — only the split
//! evalscope loads, then found there offline; the offline error names what it tried; a hub that refuses
//! gives a clear error before any request. `HF_TOKEN` is sent to the hub and written nowhere.

use std::path::Path;

use serde_json::Value;

use crate::common::fake_hub::{FakeHub, HF_COMMIT};
use crate::common::*;
use crate::parquet_sets::{jpeg_size, kontext_fixture, mmmu_subject, png, text, MmmuRow};
use crate::tokens::shared_dir;

const REPO: &str = "HuggingFaceTB/SmolLM2-135M-Instruct";

/// Every file under `dir`, read as text where it is text.
fn all_text(dir: &Path) -> String {
    files_under(dir)
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect()
}

/// A `--dataset random` run whose tokenizer is the hub id [`REPO`], caches under `cache`.
fn tokenizer_run(sim: &llmperf::sim::SimServer, cache: &Path) -> Run {
    Run::at(sim, "/v1/chat/completions")
        .online(cache)
        .flags("--dataset random --min-prompt-length 64 --max-prompt-length 64 --number 2")
        .flag("--tokenizer-path", REPO)
}

fn bodies(sim: &llmperf::sim::SimServer) -> Vec<Value> {
    sim.requests()
        .iter()
        .map(|r| serde_json::from_str(&r.1).unwrap())
        .collect()
}

#[test]
fn a_hub_tokenizer_is_downloaded_into_the_cache_then_used_offline() {
    let sim = fast_sim();
    let source = shared_dir().join("tokenizers/smollm2-135m-instruct");
    let hub = FakeHub::huggingface();
    for f in ["tokenizer.json", "tokenizer_config.json"] {
        hub.model_file(REPO, f, &std::fs::read(source.join(f)).unwrap());
    }
    let cache = tempfile::tempdir().unwrap();
    let secret = "hf_secret_token_4711";
    let first = tokenizer_run(&sim, cache.path())
        .hub(&hub)
        .env("HF_TOKEN", secret);
    first.ok();
    let repo = cache
        .path()
        .join("hf/models--HuggingFaceTB--SmolLM2-135M-Instruct");
    let snapshot = repo.join("snapshots").join(HF_COMMIT);
    for f in ["tokenizer.json", "tokenizer_config.json"] {
        assert_eq!(
            std::fs::read(snapshot.join(f)).unwrap(),
            std::fs::read(source.join(f)).unwrap(),
            "{f} cached byte for byte"
        );
    }
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/main")).unwrap(),
        HF_COMMIT
    );
    let seen = hub.requests();
    assert!(
        seen.iter()
            .any(|r| r.target == format!("/{REPO}/resolve/main/tokenizer.json")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .all(|r| r.header("authorization") == Some(format!("Bearer {secret}"))),
        "the token goes to the hub: {seen:?}"
    );
    assert!(
        !all_text(first.out()).contains(secret),
        "the token is written nowhere"
    );
    assert_eq!(sim.requests().len(), 2 + 1, "measured + connection test");

    // Offline, with the hub gone: found in the cache.
    drop(hub);
    tokenizer_run(&sim, cache.path())
        .env("HF_HUB_OFFLINE", "1")
        .ok();
}

#[test]
fn a_hub_that_refuses_is_a_clear_error_before_any_request() {
    let sim = fast_sim();
    let hub = FakeHub::huggingface();
    hub.require_token("a-token-this-run-does-not-have");
    let cache = tempfile::tempdir().unwrap();
    let run = tokenizer_run(&sim, cache.path()).hub(&hub);
    let err = run.fails(2);
    assert!(err.contains("HTTP 401"), "{err}");
    assert!(err.contains("HF_TOKEN"), "{err}");
    assert!(err.contains("Looked in"), "{err}");
    assert!(!hub.requests().is_empty(), "the hub was asked");
    assert!(sim.requests().is_empty());
    assert_eq!(run.out_entries(), 0);
    assert!(
        files_under(&cache.path().join("hf")).is_empty(),
        "nothing half-written"
    );
}

/// A repository's files: `(path, bytes)`.
type RepoFiles = Vec<(String, Vec<u8>)>;

/// The parquet/tar files of the three image datasets' hub copies (the same layout on both hubs; MMMU's
/// id differs), each with files of another split and a README that are not to be fetched.
fn image_repos() -> Vec<(&'static str, RepoFiles)> {
    let dir = tempfile::tempdir().unwrap();
    let read = |rel: &str| std::fs::read(dir.path().join(rel)).unwrap();
    kontext_fixture(&dir.path().join("kontext"));
    let kontext_test = read("kontext/data/test-00000-of-00001.parquet");
    let two_images = |id, question| MmmuRow {
        id,
        question,
        options: "['A', 'B']",
        images: vec![Some(png(4, 3)), Some(png(5, 6))],
    };
    let mmmu = dir.path().join("mmmu");
    mmmu_subject(
        &mmmu,
        "Art",
        "validation",
        vec![two_images("v_Art_1", "Art <image 1> <image 2>")],
    );
    mmmu_subject(
        &mmmu,
        "Math",
        "validation",
        vec![two_images("v_Math_1", "Math <image 1> <image 2>")],
    );
    mmmu_subject(
        &mmmu,
        "Art",
        "dev",
        vec![two_images("dev_Art_1", "DEV <image 1> <image 2>")],
    );
    let mut tar = Vec::new();
    crate::media::tar_entry(&mut tar, "s000.jpg", b"\xff\xd8\xff\xe0fakejpeg");
    crate::media::tar_entry(&mut tar, "s000.txt", b"A dog runs on the grass.");
    tar.extend(vec![0u8; 1024]);
    let file = |p: &str, b: Vec<u8>| (p.to_string(), b);
    vec![
        (
            "black-forest-labs/kontext-bench",
            vec![
                file("README.md", b"# kontext".to_vec()),
                file("data/test-00000-of-00001.parquet", kontext_test.clone()),
                file("data/train-00000-of-00001.parquet", kontext_test),
            ],
        ),
        (
            "MMMU",
            vec![
                file("README.md", b"# MMMU".to_vec()),
                file(
                    "Art/validation-00000-of-00001.parquet",
                    read("mmmu/Art/validation-00000-of-00001.parquet"),
                ),
                file(
                    "Math/validation-00000-of-00001.parquet",
                    read("mmmu/Math/validation-00000-of-00001.parquet"),
                ),
                file(
                    "Art/dev-00000-of-00001.parquet",
                    read("mmmu/Art/dev-00000-of-00001.parquet"),
                ),
            ],
        ),
        (
            "clip-benchmark/wds_flickr8k",
            vec![
                file("README.md", b"# flickr".to_vec()),
                file("test/0.tar", tar.clone()),
                file("train/0.tar", tar),
            ],
        ),
    ]
}

/// The first text part each image request sent, in order.
fn first_texts(sim: &llmperf::sim::SimServer) -> Vec<String> {
    bodies(sim)
        .iter()
        .map(|b| text(&b["messages"][0]["content"][0]).to_string())
        .collect()
}

#[test]
fn image_datasets_are_downloaded_from_modelscope_then_reused_from_its_cache() {
    let hub = FakeHub::modelscope();
    for (repo, files) in image_repos() {
        let repo = if repo == "MMMU" {
            "AI-ModelScope/MMMU"
        } else {
            repo
        };
        for (path, bytes) in files {
            hub.dataset_file(repo, &path, &bytes);
        }
    }
    let cache = tempfile::tempdir().unwrap();
    let sim = fast_sim();
    let cases = [
        (
            "kontext_bench",
            "black-forest-labs/kontext-bench",
            "data/test-00000-of-00001.parquet",
        ),
        (
            "mmmu_multi_image",
            "AI-ModelScope/MMMU",
            "Art/validation-00000-of-00001.parquet",
        ),
        ("flickr8k", "clip-benchmark/wds_flickr8k", "test/0.tar"),
    ];
    for (dataset, repo, wanted) in cases {
        let run = || {
            Run::at(&sim, "/v1/chat/completions")
                .model("vl")
                .online(cache.path())
                .hub(&hub)
                .flag("--dataset", dataset)
                .flags("--number 2 --no-test-connection")
        };
        let before = hub.requests().len();
        run().ok();
        let seen: Vec<String> = hub.requests()[before..]
            .iter()
            .map(|r| r.target.clone())
            .collect();
        let prefix = format!("/api/v1/datasets/{repo}/repo");
        assert_eq!(
            seen[0],
            format!("{prefix}/tree?Revision=master&Recursive=True&PageNumber=1&PageSize=200"),
            "{dataset}: the listing first"
        );
        let fetched: Vec<&str> = seen
            .iter()
            .filter_map(|t| t.split("&FilePath=").nth(1))
            .collect();
        let expected: Vec<String> = match dataset {
            "mmmu_multi_image" => vec![
                "Art%2Fvalidation-00000-of-00001.parquet".into(),
                "Math%2Fvalidation-00000-of-00001.parquet".into(),
            ],
            _ => vec![wanted.replace('/', "%2F")],
        };
        assert_eq!(fetched, expected, "{dataset}: only the split's files");
        let snapshot = cache
            .path()
            .join("modelscope/datasets")
            .join(repo.replace('/', "--"))
            .join("snapshots/master");
        assert!(snapshot.join(wanted).is_file(), "{dataset}: cached");
        assert!(!snapshot.join("README.md").exists());
        // Again, offline: from the cache, the hub not asked.
        let now = hub.requests().len();
        run().env("HF_HUB_OFFLINE", "1").ok();
        assert_eq!(hub.requests().len(), now, "{dataset}: no request");
    }
    let texts = first_texts(&sim);
    assert_eq!(
        texts,
        [
            "Make the sky purple",
            "Describe the image",
            "Make the sky purple",
            "Describe the image",
            "Art ",
            "Math ",
            "Art ",
            "Math ",
            "A dog runs on the grass.",
            "A dog runs on the grass.",
            "A dog runs on the grass.",
            "A dog runs on the grass.",
        ]
    );
    let mmmu = &bodies(&sim)[4]["messages"][0]["content"];
    assert_eq!(jpeg_size(&mmmu[1]), (4, 3));
}

#[test]
fn image_datasets_with_data_source_huggingface_read_the_hugging_face_copy() {
    let hf = FakeHub::huggingface();
    for (repo, files) in image_repos() {
        let repo = if repo == "MMMU" { "MMMU/MMMU" } else { repo };
        for (path, bytes) in files {
            hf.dataset_file(repo, &path, &bytes);
        }
    }
    let ms = FakeHub::modelscope();
    let cache = tempfile::tempdir().unwrap();
    let sim = fast_sim();
    let cases = [
        (
            "kontext_bench",
            "black-forest-labs/kontext-bench",
            "main",
            "data/test-00000-of-00001.parquet",
        ),
        (
            "mmmu_multi_image",
            "MMMU/MMMU",
            "21d1d90a93c7450d30bddb579d7b510c00b8a9ab",
            "Math/validation-00000-of-00001.parquet",
        ),
        (
            "flickr8k",
            "clip-benchmark/wds_flickr8k",
            "main",
            "test/0.tar",
        ),
    ];
    for (dataset, repo, revision, wanted) in cases {
        let run = || {
            Run::at(&sim, "/v1/chat/completions")
                .model("vl")
                .online(cache.path())
                .hub(&ms)
                .hub(&hf)
                .flag("--dataset", dataset)
                .flags("--data-source huggingface --number 2 --no-test-connection")
        };
        let before = hf.requests().len();
        run().ok();
        let seen: Vec<String> = hf.requests()[before..]
            .iter()
            .map(|r| r.target.clone())
            .collect();
        assert_eq!(
            seen[0],
            format!("/api/datasets/{repo}/revision/{revision}"),
            "{dataset}: evalscope's revision"
        );
        assert!(
            seen[1..]
                .iter()
                .all(|t| !t.contains("train") && !t.contains("dev-") && !t.contains("README")),
            "{dataset}: {seen:?}"
        );
        let snapshot = cache
            .path()
            .join("hf")
            .join(format!("datasets--{}", repo.replace('/', "--")))
            .join("snapshots")
            .join(HF_COMMIT);
        assert!(snapshot.join(wanted).is_file(), "{dataset}: cached");
        let now = hf.requests().len();
        run().env("HF_HUB_OFFLINE", "1").ok();
        assert_eq!(hf.requests().len(), now, "{dataset}: no request");
    }
    assert!(ms.requests().is_empty(), "ModelScope is not asked");
    let texts = first_texts(&sim);
    assert_eq!(texts[0], "Make the sky purple");
    assert_eq!(texts[4], "Art ");
    assert_eq!(texts[8], "A dog runs on the grass.");
}

#[test]
fn an_image_dataset_offline_names_the_files_the_cache_and_the_urls() {
    let cache = tempfile::tempdir().unwrap();
    let run = Run::with_url("http://127.0.0.1:9/v1/chat/completions")
        .online(cache.path())
        .env("HF_HUB_OFFLINE", "1")
        .flags("--dataset kontext_bench --number 1");
    let err = run.fails(2);
    for needle in [
        "--dataset kontext_bench",
        "the test split's parquet files (data/test-*.parquet)",
        "ModelScope dataset black-forest-labs/kontext-bench",
        "Looked in",
        "modelscope/datasets/black-forest-labs--kontext-bench/snapshots",
        "HF_HUB_OFFLINE",
        "http://127.0.0.1:9/api/v1/datasets/black-forest-labs/kontext-bench/repo/tree?Revision=master&Recursive=True&PageNumber=1&PageSize=200",
        "--dataset-path",
        "--data-source huggingface",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert_eq!(run.out_entries(), 0, "no output folder");
}
