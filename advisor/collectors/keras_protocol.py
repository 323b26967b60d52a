"""The Keras callback protocol, spoken without inheriting from Keras.

Keras 3 and legacy tf_keras (Keras 2) call the same hooks with small differences; a class that
defines them all works under both, so ``AdvisorCallback`` imports no Keras and the same user code
runs under ``TF_USE_LEGACY_KERAS=1``. The hooks the advisor does not use are no-ops here.
"""

from __future__ import annotations

from typing import Any

Logs = dict[str, Any] | None


class KerasCallbackProtocol:
    params: dict[str, Any] | None = None
    _model: Any = None
    _supports_tf_logs = True  # tf_keras: our batch hooks never read logs, so never convert them
    _chief_worker_only = None  # tf_keras multi-worker: run on every worker

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    def set_model(self, model: Any) -> None:
        self._model = model

    @property
    def model(self) -> Any:
        return self._model

    def _implements_train_batch_hooks(self) -> bool:
        return True

    def _implements_test_batch_hooks(self) -> bool:
        return False

    def _implements_predict_batch_hooks(self) -> bool:
        return False

    def on_test_batch_begin(self, batch: int, logs: Logs = None) -> None: ...

    def on_test_batch_end(self, batch: int, logs: Logs = None) -> None: ...

    def on_predict_begin(self, logs: Logs = None) -> None: ...

    def on_predict_end(self, logs: Logs = None) -> None: ...

    def on_predict_batch_begin(self, batch: int, logs: Logs = None) -> None: ...

    def on_predict_batch_end(self, batch: int, logs: Logs = None) -> None: ...

    def on_batch_begin(self, batch: int, logs: Logs = None) -> None: ...

    def on_batch_end(self, batch: int, logs: Logs = None) -> None: ...
