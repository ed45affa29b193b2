//! Why `--api local` / `local_vllm` has no server to start (a usage error: exit 2 before anything runs).

/// No local server can serve the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalServerError {
    /// `--api local_vllm` and vLLM is not installed for `python`.
    #[error(
        "--api local_vllm: vLLM is not installed for {python}: `{python} -m vllm.entrypoints.openai.api_server` cannot be found (pip install vllm, or set LLMPERF_PYTHON to a Python that has it)"
    )]
    NoVllm {
        /// The Python looked in.
        python: String,
    },
    /// `--api local`: neither vLLM nor llama.cpp's `llama-server` (for a `.gguf` model) is available.
    #[error(
        "--api local: no local server for --model {model}: vLLM is not installed for {python} (pip install vllm, or set LLMPERF_PYTHON to a Python that has it), and {}",
        if *.gguf { "llama.cpp's llama-server is not on PATH" } else { "the model is not a .gguf file for llama.cpp's llama-server" }
    )]
    NoServer {
        /// `--model`.
        model: String,
        /// The Python looked in.
        python: String,
        /// Whether the model is a `.gguf` file (then `llama-server` is missing).
        gguf: bool,
    },
}
