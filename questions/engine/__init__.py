"""The engine and the wires: the provider backends, the batch engine, webhooks' sends, the
workers."""
