//! Image and real-text datasets: `random_vl` PNG data URLs, `flickr8k` webdataset shards, `longalpaca`,
//! `share_gpt_en`, `speed_benchmark`, and `--dataset-args target_input_len` / `prefix_file`.

use base64::Engine as _;
use serde_json::Value;

use crate::common::*;
use crate::tokens::{count, raw_tokenizer, tokenizer_dir};

fn decode_png(url: &str) -> (u32, u32, png::ColorType) {
    let b64 = url
        .strip_prefix("data:image/png;base64,")
        .expect("a PNG data URL");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    let reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let info = reader.info();
    (info.width, info.height, info.color_type)
}

#[test]
fn random_vl_sends_png_data_urls_of_the_requested_size() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .model("vl")
        .flags("--dataset random_vl")
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flags("--min-prompt-length 30 --max-prompt-length 40 --image-width 64 --image-height 48 --image-num 2 --image-format RGBA --number 3 --no-test-connection");
    run.ok();
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 3);
    for (_, body, _) in &reqs {
        let v: Value = serde_json::from_str(body).unwrap();
        let content = v["messages"][0]["content"].as_array().unwrap();
        assert_eq!(content.len(), 3, "text + 2 images");
        assert_eq!(content[0]["type"], "text");
        assert!(!content[0]["text"].as_str().unwrap().is_empty());
        for part in &content[1..] {
            assert_eq!(part["type"], "image_url");
            let (w, h, c) = decode_png(part["image_url"]["url"].as_str().unwrap());
            assert_eq!((w, h, c), (64, 48, png::ColorType::Rgba));
        }
    }
    let args = run.run_dir("parallel_1_number_3").args();
    assert_eq!(
        (args["image_width"].clone(), args["image_num"].clone()),
        (Value::from(64), Value::from(2))
    );
}

pub fn tar_entry(tar: &mut Vec<u8>, name: &str, data: &[u8]) {
    let mut h = vec![0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..108].copy_from_slice(b"0000644\0");
    h[124..136].copy_from_slice(format!("{:011o}\0", data.len()).as_bytes());
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    tar.extend(h);
    tar.extend_from_slice(data);
    tar.resize(tar.len().div_ceil(512) * 512, 0);
}

#[test]
fn flickr8k_reads_webdataset_shards_and_needs_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let shards = dir.path().join("wds_flickr8k/test");
    std::fs::create_dir_all(&shards).unwrap();
    let mut tar = Vec::new();
    tar_entry(&mut tar, "s000.jpg", b"\xff\xd8\xff\xe0fakejpeg");
    tar_entry(&mut tar, "s000.txt", b"A dog runs on the grass.");
    tar_entry(&mut tar, "s001.jpg", b"\xff\xd8\xff\xe0another");
    tar_entry(&mut tar, "s001.txt", b"Two children play.");
    tar.extend(vec![0u8; 1024]);
    std::fs::write(shards.join("0.tar"), &tar).unwrap();
    // The fixture is a real tar archive: the system tar lists it.
    if let Ok(o) = std::process::Command::new("tar")
        .arg("tf")
        .arg(shards.join("0.tar"))
        .output()
    {
        if o.status.success() {
            assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 4);
        }
    }
    let sim = fast_sim();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let run = Run::with_url(&url)
        .model("vl")
        .flags("--dataset flickr8k")
        .flag("--dataset-path", dir.path().join("wds_flickr8k"))
        .flags("--number 3 --no-test-connection");
    run.ok();
    let bodies: Vec<Value> = sim
        .requests()
        .iter()
        .map(|r| serde_json::from_str(&r.1).unwrap())
        .collect();
    assert_eq!(bodies.len(), 3);
    let content = &bodies[1]["messages"][0]["content"];
    assert_eq!(content[0]["text"], "Two children play.");
    let url = content[1]["image_url"]["url"].as_str().unwrap();
    let b64 = url.strip_prefix("data:image/jpeg;base64,").unwrap();
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
        b"\xff\xd8\xff\xe0another"
    );
    assert_eq!(bodies[2], bodies[0], "cycled");
}

