//! The typed values of a plan: API, load mode, prompt source, dataset kinds and their settings.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{ApiName, DatasetName};

/// Which API plugin talks to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKind {
    /// OpenAI-compatible `/v1/chat/completions` or `/v1/completions`.
    OpenAi,
    /// The built-in simulator, started in-process; requests are OpenAI-shaped.
    Mock,
    /// `/v1/embeddings` (`openai_embedding`, `embedding`): `{"input": …}` bodies, input tokens only.
    Embedding,
    /// `/v1/reranks` (`openai_rerank`, `rerank`): `{"query": …, "documents": […]}` bodies, input tokens only.
    Rerank,
    /// `/v1/responses` (`openai_responses`, `openai_response`, `responses`): the OpenAI Responses API.
    Responses,
}

impl ApiKind {
    /// Embedding and rerank APIs measure input only: no connection test, input-only summary columns.
    pub fn input_only(self) -> bool {
        matches!(self, ApiKind::Embedding | ApiKind::Rerank)
    }

    /// The endpoint appended to a URL that names none.
    pub fn endpoint_suffix(self) -> &'static str {
        match self {
            ApiKind::OpenAi | ApiKind::Mock => "chat/completions",
            ApiKind::Embedding => "embeddings",
            ApiKind::Rerank => "reranks",
            ApiKind::Responses => "responses",
        }
    }
}

/// Closed loop (fixed concurrency) or open loop (arrival rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadMode {
    /// `--parallel` requests in flight; optional Poisson pacing by the first `--rate`.
    Closed,
    /// Poisson arrivals at `--rate`, no concurrency cap.
    Open,
}

/// Where prompts come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptSource {
    /// `--prompt`: one fixed prompt, one body reused by every request.
    Fixed(String),
    /// A dataset: a file or folder, or synthetic.
    Dataset {
        /// The dataset plugin.
        kind: DatasetKind,
        /// `--dataset-path` (`None` for synthetic datasets).
        path: Option<PathBuf>,
    },
}

/// The dataset plugins this build supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasetKind {
    /// JSONL with a `question` field per line.
    OpenQa,
    /// Plain lines, JSON message arrays or whole JSON bodies.
    LineByLine,
    /// Plain lines.
    Custom,
    /// BFCL question/function files (chat bodies with tools).
    Bfcl,
    /// Random token windows of exact length (spec §3.1).
    Random,
    /// `random` text plus random PNG images.
    RandomVl,
    /// Embedding inputs from a `.txt` / `.json` / `.jsonl` file, one string per request.
    Embedding,
    /// As `embedding`, `batch_size` strings per request.
    EmbeddingBatch,
    /// Random-token strings for embeddings.
    RandomEmbedding,
    /// As `random_embedding`, `batch_size` strings per request.
    RandomEmbeddingBatch,
    /// Query/documents records from a file.
    Rerank,
    /// Random query and documents.
    RandomRerank,
    /// LongAlpaca-12k JSON list (`instruction`).
    LongAlpaca,
    /// ShareGPT Chinese conversations (`common_zh_70k.jsonl`).
    ShareGptZh,
    /// ShareGPT English conversations (`common_en_70k.jsonl`).
    ShareGptEn,
    /// `'熵' * L` for L in 1, 6144, 14336, 30720.
    SpeedBenchmark,
    /// `'熵' * L` for L in 63488, 129024.
    SpeedBenchmarkLong,
    /// Flickr8k webdataset shards (jpg + txt).
    Flickr8k,
    /// Kontext-bench (image + instruction).
    KontextBench,
    /// MMMU questions with several images.
    MmmuMultiImage,
    /// Synthetic multi-turn conversations (random token windows per turn).
    RandomMultiTurn,
    /// ShareGPT Chinese conversations, one turn per human message.
    ShareGptZhMultiTurn,
    /// ShareGPT English conversations, one turn per human message.
    ShareGptEnMultiTurn,
    /// JSONL lines of message arrays, turns split at assistant messages.
    CustomMultiTurn,
    /// Recorded request bodies replayed at their recorded arrival times.
    WorkloadTrace,
    /// SWE-smith agent conversations (pre-built `agentic_dataset.json`).
    SweSmith,
    /// Mooncake JSONL trace, prompts synthesized to its lengths and hash ids.
    MooncakeTrace,
    /// BurstGPT CSV trace, prompts synthesized to its lengths.
    BurstGptTrace,
    /// Azure LLM inference CSV trace, prompts synthesized to its lengths.
    AzureTrace,
    /// Trie agentic traces (`agentic_coding_8k.jsonl`).
    TrieAgenticCoding,
    /// Trie code Q&A traces (`code_qa_8k.jsonl`).
    TrieCodeQa,
    /// Trie office-work traces (`office_work_8k.jsonl`).
    TrieOfficeWork,
}

