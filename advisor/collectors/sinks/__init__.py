"""Sinks: collectors that send the measurements elsewhere while training (CloudWatch, MLflow)."""
