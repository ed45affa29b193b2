//! The parquet image datasets, as evalscope builds them:
//! * `kontext_bench` (`black-forest-labs/kontext-bench`, split `test`): one user message per row,
//!   `[text: instruction or "Describe the image", image]`.
//! * `mmmu_multi_image` (`MMMU/MMMU`, split `validation` of 30 subject folders): rows with 2–7 of the
//!   images `image_1` … `image_7`, taken round-robin across the subjects in evalscope's order; the prompt
//!   is the question plus `\nOptions: <options>`, and its `<image N>` / `<image_N>` placeholders are
//!   replaced by the images in place.
//!
//! Images are re-encoded to JPEG (quality 75, PIL's default) and sent as `data:image/jpeg;base64,…`, as
//! evalscope's `PIL_to_base64` does; modes JPEG cannot hold (alpha, palette, 16-bit) become RGB first
//! (alpha dropped, as PIL's `convert('RGB')`), grey stays grey. The JPEG bytes differ from PIL's (another
//! encoder, 4:2:2 chroma subsampling instead of 4:2:0); the size and content of the picture are the same.

use std::path::Path;

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use image::{DynamicImage, ExtendedColorType};
use serde_json::{json, Value};

use super::parquet_rows::{parquet_files, rows, split_files, Cell, Record};
use super::Item;

/// MMMU's subjects, in the order evalscope round-robins them.
pub const MMMU_SUBJECTS: [&str; 30] = [
    "Accounting",
    "Agriculture",
    "Architecture_and_Engineering",
    "Art",
    "Art_Theory",
    "Basic_Medical_Science",
    "Biology",
    "Chemistry",
    "Clinical_Medicine",
    "Computer_Science",
    "Design",
    "Diagnostics_and_Laboratory_Medicine",
    "Economics",
    "Electronics",
    "Energy_and_Power",
    "Finance",
    "Geography",
    "History",
    "Literature",
    "Manage",
    "Marketing",
    "Materials",
    "Math",
    "Mechanical_Engineering",
    "Music",
    "Pharmacy",
    "Physics",
    "Psychology",
    "Public_Health",
    "Sociology",
];

/// The Hugging Face revision of `MMMU/MMMU` evalscope pins.
pub const MMMU_REVISION: &str = "21d1d90a93c7450d30bddb579d7b510c00b8a9ab";

const MMMU_MIN_IMAGES: usize = 2;
const MMMU_MAX_IMAGES: usize = 7;
const JPEG_QUALITY: u8 = 75;

/// A file of the hub copy of `kontext_bench` that evalscope reads: the `test` split's parquet files.
pub(super) fn kontext_file(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    path.ends_with(".parquet")
        && (path.split('/').any(|p| p == "test") || base.starts_with("test-"))
}

/// A file of the hub copy of `MMMU/MMMU` that evalscope reads: `<Subject>/validation-*.parquet`.
pub(super) fn mmmu_file(path: &str) -> bool {
    match path.split_once('/') {
        Some((subject, file)) => {
            MMMU_SUBJECTS.contains(&subject)
                && file.starts_with("validation-")
                && file.ends_with(".parquet")
        }
        None => false,
    }
}

/// `image` bytes as evalscope's `PIL_to_base64(image, 'JPEG', add_header=True)`.
pub fn jpeg_data_url(encoded: &[u8]) -> Result<String> {
    let img = image::load_from_memory(encoded).context("cannot decode the image")?;
    let (w, h) = (img.width(), img.height());
    let mut jpeg = Vec::new();
    let mut enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, JPEG_QUALITY);
    match img {
        DynamicImage::ImageLuma8(grey) => enc.encode(grey.as_raw(), w, h, ExtendedColorType::L8),
        other => enc.encode(other.to_rgb8().as_raw(), w, h, ExtendedColorType::Rgb8),
    }
    .context("cannot encode the image as JPEG")?;
    let mut url = String::with_capacity(23 + jpeg.len() * 4 / 3 + 4);
    url.push_str("data:image/jpeg;base64,");
    base64::engine::general_purpose::STANDARD.encode_string(&jpeg, &mut url);
    Ok(url)
}