impl From<ApiName> for ApiKind {
    fn from(name: ApiName) -> ApiKind {
        match name {
            ApiName::OpenAi | ApiName::Local | ApiName::LocalVllm => ApiKind::OpenAi,
            ApiName::Mock => ApiKind::Mock,
            ApiName::OpenAiEmbedding | ApiName::Embedding => ApiKind::Embedding,
            ApiName::OpenAiRerank | ApiName::Rerank => ApiKind::Rerank,
            ApiName::OpenAiResponses | ApiName::OpenAiResponse | ApiName::Responses => {
                ApiKind::Responses
            }
        }
    }
}

impl From<DatasetName> for DatasetKind {
    fn from(name: DatasetName) -> DatasetKind {
        use DatasetName as N;
        match name {
            N::OpenQa | N::OpenQaAlias => DatasetKind::OpenQa,
            N::LineByLine => DatasetKind::LineByLine,
            N::Custom => DatasetKind::Custom,
            N::Bfcl => DatasetKind::Bfcl,
            N::Random => DatasetKind::Random,
            N::RandomVl => DatasetKind::RandomVl,
            N::Embedding | N::Embed => DatasetKind::Embedding,
            N::EmbeddingBatch => DatasetKind::EmbeddingBatch,
            N::RandomEmbedding => DatasetKind::RandomEmbedding,
            N::RandomEmbeddingBatch => DatasetKind::RandomEmbeddingBatch,
            N::Rerank => DatasetKind::Rerank,
            N::RandomRerank => DatasetKind::RandomRerank,
            N::LongAlpaca => DatasetKind::LongAlpaca,
            N::ShareGptZh => DatasetKind::ShareGptZh,
            N::ShareGptEn => DatasetKind::ShareGptEn,
            N::SpeedBenchmark => DatasetKind::SpeedBenchmark,
            N::SpeedBenchmarkLong => DatasetKind::SpeedBenchmarkLong,
            N::Flickr8k => DatasetKind::Flickr8k,
            N::KontextBench => DatasetKind::KontextBench,
            N::MmmuMultiImage => DatasetKind::MmmuMultiImage,
            N::RandomMultiTurn => DatasetKind::RandomMultiTurn,
            N::ShareGptZhMultiTurn => DatasetKind::ShareGptZhMultiTurn,
            N::ShareGptEnMultiTurn => DatasetKind::ShareGptEnMultiTurn,
            N::CustomMultiTurn => DatasetKind::CustomMultiTurn,
            N::WorkloadTrace => DatasetKind::WorkloadTrace,
            N::SweSmith => DatasetKind::SweSmith,
            N::MooncakeTrace => DatasetKind::MooncakeTrace,
            N::BurstGptTrace => DatasetKind::BurstGptTrace,
            N::AzureTrace => DatasetKind::AzureTrace,
            N::TrieAgenticCoding => DatasetKind::TrieAgenticCoding,
            N::TrieCodeQa => DatasetKind::TrieCodeQa,
            N::TrieOfficeWork => DatasetKind::TrieOfficeWork,
        }
    }
}

