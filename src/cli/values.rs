//! The closed sets of names `--api` and `--dataset` accept, as value enums: clap lists them in `--help` and
//! shell completion, and a typo gets "did you mean …". Aliases are variants of their own so the name stays
//! as typed (evalscope writes it so in the run's arguments file); [`crate::plan`] maps each to its plugin.

use std::ffi::OsStr;
use std::marker::PhantomData;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::ValueEnum;

/// `--api`: the API plugin, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiName {
    /// OpenAI-compatible chat/completions and completions.
    #[value(name = "openai")]
    OpenAi,
    /// `/v1/embeddings`.
    #[value(name = "openai_embedding")]
    OpenAiEmbedding,
    /// Alias of `openai_embedding`.
    #[value(name = "embedding")]
    Embedding,
    /// `/v1/reranks`.
    #[value(name = "openai_rerank")]
    OpenAiRerank,
    /// Alias of `openai_rerank`.
    #[value(name = "rerank")]
    Rerank,
    /// The OpenAI Responses API, `/v1/responses`.
    #[value(name = "openai_responses")]
    OpenAiResponses,
    /// Alias of `openai_responses`.
    #[value(name = "openai_response")]
    OpenAiResponse,
    /// Alias of `openai_responses`.
    #[value(name = "responses")]
    Responses,
    /// A local server started for `--model` (vLLM, else llama.cpp for a `.gguf` file).
    #[value(name = "local")]
    Local,
    /// vLLM started for `--model`, as evalscope starts it.
    #[value(name = "local_vllm")]
    LocalVllm,
    /// The built-in simulator, started in-process on a free loopback port.
    #[value(name = "mock")]
    Mock,
}

/// `--dataset`: the dataset plugin, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DatasetName {
    /// JSONL with a `question` field per line.
    #[value(name = "openqa")]
    OpenQa,
    /// Alias of `openqa`.
    #[value(name = "open_qa")]
    OpenQaAlias,
    /// Text lines, JSON message lists or whole JSON bodies.
    #[value(name = "line_by_line")]
    LineByLine,
    /// Text lines.
    #[value(name = "custom")]
    Custom,
    /// The Berkeley Function Calling Leaderboard's question/function files: chat requests with tools.
    #[value(name = "bfcl")]
    Bfcl,
    /// Random token windows of exact length (needs `--tokenizer-path`).
    #[value(name = "random")]
    Random,
    /// `random` text plus random images.
    #[value(name = "random_vl")]
    RandomVl,
    /// One embedding input per request from a file.
    #[value(name = "embedding")]
    Embedding,
    /// Alias of `embedding`.
    #[value(name = "embed")]
    Embed,
    /// Several embedding inputs per request from a file.
    #[value(name = "embedding_batch")]
    EmbeddingBatch,
    /// Random embedding inputs.
    #[value(name = "random_embedding")]
    RandomEmbedding,
    /// Several random embedding inputs per request.
    #[value(name = "random_embedding_batch")]
    RandomEmbeddingBatch,
    /// Query/documents records from a file.
    #[value(name = "rerank")]
    Rerank,
    /// Random query and documents.
    #[value(name = "random_rerank")]
    RandomRerank,
    /// LongAlpaca-12k JSON list.
    #[value(name = "longalpaca")]
    LongAlpaca,
    /// ShareGPT Chinese conversations.
    #[value(name = "share_gpt_zh")]
    ShareGptZh,
    /// ShareGPT English conversations.
    #[value(name = "share_gpt_en")]
    ShareGptEn,
    /// Fixed prompts of 1 to 30,720 tokens.
    #[value(name = "speed_benchmark")]
    SpeedBenchmark,
    /// Fixed prompts of 63,488 and 129,024 tokens.
    #[value(name = "speed_benchmark_long")]
    SpeedBenchmarkLong,
    /// Flickr8k webdataset shards (image + caption).
    #[value(name = "flickr8k")]
    Flickr8k,
    /// Kontext-bench parquet files (image + instruction).
    #[value(name = "kontext_bench")]
    KontextBench,
    /// MMMU questions with several images.
    #[value(name = "mmmu_multi_image")]
    MmmuMultiImage,
    /// Synthetic multi-turn conversations (needs `--multi-turn`, `--max-turns`, `--tokenizer-path`).
    #[value(name = "random_multi_turn")]
    RandomMultiTurn,
    /// ShareGPT Chinese conversations, one turn per user message (needs `--multi-turn`).
    #[value(name = "share_gpt_zh_multi_turn")]
    ShareGptZhMultiTurn,
    /// ShareGPT English conversations, one turn per user message (needs `--multi-turn`).
    #[value(name = "share_gpt_en_multi_turn")]
    ShareGptEnMultiTurn,
    /// JSONL lines of message arrays, turns split at assistant messages (needs `--multi-turn`).
    #[value(name = "custom_multi_turn")]
    CustomMultiTurn,
    /// SWE-smith agent conversations from a pre-built `agentic_dataset.json` (needs `--multi-turn`,
    /// `--dataset-path`).
    #[value(name = "swe_smith")]
    SweSmith,
    /// applied-compute/trie coding-agent traces: synthetic turns of the recorded lengths, recorded
    /// tool latency and output caps (needs `--multi-turn`, `--tokenizer-path`).
    #[value(name = "trie_agentic_coding")]
    TrieAgenticCoding,
    /// applied-compute/trie code Q&A traces (as `trie_agentic_coding`).
    #[value(name = "trie_code_qa")]
    TrieCodeQa,
    /// applied-compute/trie office-work agent traces (as `trie_agentic_coding`).
    #[value(name = "trie_office_work")]
    TrieOfficeWork,
    /// Recorded requests replayed at their recorded times (needs `--open-loop`).
    #[value(name = "workload_trace")]
    WorkloadTrace,
    /// Mooncake JSONL trace (`timestamp` ms, `input_length`, `output_length`, `hash_ids`) replayed with
    /// prompts of the recorded lengths and shared blocks (needs `--open-loop`).
    #[value(name = "mooncake_trace")]
    MooncakeTrace,
    /// BurstGPT CSV trace replayed with prompts of the recorded lengths (needs `--open-loop`).
    #[value(name = "burstgpt_trace")]
    BurstGptTrace,
    /// Azure LLM inference CSV trace replayed with prompts of the recorded lengths (needs `--open-loop`).
    #[value(name = "azure_trace")]
    AzureTrace,
}