/// The encoded bytes of an image cell: inline bytes, else the file at its path; `None` when empty.
fn image_bytes(cell: Option<&Cell>) -> Result<Option<Vec<u8>>> {
    match cell {
        Some(Cell::Image { bytes: Some(b), .. }) if !b.is_empty() => Ok(Some(b.clone())),
        Some(Cell::Image { path: Some(p), .. }) if !p.is_empty() => std::fs::read(p)
            .map(Some)
            .with_context(|| format!("reading the image file {p}")),
        Some(Cell::Bytes(b)) if !b.is_empty() => Ok(Some(b.clone())),
        _ => Ok(None),
    }
}

fn text_part(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn image_part(url: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": url}})
}

/// evalscope's `create_message(text, image_urls)`: text first, then the images.
fn message(text: &str, urls: &[&str]) -> Value {
    let mut content = vec![text_part(text)];
    content.extend(urls.iter().map(|u| image_part(u)));
    json!({"role": "user", "content": content})
}

/// One `kontext_bench` row as its message.
pub fn kontext_message(row: &Record) -> Result<Option<Value>> {
    let Some(bytes) = image_bytes(row.get("image"))? else {
        bail!("a row has no image");
    };
    let text = row
        .get("instruction")
        .and_then(Cell::text)
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "Describe the image".to_string());
    Ok(Some(message(&text, &[&jpeg_data_url(&bytes)?])))
}

/// The MMMU prompt: the question, then `\nOptions: <options>` unless they are empty or `[]`.
pub fn mmmu_prompt(row: &Record) -> String {
    let mut prompt = row.get("question").and_then(Cell::text).unwrap_or_default();
    if let Some(options) = row.get("options").and_then(Cell::text) {
        if !options.is_empty() && options != "[]" {
            prompt.push_str("\nOptions: ");
            prompt.push_str(&options);
        }
    }
    prompt
}

/// The `<image N>` / `<image_N>` placeholders of `prompt`: `(start, end, N)`.
fn placeholders(prompt: &str) -> Vec<(usize, usize, Option<usize>)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = prompt[from..].find("<image") {
        let start = from + at;
        let rest = &prompt[start + 6..];
        let digits = rest
            .strip_prefix([' ', '_'])
            .map(|r| r.chars().take_while(char::is_ascii_digit).count())
            .unwrap_or(0);
        if digits > 0 && rest[1 + digits..].starts_with('>') {
            let end = start + 6 + 1 + digits + 1;
            found.push((start, end, rest[1..1 + digits].parse().ok()));
            from = end;
        } else {
            from = start + 6;
        }
    }
    found
}

/// evalscope's `_create_message_with_placeholders`: `images[i]` is image `i + 1` (`None` when absent).
pub fn mmmu_message(prompt: &str, images: &[Option<String>]) -> Value {
    let present: Vec<&str> = images.iter().flatten().map(String::as_str).collect();
    let marks = placeholders(prompt);
    if marks.is_empty() {
        return message(prompt, &present);
    }
    let mut content = Vec::new();
    let mut last = 0;
    for (start, end, n) in marks {
        let segment = &prompt[last..start];
        if !segment.trim().is_empty() {
            content.push(text_part(segment));
        }
        if let Some(Some(url)) = n.and_then(|n| n.checked_sub(1)).and_then(|i| images.get(i)) {
            content.push(image_part(url));
        }
        last = end;
    }
    if !prompt[last..].trim().is_empty() {
        content.push(text_part(&prompt[last..]));
    }
    if content.is_empty() {
        return message(prompt, &present);
    }
    json!({"role": "user", "content": content})
}

