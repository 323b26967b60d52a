"""Telemetry: GPU (NVML) and host (psutil) samples taken on a background thread during training."""