impl DatasetKind {
    /// The `--dataset` name (the canonical one when it has an alias).
    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::OpenQa => "openqa",
            DatasetKind::LineByLine => "line_by_line",
            DatasetKind::Custom => "custom",
            DatasetKind::Bfcl => "bfcl",
            DatasetKind::Random => "random",
            DatasetKind::RandomVl => "random_vl",
            DatasetKind::Embedding => "embedding",
            DatasetKind::EmbeddingBatch => "embedding_batch",
            DatasetKind::RandomEmbedding => "random_embedding",
            DatasetKind::RandomEmbeddingBatch => "random_embedding_batch",
            DatasetKind::Rerank => "rerank",
            DatasetKind::RandomRerank => "random_rerank",
            DatasetKind::LongAlpaca => "longalpaca",
            DatasetKind::ShareGptZh => "share_gpt_zh",
            DatasetKind::ShareGptEn => "share_gpt_en",
            DatasetKind::SpeedBenchmark => "speed_benchmark",
            DatasetKind::SpeedBenchmarkLong => "speed_benchmark_long",
            DatasetKind::Flickr8k => "flickr8k",
            DatasetKind::KontextBench => "kontext_bench",
            DatasetKind::MmmuMultiImage => "mmmu_multi_image",
            DatasetKind::RandomMultiTurn => "random_multi_turn",
            DatasetKind::ShareGptZhMultiTurn => "share_gpt_zh_multi_turn",
            DatasetKind::ShareGptEnMultiTurn => "share_gpt_en_multi_turn",
            DatasetKind::CustomMultiTurn => "custom_multi_turn",
            DatasetKind::WorkloadTrace => "workload_trace",
            DatasetKind::SweSmith => "swe_smith",
            DatasetKind::MooncakeTrace => "mooncake_trace",
            DatasetKind::BurstGptTrace => "burstgpt_trace",
            DatasetKind::AzureTrace => "azure_trace",
            DatasetKind::TrieAgenticCoding => "trie_agentic_coding",
            DatasetKind::TrieCodeQa => "trie_code_qa",
            DatasetKind::TrieOfficeWork => "trie_office_work",
        }
    }

    /// Datasets whose evalscope schema is `TextDatasetArgs` (`target_input_len`, `input_len_mode`,
    /// `prefix_file`, `prefix_role`); every other dataset's schema forbids every key.
    pub fn takes_text_length_args(self) -> bool {
        matches!(
            self,
            DatasetKind::OpenQa
                | DatasetKind::LongAlpaca
                | DatasetKind::ShareGptZh
                | DatasetKind::ShareGptEn
                | DatasetKind::LineByLine
        )
    }

    /// Datasets that also take a local copy of the hub dataset as a folder (image shards, ShareGPT files):
    /// every hub dataset but `swe_smith`, whose `--dataset-path` is one pre-built JSON file.
    pub fn reads_folders(self) -> bool {
        self.has_hub_cache() && self != DatasetKind::SweSmith
    }

    /// Yields whole conversations (runs only with `--multi-turn`).
    pub fn is_multi_turn(self) -> bool {
        matches!(
            self,
            DatasetKind::RandomMultiTurn
                | DatasetKind::ShareGptZhMultiTurn
                | DatasetKind::ShareGptEnMultiTurn
                | DatasetKind::CustomMultiTurn
                | DatasetKind::SweSmith
                | DatasetKind::TrieAgenticCoding
                | DatasetKind::TrieCodeQa
                | DatasetKind::TrieOfficeWork
        )
    }

    /// Hub datasets whose local copy is looked up (or downloaded) when `--dataset-path` is left out
    /// (`swe_smith`: the raw trajectories its conversations are built from).
    pub fn has_hub_cache(self) -> bool {
        matches!(
            self,
            DatasetKind::Flickr8k
                | DatasetKind::SweSmith
                | DatasetKind::KontextBench
                | DatasetKind::MmmuMultiImage
                | DatasetKind::OpenQa
                | DatasetKind::LongAlpaca
                | DatasetKind::ShareGptZh
                | DatasetKind::ShareGptEn
                | DatasetKind::ShareGptZhMultiTurn
                | DatasetKind::ShareGptEnMultiTurn
                | DatasetKind::TrieAgenticCoding
                | DatasetKind::TrieCodeQa
                | DatasetKind::TrieOfficeWork
        )
    }

    /// Generated without a file.
    pub fn is_synthetic(self) -> bool {
        matches!(
            self,
            DatasetKind::Random
                | DatasetKind::RandomVl
                | DatasetKind::RandomEmbedding
                | DatasetKind::RandomEmbeddingBatch
                | DatasetKind::RandomRerank
                | DatasetKind::SpeedBenchmark
                | DatasetKind::SpeedBenchmarkLong
                | DatasetKind::RandomMultiTurn
        )
    }

    /// Cannot run without `--tokenizer-path`.
    pub fn needs_tokenizer(self) -> bool {
        matches!(
            self,
            DatasetKind::RandomMultiTurn
                | DatasetKind::TrieAgenticCoding
                | DatasetKind::TrieCodeQa
                | DatasetKind::TrieOfficeWork
                | DatasetKind::Random
                | DatasetKind::RandomVl
                | DatasetKind::RandomEmbedding
                | DatasetKind::RandomEmbeddingBatch
                | DatasetKind::RandomRerank
        )
    }

    /// Where a user gets the files when there is no `--dataset-path` (the hub copy evalscope downloads).
    pub fn hub_source(self) -> Option<&'static str> {
        match self {
            DatasetKind::OpenQa => Some("AI-ModelScope/HC3-Chinese (open_qa.jsonl)"),
            DatasetKind::SweSmith => Some(
                "SWE-bench/SWE-smith-trajectories (split tool, parquet) and builds conversations from it",
            ),
            DatasetKind::TrieAgenticCoding => {
                Some("evalscope/trie-workloads (agentic_coding_8k.jsonl)")
            }
            DatasetKind::TrieCodeQa => Some("evalscope/trie-workloads (code_qa_8k.jsonl)"),
            DatasetKind::TrieOfficeWork => Some("evalscope/trie-workloads (office_work_8k.jsonl)"),
            DatasetKind::LongAlpaca => Some("Yukang/LongAlpaca-12k (LongAlpaca-12k.json)"),
            DatasetKind::ShareGptZh | DatasetKind::ShareGptZhMultiTurn => {
                Some("swift/sharegpt (common_zh_70k.jsonl)")
            }
            DatasetKind::ShareGptEn | DatasetKind::ShareGptEnMultiTurn => {
                Some("swift/sharegpt (common_en_70k.jsonl)")
            }
            DatasetKind::Flickr8k => Some("clip-benchmark/wds_flickr8k (test/*.tar shards)"),
            DatasetKind::KontextBench => Some("black-forest-labs/kontext-bench (parquet files)"),
            DatasetKind::MmmuMultiImage => {
                Some("AI-ModelScope/MMMU (<subject>/validation-*.parquet)")
            }
            _ => None,
        }
    }
}

