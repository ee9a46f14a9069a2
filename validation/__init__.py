"""The validation harness: real PyTorch and transformers against the engine (see ``validation/README.md``)."""
