"""The old import path, ``from tests.mcp_client import ...``, for test files written before the helpers moved to
tests/helpers/mcp_client.py. New code imports ``from mcp_client import ...`` (conftest puts tests/helpers on
sys.path)."""

from mcp_client import COMPASS_MCP, server_env, stdio_session, text_of  # noqa: F401