/// One MMMU row as its message, or `None` when it has fewer than two images.
pub fn mmmu_row_message(row: &Record) -> Result<Option<Value>> {
    let mut images = Vec::with_capacity(MMMU_MAX_IMAGES);
    for n in 1..=MMMU_MAX_IMAGES {
        let url = match image_bytes(row.get(&format!("image_{n}")))? {
            Some(b) => Some(jpeg_data_url(&b).with_context(|| format!("image_{n}"))?),
            None => None,
        };
        images.push(url);
    }
    if images.iter().flatten().count() < MMMU_MIN_IMAGES {
        return Ok(None);
    }
    Ok(Some(mmmu_message(&mmmu_prompt(row), &images)))
}

fn row_label(row: &Record, index: usize) -> String {
    match row.get("id").and_then(Cell::text) {
        Some(id) => format!("row {index} (id {id})"),
        None => format!("row {index}"),
    }
}

/// `kontext_bench` items from a parquet file or the `test` split of a folder.
pub fn kontext_bench(path: &Path, limit: usize) -> Result<Vec<Item>> {
    let files = files_of(
        path,
        "test",
        "black-forest-labs/kontext-bench, e.g. data/test-*.parquet",
    )?;
    let mut items = Vec::new();
    for (i, row) in rows(files).enumerate() {
        if items.len() >= limit {
            break;
        }
        let row = row?;
        if let Some(m) = kontext_message(&row)
            .with_context(|| format!("--dataset kontext_bench: {}", row_label(&row, i)))?
        {
            items.push(Item::Chat(vec![m]));
        }
    }
    Ok(items)
}

fn files_of(path: &Path, split: &str, expected: &str) -> Result<Vec<std::path::PathBuf>> {
    let files = if path.is_file() {
        vec![path.to_path_buf()]
    } else {
        split_files(path, parquet_files(path)?, split)
    };
    if files.is_empty() {
        bail!(
            "--dataset-path {}: no .parquet files of the {split} split (expected the hub files of {expected})",
            path.display()
        );
    }
    Ok(files)
}

