"""Faults with a clear message: corrupt model files, corrupt anchor packs, a full disk under the audit log."""

from __future__ import annotations

import shutil

import pytest

from compass_hooks.cli import cli
from compass_hooks.errors import AnchorPackError, ModelCorrupt


@pytest.fixture
def broken_model_dir(real_model, tmp_path, monkeypatch):
    """A copy of the exported MiniLM folder whose files we can break."""
    models = tmp_path / "models"
    shutil.copytree(real_model, models / "minilm", ignore=shutil.ignore_patterns("*.onnx"))
    monkeypatch.setenv("COMPASS_MODEL_DIR", str(models))
    return models / "minilm"


@pytest.mark.model
def test_garbage_model_onnx_raises_model_corrupt(broken_model_dir):
    from compass_hooks.embedding import get_embedder

    (broken_model_dir / "model.onnx").write_bytes(b"\x08\x07 not a protobuf \xff" * 100)
    with pytest.raises(ModelCorrupt) as info:
        get_embedder("minilm")
    assert "model.onnx" in info.value.message and "re-export" in str(info.value)


@pytest.mark.model
def test_garbage_tokenizer_raises_model_corrupt(broken_model_dir, real_model):
    from compass_hooks.embedding import get_embedder

    shutil.copy(real_model / "model.onnx", broken_model_dir / "model.onnx")
    (broken_model_dir / "tokenizer.json").write_text("{ not json")
    with pytest.raises(ModelCorrupt, match="tokenizer.json"):
        get_embedder("minilm")


@pytest.mark.model
def test_corrupt_model_via_cli_is_one_line(broken_model_dir, cli_runner):
    (broken_model_dir / "model.onnx").write_bytes(b"garbage")
    res = cli_runner.invoke(cli, ["embed", "hello"])
    assert res.exit_code == 1
    errors = [line for line in res.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "model.onnx" in errors[0] and "Traceback" not in res.output


def test_corrupt_manifest_raises_model_corrupt(tmp_path, monkeypatch):
    from compass_hooks.embedding import get_embedder

    folder = tmp_path / "models" / "minilm"
    folder.mkdir(parents=True)
    (folder / "compass-model.json").write_text("[1, 2")
    monkeypatch.setenv("COMPASS_MODEL_DIR", str(tmp_path / "models"))
    with pytest.raises(ModelCorrupt, match="compass-model.json"):
        get_embedder("minilm")


@pytest.mark.parametrize(
    "content, field",
    [
        (b"\x00\xff\xfe binary", "cannot read"),
        (b"{ truncated", "(json)"),
        (b"[]", "(root)"),
        (b'{"schema_version": 1, "name": "x", "anchors": [{"id": "a"}]}', "anchors[0].text"),
        (b'{"schema_version": 9, "name": "x", "anchors": []}', "schema_version"),
    ],
)
def test_corrupt_anchor_pack_names_the_file_and_field(tmp_path, content, field):
    from compass_hooks.drift.pack import load_pack_file

    path = tmp_path / "evil.json"
    path.write_bytes(content)
    with pytest.raises(AnchorPackError) as info:
        load_pack_file(path)
    assert str(path) in info.value.message and field in info.value.message


def test_corrupt_user_pack_via_cli(cli_runner):
    from compass_hooks.paths import get_paths

    paths = get_paths().ensure()
    paths.anchors_user.mkdir(parents=True, exist_ok=True)
    (paths.anchors_user / "user.json").write_text("{ truncated")
    res = cli_runner.invoke(cli, ["score", "you deleted the failing test"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "user.json" in res.output