impl ApiName {
    /// The name as typed.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiName::OpenAi => "openai",
            ApiName::OpenAiEmbedding => "openai_embedding",
            ApiName::Embedding => "embedding",
            ApiName::OpenAiRerank => "openai_rerank",
            ApiName::Rerank => "rerank",
            ApiName::OpenAiResponses => "openai_responses",
            ApiName::OpenAiResponse => "openai_response",
            ApiName::Responses => "responses",
            ApiName::Local => "local",
            ApiName::LocalVllm => "local_vllm",
            ApiName::Mock => "mock",
        }
    }
}

impl DatasetName {
    /// Replays a trace on its own arrival schedule (`--open-loop`, `--rate` unused).
    pub fn replays_trace(self) -> bool {
        matches!(
            self,
            DatasetName::WorkloadTrace
                | DatasetName::MooncakeTrace
                | DatasetName::BurstGptTrace
                | DatasetName::AzureTrace
        )
    }

    /// The name as typed.
    pub fn as_str(self) -> &'static str {
        match self {
            DatasetName::OpenQa => "openqa",
            DatasetName::OpenQaAlias => "open_qa",
            DatasetName::LineByLine => "line_by_line",
            DatasetName::Custom => "custom",
            DatasetName::Bfcl => "bfcl",
            DatasetName::Random => "random",
            DatasetName::RandomVl => "random_vl",
            DatasetName::Embedding => "embedding",
            DatasetName::Embed => "embed",
            DatasetName::EmbeddingBatch => "embedding_batch",
            DatasetName::RandomEmbedding => "random_embedding",
            DatasetName::RandomEmbeddingBatch => "random_embedding_batch",
            DatasetName::Rerank => "rerank",
            DatasetName::RandomRerank => "random_rerank",
            DatasetName::LongAlpaca => "longalpaca",
            DatasetName::ShareGptZh => "share_gpt_zh",
            DatasetName::ShareGptEn => "share_gpt_en",
            DatasetName::SpeedBenchmark => "speed_benchmark",
            DatasetName::SpeedBenchmarkLong => "speed_benchmark_long",
            DatasetName::Flickr8k => "flickr8k",
            DatasetName::KontextBench => "kontext_bench",
            DatasetName::MmmuMultiImage => "mmmu_multi_image",
            DatasetName::RandomMultiTurn => "random_multi_turn",
            DatasetName::ShareGptZhMultiTurn => "share_gpt_zh_multi_turn",
            DatasetName::ShareGptEnMultiTurn => "share_gpt_en_multi_turn",
            DatasetName::CustomMultiTurn => "custom_multi_turn",
            DatasetName::WorkloadTrace => "workload_trace",
            DatasetName::SweSmith => "swe_smith",
            DatasetName::MooncakeTrace => "mooncake_trace",
            DatasetName::BurstGptTrace => "burstgpt_trace",
            DatasetName::AzureTrace => "azure_trace",
            DatasetName::TrieAgenticCoding => "trie_agentic_coding",
            DatasetName::TrieCodeQa => "trie_code_qa",
            DatasetName::TrieOfficeWork => "trie_office_work",
        }
    }
}