#[test]
fn text_datasets_from_local_files() {
    let dir = tempfile::tempdir().unwrap();
    let alpaca = dir.path().join("LongAlpaca-12k.json");
    std::fs::write(
        &alpaca,
        r#"[{"instruction": " Summarise this paper. ", "output": "..."}]"#,
    )
    .unwrap();
    let sharegpt = dir.path().join("sharegpt");
    std::fs::create_dir(&sharegpt).unwrap();
    std::fs::write(
        sharegpt.join("common_en_70k.jsonl"),
        "{\"conversation\": [{\"human\": \"hi\", \"assistant\": \"hello\"}, {\"human\": \"tell me more\", \"assistant\": \"ok\"}]}\n",
    )
    .unwrap();
    let sim = fast_sim();
    for (dataset, path) in [("longalpaca", &alpaca), ("share_gpt_en", &sharegpt)] {
        Run::at(&sim, "/v1/chat/completions")
            .flag("--dataset", dataset)
            .flag("--dataset-path", path)
            .flags("--number 1 --no-test-connection")
            .ok();
    }
    let bodies: Vec<Value> = sim
        .requests()
        .iter()
        .map(|r| serde_json::from_str(&r.1).unwrap())
        .collect();
    assert_eq!(
        bodies[0]["messages"],
        serde_json::json!([{"role": "user", "content": "Summarise this paper."}])
    );
    assert_eq!(
        bodies[1]["messages"],
        serde_json::json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "tell me more"}
        ])
    );
}

#[test]
fn target_input_len_fits_prompts_with_a_prefix_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("p.txt");
    let long = "word ".repeat(200);
    std::fs::write(&data, format!("short prompt here\n{long}\n")).unwrap();
    let prefix = dir.path().join("prefix.txt");
    std::fs::write(&prefix, "The quick brown fox jumps over the lazy dog. ").unwrap();
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/completions")
        .flags("--dataset line_by_line")
        .flag("--dataset-path", &data)
        .flag("--tokenizer-path", tokenizer_dir("qwen3"))
        .flag(
            "--dataset-args",
            format!(
                r#"{{"target_input_len": 50, "prefix_file": "{}", "prefix_role": "user"}}"#,
                prefix.display()
            ),
        )
        .flags("--number 2 --no-test-connection");
    run.ok();
    let tok = raw_tokenizer("qwen3");
    let prompts: Vec<String> = sim
        .requests()
        .iter()
        .map(|r| {
            serde_json::from_str::<Value>(&r.1).unwrap()["prompt"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(
        prompts[0].ends_with("short prompt here") && prompts[0].starts_with("The quick brown fox"),
        "{}",
        prompts[0]
    );
    // The long prompt is cut to exactly 50 tokens; the short one gets a prefix of exactly 50 − 3 tokens
    // (the tiled corpus re-encodes short at its seams, so it is topped up, as in evalscope).
    let content = count(&tok, "short prompt here");
    let prefix_text = &prompts[0][..prompts[0].len() - "short prompt here".len()];
    assert_eq!(count(&tok, prefix_text), 50 - content);
    assert_eq!(count(&tok, &prompts[1]), 50);
    assert!(prompts[1].starts_with("word word"));
}

#[test]
fn speed_benchmark_uses_completions_and_writes_its_table() {
    let sim = fast_sim();
    let run = Run::at(&sim, "/v1/chat/completions")
        .flags("--dataset speed_benchmark --number 8 --max-tokens 3 --no-test-connection");
    let output = run.output();
    ok(&output);
    let console = stderr(&output);
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 8);
    let lens: Vec<usize> = reqs
        .iter()
        .map(|r| {
            assert_eq!(r.0, "/v1/completions");
            let v: Value = serde_json::from_str(&r.1).unwrap();
            v["prompt"]
                .as_str()
                .unwrap()
                .chars()
                .filter(|&c| c == '熵')
                .count()
        })
        .collect();
    assert_eq!(lens, [1, 1, 6144, 6144, 14336, 14336, 30720, 30720]);
    let table = json_file(
        &run.run_dir("parallel_1_number_8")
            .join("speed_benchmark.json"),
    );
    let rows = table.as_array().unwrap();
    // The simulator counts one prompt token per word: every prompt is one word.
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["Prompt Tokens"], 1);
    let speed = rows[0]["Speed(tokens/s)"].as_f64().unwrap();
    assert!(speed > 0.0);
    assert_eq!(rows[0]["GPU Memory(GB)"], 0.0);
    // The console shows evalscope's tabulate `simple_grid` table of the same rows.
    let speed = llmperf::export::speed_benchmark::py_g(speed);
    let row = format!("│               1 │ {speed:>17} │                0 │");
    let log = std::fs::read_to_string(run.root().join("benchmark.log")).unwrap();
    for text in [&console, &log] {
        assert!(text.contains("Speed Benchmark Results:\n┌─────────────────┬───────────────────┬──────────────────┐\n│   Prompt Tokens │   Speed(tokens/s) │   GPU Memory(GB) │"), "{text}");
        assert!(text.contains(&row), "{row}\n{text}");
    }
}