/// `mmmu_multi_image` items: the `validation` split of each subject folder present, round-robin in
/// evalscope's subject order. A single parquet file, or a folder without subject folders, is one subject.
pub fn mmmu_multi_image(path: &Path, limit: usize) -> Result<Vec<Item>> {
    let expected = "MMMU/MMMU, e.g. Art/validation-00000-of-00001.parquet";
    let subjects: Vec<_> = MMMU_SUBJECTS
        .iter()
        .map(|s| path.join(s))
        .filter(|d| d.is_dir())
        .collect();
    let mut streams: Vec<Box<dyn Iterator<Item = Result<Record>>>> = Vec::new();
    if subjects.is_empty() {
        streams.push(Box::new(rows(files_of(path, "validation", expected)?)));
    } else {
        for dir in subjects {
            let files = split_files(&dir, parquet_files(&dir)?, "validation");
            if !files.is_empty() {
                streams.push(Box::new(rows(files)));
            }
        }
        if streams.is_empty() {
            bail!(
                "--dataset-path {}: its subject folders hold no .parquet files of the validation split (expected the hub files of {expected})",
                path.display()
            );
        }
    }
    let mut items = Vec::new();
    let mut index = 0;
    while !streams.is_empty() && items.len() < limit {
        let mut active = Vec::with_capacity(streams.len());
        for mut stream in streams {
            if items.len() >= limit {
                break;
            }
            let Some(row) = stream.next() else { continue };
            let row = row?;
            active.push(stream);
            let m = mmmu_row_message(&row).with_context(|| {
                format!("--dataset mmmu_multi_image: {}", row_label(&row, index))
            })?;
            index += 1;
            if let Some(m) = m {
                items.push(Item::Chat(vec![m]));
            }
        }
        streams = active;
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    #[test]
    fn only_the_files_evalscope_reads_are_downloaded() {
        assert!(kontext_file("data/test-00000-of-00001.parquet"));
        assert!(kontext_file("test/0000.parquet"));
        assert!(!kontext_file("data/train-00000-of-00001.parquet"));
        assert!(!kontext_file("README.md"));
        assert!(mmmu_file("Art/validation-00000-of-00001.parquet"));
        assert!(!mmmu_file("Art/dev-00000-of-00001.parquet"));
        assert!(!mmmu_file("Unknown/validation-00000-of-00001.parquet"));
        assert!(!mmmu_file("validation-00000-of-00001.parquet"));
    }

    fn png(w: u32, h: u32, rgba: bool) -> Vec<u8> {
        let img = if rgba {
            DynamicImage::ImageRgba8(image::RgbaImage::from_pixel(
                w,
                h,
                [10, 200, 30, 100].into(),
            ))
        } else {
            DynamicImage::ImageRgb8(image::RgbImage::from_pixel(w, h, [10, 200, 30].into()))
        };
        let mut out = Vec::new();
        img.write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out
    }

    fn decode(url: &str) -> DynamicImage {
        let b64 = url.strip_prefix("data:image/jpeg;base64,").unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg).unwrap()
    }

    fn img(bytes: Vec<u8>) -> Cell {
        Cell::Image {
            bytes: Some(bytes),
            path: None,
        }
    }

    #[test]
    fn rgba_png_becomes_an_rgb_jpeg_of_the_same_size() {
        let out = decode(&jpeg_data_url(&png(9, 5, true)).unwrap());
        assert_eq!((out.width(), out.height()), (9, 5));
        assert_eq!(out.color(), image::ColorType::Rgb8);
        let px = out.to_rgb8().get_pixel(4, 2).0;
        assert!(px[1] > 150 && px[0] < 60, "{px:?}");
    }

    #[test]
    fn placeholders_become_images_in_place() {
        let urls = vec![Some("u1".to_string()), None, Some("u3".to_string())];
        let m = mmmu_message(
            "Compare <image 1> and <image_3>.  <image 2> <image 9>",
            &urls,
        );
        let c = m["content"].as_array().unwrap();
        let kinds: Vec<String> = c
            .iter()
            .map(|p| {
                p["text"]
                    .as_str()
                    .map(|t| format!("t:{t}"))
                    .unwrap_or_else(|| format!("i:{}", p["image_url"]["url"].as_str().unwrap()))
            })
            .collect();
        assert_eq!(kinds, ["t:Compare ", "i:u1", "t: and ", "i:u3", "t:.  "]);
        // No placeholder: text, then every image in order.
        let m = mmmu_message("Which is larger?", &urls);
        assert_eq!(m["content"].as_array().unwrap().len(), 3);
        assert_eq!(m["content"][2]["image_url"]["url"], "u3");
        // Only placeholders without images: back to text + all images.
        let m = mmmu_message("<image 5>", &urls);
        assert_eq!(m["content"][0]["text"], "<image 5>");
        assert_eq!(
            placeholders("<image> <image x> <image_12>"),
            [(18, 28, Some(12))]
        );
    }

    #[test]
    fn mmmu_rows_need_two_images_and_carry_options() {
        let mut row = Record::new();
        row.insert("question".into(), Cell::Text("Q <image 1>?".into()));
        row.insert("options".into(), Cell::Text("['A', 'B']".into()));
        row.insert("image_1".into(), img(png(4, 4, false)));
        row.insert("image_2".into(), Cell::Null);
        assert_eq!(mmmu_row_message(&row).unwrap(), None);
        row.insert("image_4".into(), img(png(3, 2, true)));
        let m = mmmu_row_message(&row).unwrap().unwrap();
        let c = m["content"].as_array().unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0]["text"], "Q ");
        assert_eq!(c[2]["text"], "?\nOptions: ['A', 'B']");
        row.insert("options".into(), Cell::Text("[]".into()));
        assert_eq!(mmmu_prompt(&row), "Q <image 1>?");
    }

    #[test]
    fn kontext_defaults_the_instruction() {
        let mut row = Record::new();
        row.insert("image".into(), img(png(6, 7, false)));
        row.insert("instruction".into(), Cell::Null);
        let m = kontext_message(&row).unwrap().unwrap();
        assert_eq!(m["content"][0]["text"], "Describe the image");
        let out = decode(m["content"][1]["image_url"]["url"].as_str().unwrap());
        assert_eq!((out.width(), out.height()), (6, 7));
    }
}
