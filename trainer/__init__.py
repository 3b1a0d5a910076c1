"""The GRPO trainer: a synchronous baseline and the asynchronous pipeline."""