/// `input_len_mode` of `--dataset-args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputLenMode {
    /// Keep prompts shorter than `target_input_len` as they are.
    Cap,
    /// Drop prompts shorter than `target_input_len`.
    Drop,
}

/// `prefix_role` of `--dataset-args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixRole {
    /// The prefix text becomes a system message (chat template on).
    System,
    /// The prefix text is put before the user's text.
    User,
}

/// `--dataset-args`, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetArgs {
    /// Fit each prompt to this many tokens.
    pub target_input_len: Option<u64>,
    /// What to do with shorter prompts.
    pub input_len_mode: InputLenMode,
    /// Real-text prefix file (read at load).
    pub prefix_file: Option<PathBuf>,
    /// Where the prefix goes.
    pub prefix_role: PrefixRole,
}

impl Default for DatasetArgs {
    fn default() -> Self {
        DatasetArgs {
            target_input_len: None,
            input_len_mode: InputLenMode::Cap,
            prefix_file: None,
            prefix_role: PrefixRole::System,
        }
    }
}

/// `random_vl` image settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageSettings {
    /// Pixels.
    pub width: u32,
    /// Pixels.
    pub height: u32,
    /// Channels per pixel: 1 (`L`), 3 (`RGB`), 4 (`RGBA`).
    pub channels: u8,
    /// Images per request.
    pub num: u32,
    /// Patch size for the token estimate.
    pub patch_size: u32,
}

