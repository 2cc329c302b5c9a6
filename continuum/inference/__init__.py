"""The models Continuum runs: embeddings, the OpenAI-compatible LLM client, the tokenizer of context budgets."""
