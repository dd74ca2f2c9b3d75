"""Log files follow the data dir current when a record is written (loggers are made at import time)."""

from __future__ import annotations

import os

from compass_hooks.logs import get_logger


def test_a_logger_made_earlier_writes_into_the_current_users_data_dir(tmp_path, monkeypatch, compass_home):
    log = get_logger("follow-test")  # as a module does at import, before the data dir is known
    log.info("first user")
    first = compass_home / "logs" / "follow-test.log"
    assert "first user" in first.read_text()
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setenv("HOME", str(other))
    log.info("second user")
    second = other / ".local" / "share" / "compass-hooks" / "logs" / "follow-test.log"
    assert "second user" in second.read_text() and "second user" not in first.read_text()
    assert os.stat(second.parent).st_mode & 0o777 == 0o700