impl ImageSettings {
    /// The `--image-format` name of the pixel format: `L`, `RGB` or `RGBA`.
    pub fn format_name(&self) -> &'static str {
        match self.channels {
            1 => "L",
            4 => "RGBA",
            _ => "RGB",
        }
    }
}

/// Token-exact prompt settings (`random`, `--tokenize-prompt`).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenSettings {
    /// `--tokenizer-path`.
    pub tokenizer_path: Option<String>,
    /// `--tokenize-prompt`.
    pub tokenize_prompt: bool,
    /// `--prefix-length`.
    pub prefix_length: u64,
    /// `--prefix-count`.
    pub prefix_count: u64,
}

/// Generation parameters copied into every body.
#[derive(Debug, Clone, PartialEq)]
pub struct GenParams {
    /// `max_tokens` as `(min, max)`; equal when fixed.
    pub max_tokens: (u64, u64),
    /// `min_tokens`.
    pub min_tokens: Option<u64>,
    /// `frequency_penalty`.
    pub frequency_penalty: Option<f64>,
    /// `repetition_penalty`.
    pub repetition_penalty: Option<f64>,
    /// `logprobs: true` when set.
    pub logprobs: bool,
    /// `n`.
    pub n_choices: Option<u64>,
    /// `seed`.
    pub seed: Option<u64>,
    /// `stop`.
    pub stop: Option<Vec<String>>,
    /// `stream`.
    pub stream: bool,
    /// `stop_token_ids`.
    pub stop_token_ids: Option<Vec<i64>>,
    /// `temperature`.
    pub temperature: f64,
    /// `top_p`.
    pub top_p: Option<f64>,
    /// `top_k`.
    pub top_k: Option<i64>,
    /// `--extra-args`, merged last.
    pub extra_args: serde_json::Map<String, serde_json::Value>,
}

/// Request timeouts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    /// `--connect-timeout`.
    pub connect: Option<Duration>,
    /// `--read-timeout` (between reads).
    pub read: Option<Duration>,
    /// `--total-timeout` (whole request; connection-test budget).
    pub total: Duration,
}

/// Simulator settings for `--api mock`.
#[derive(Debug, Clone, PartialEq)]
pub struct MockSettings {
    /// Time to first token.
    pub ttft: Duration,
    /// Time between tokens.
    pub itl: Duration,
    /// Natural output length.
    pub output_tokens: u32,
    /// Simulator runtime threads.
    pub threads: usize,
    /// `--mock-fault` rules.
    pub faults: Vec<crate::sim::FaultRule>,
    /// `--mock-max-batch` (0 = no limit).
    pub max_batch: u32,
    /// `--mock-prefill-tok-per-s` (0 = none).
    pub prefill_tok_per_s: u64,
    /// `--mock-decode-tok-per-s` (0 = none).
    pub decode_tok_per_s: u64,
    /// `--mock-jitter-cv`, seeded by `--seed` (0 without it).
    pub jitter: crate::sim::Jitter,
    /// `--mock-invalid-output-rate` (0 = none).
    pub invalid_output_rate: f64,
    /// `--mock-max-connections` (0 = no limit).
    pub max_connections: u32,
}

/// The shape of a paced schedule (`--burstiness`, `--ramp-up`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArrivalShape {
    /// Gamma shape of the gaps; 1.0 = Poisson.
    pub burstiness: f64,
    /// Seconds over which the rate ramps up linearly from 0; `None` = none.
    pub ramp_up_s: Option<f64>,
}

impl Default for ArrivalShape {
    fn default() -> Self {
        ArrivalShape {
            burstiness: 1.0,
            ramp_up_s: None,
        }
    }
}
