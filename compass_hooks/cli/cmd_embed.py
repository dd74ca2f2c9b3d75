"""``compass-hook embed TEXT...``: vectors from the local model, in process."""

from __future__ import annotations

import click

from . import echo_json


@click.command("embed")
@click.argument("texts", nargs=-1, required=True)
@click.option("--model", "model_name", default=None, help="Exported model name (default: the configured model).")
@click.option("--json", "as_json", is_flag=True, help='Print {"model", "dim", "vectors"} as JSON.')
def embed_cmd(texts: tuple[str, ...], model_name: str | None, as_json: bool) -> None:
    """Embed TEXT... with the local ONNX model (L2-normalised vectors).

    Runs in this process (no worker); useful to check an export or to feed
    vectors to other tools.
    """
    from ..embedding import get_embedder

    embedder = get_embedder(model_name)
    vectors = embedder.embed(list(texts))
    name = model_name or embedder.name
    if as_json:
        echo_json({"model": name, "dim": int(embedder.dim), "vectors": [[float(x) for x in row] for row in vectors]})
        return
    for text, row in zip(texts, vectors):
        head = ", ".join(f"{x:+.4f}" for x in row[:6])
        label = text if len(text) <= 40 else text[:37] + "..."
        click.echo(f"{name} {embedder.dim}-d  [{head}, ...]  {label}")


def register(cli: click.Group) -> None:
    cli.add_command(embed_cmd)