/// A value parser for a closed set of names whose error names the flag, lists the names and, for a typo,
/// suggests the nearest one (`--api opena` → did you mean `openai`?).
#[derive(Clone)]
pub struct NameParser<E> {
    flag: &'static str,
    /// What an unknown value is, e.g. "is not a known dataset".
    unknown: &'static str,
    /// Added after the list of names, e.g. ", or --prompt".
    tail: &'static str,
    kind: PhantomData<fn() -> E>,
}

impl<E> NameParser<E> {
    /// A parser for `flag`.
    pub const fn new(flag: &'static str, unknown: &'static str, tail: &'static str) -> Self {
        NameParser {
            flag,
            unknown,
            tail,
            kind: PhantomData,
        }
    }
}

impl<E: ValueEnum + Clone + Send + Sync + 'static> TypedValueParser for NameParser<E> {
    type Value = E;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<E, clap::Error> {
        let text = value.to_string_lossy();
        if let Ok(v) = E::from_str(&text, false) {
            return Ok(v);
        }
        let names: Vec<String> = E::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value())
            .map(|p| p.get_name().to_string())
            .collect();
        // The suggestion first, on the error line itself; the list and the longer hint after it.
        let mut message = format!("{} {text:?} {}", self.flag, self.unknown);
        if let Some(near) = nearest(&text, &names) {
            message.push_str(&format!("; did you mean `{} {near}`?", self.flag));
        }
        message.push_str(&format!(
            "\n\n  use one of: {}{}\n",
            names.join(", "),
            self.tail
        ));
        Err(clap::Error::raw(ErrorKind::InvalidValue, message).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            E::value_variants()
                .iter()
                .filter_map(|v| v.to_possible_value()),
        ))
    }
}

/// The name closest to `typed` when it is plausibly a typo of it: a prefix of it, or within a third of its
/// length in edits (at least one edit).
fn nearest<'a>(typed: &str, names: &'a [String]) -> Option<&'a str> {
    let typed = typed.to_ascii_lowercase();
    if typed.is_empty() {
        return None;
    }
    if let Some(n) = names.iter().find(|n| n.starts_with(&typed)) {
        return Some(n);
    }
    names
        .iter()
        .map(|n| (edit_distance(&typed, n), n))
        .filter(|(d, n)| *d <= (n.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.as_str())
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<E: ValueEnum>() -> Vec<String> {
        E::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value())
            .map(|p| p.get_name().to_string())
            .collect()
    }

    #[test]
    fn typos_get_the_nearest_name() {
        let api = names::<ApiName>();
        assert_eq!(nearest("opena", &api), Some("openai"));
        assert_eq!(nearest("moc", &api), Some("mock"));
        assert_eq!(nearest("zzzzzz", &api), None);
        let datasets = names::<DatasetName>();
        assert_eq!(nearest("randon", &datasets), Some("random"));
        assert_eq!(nearest("line_by_lines", &datasets), Some("line_by_line"));
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn names_round_trip_as_typed() {
        for v in ApiName::value_variants() {
            let typed = v.as_str();
            assert_eq!(ApiName::from_str(typed, false).unwrap(), *v);
        }
        for v in DatasetName::value_variants() {
            assert_eq!(DatasetName::from_str(v.as_str(), false).unwrap(), *v);
        }
        assert_eq!(
            DatasetName::from_str("open_qa", false).unwrap(),
            DatasetName::OpenQaAlias
        );
    }
}
