"""Where users already work: MLflow export of a run's metrics, report and plots.

Offline like the CLI: it reads runs through :mod:`advisor.service` and renders with
:mod:`advisor.render`. :mod:`advisor.integrations.mlflow_metrics` is the exception every side may
import: pure arithmetic over records, shared by the in-fit MLflow logger and the export.
"""
