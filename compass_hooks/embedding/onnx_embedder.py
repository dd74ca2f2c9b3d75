"""The runtime embedder: onnxruntime + tokenizers + numpy, nothing else."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import ModelCorrupt
from .manifest import ModelManifest


class OnnxEmbedder:
    def __init__(self, manifest: ModelManifest, threads: int = 1, int8: bool = False, batch_size: int = 32):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        assert manifest.path is not None
        self.manifest = manifest
        self.name = manifest.name
        self.dim = int(manifest.dim)
        self.languages = tuple(manifest.covered_languages())  # the drift scorer reads only these with the embedding
        self.batch_size = max(1, batch_size)
        self.int8 = bool(int8 and manifest.has_int8)
        try:
            self.tokenizer = Tokenizer.from_file(str(manifest.path / "tokenizer.json"))
        except Exception as exc:  # tokenizers raises plain Exception subclasses
            raise ModelCorrupt(f"cannot load {manifest.path / 'tokenizer.json'}: {exc}", "re-export with --force") from None
        self.tokenizer.enable_truncation(max_length=int(manifest.max_tokens))
        self.tokenizer.no_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = max(1, threads)
        opts.inter_op_num_threads = 1
        # Spinning threads fight numpy/BLAS for the cores between requests.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        path = manifest.onnx_path(self.int8)
        try:
            self.session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ModelCorrupt(f"cannot load {path}: {exc}", "re-export with `compass-hook model export --force`") from None
        self._inputs = {i.name for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        self._output = manifest.output if manifest.output in outputs else outputs[0]
        self._pooled = self._output == "sentence_embedding"

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        encs = self.tokenizer.encode_batch(list(texts))
        width = max(1, max(len(e.ids) for e in encs))
        ids = np.zeros((len(encs), width), dtype=np.int64)
        mask = np.zeros((len(encs), width), dtype=np.int64)
        for row, enc in enumerate(encs):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        out = self.session.run([self._output], feeds)[0]
        if not self._pooled:  # token embeddings: pool as the manifest says
            if self.manifest.pooling == "cls":
                out = out[:, 0]
            else:
                m = mask[..., None].astype(out.dtype)
                out = (out * m).sum(1) / np.clip(m.sum(1), 1e-9, None)
        return out.astype(np.float32, copy=False)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Sort by length so each batch pads little; restore order at the end.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = self._run([texts[i] or " " for i in idx])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
