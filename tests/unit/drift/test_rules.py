"""Danger rules: shell commands (PreToolUse guard) and prompt rules."""

from __future__ import annotations

import subprocess
import sys

import pytest

from compass_hooks.drift.rules import RuleHit, check_command, check_prompt_rules
import testdirs

ROOT = testdirs.ROOT


@pytest.mark.parametrize("cmd, rule", [
    ("rm -rf src", "rm_rf"),
    ("rm -rf ~/project", "rm_rf"),
    ("rm -fr /", "rm_rf"),
    ("cd repo && rm -rf *", "rm_rf"),
    ("rm -rf /tmp", "rm_rf"),
    ("git push --force origin main", "git_push_force"),
    ("git push -f origin master", "git_push_force"),
    ("git push origin +release/2.1", "git_push_force"),
    ("git push --force-with-lease origin develop", "git_push_force"),
    ("git push -f", "git_push_force"),
    ("git reset --hard HEAD~3", "git_reset_hard"),
    ("git clean -fdx", "git_clean_force"),
    ("psql -c 'DROP TABLE users'", "sql_drop"),
    ("mysql -e 'TRUNCATE orders'", "sql_drop"),
    ("sqlite3 app.db 'DELETE FROM sessions'", "sql_delete_all"),
    ("chmod -R 777 /var/www", "chmod_777"),
    ("pkill -f python", "broad_kill"),
    ("killall node", "broad_kill"),
    ("kill -9 -1", "broad_kill"),
    ("sudo dd if=/dev/zero of=/dev/sda", "disk_overwrite"),
])
def test_destructive_commands_hit(cmd, rule):
    hit = check_command(cmd)
    assert isinstance(hit, RuleHit) and hit.rule == rule, (cmd, hit)
    assert hit.category == "destructive_operation" and hit.reason


@pytest.mark.parametrize("cmd", [
    "rm -rf node_modules", "rm -rf dist build", "rm -rf ./__pycache__ .pytest_cache", "rm -rf /tmp/compass-test",
    "rm -r src/old.py", "rm file.txt", "git push origin feature/x", "git push --force-with-lease origin feat/search",
    "git push -f origin fix/login", "git reset --soft HEAD~1", "git clean -n", "git status",
    "psql -c 'DELETE FROM sessions WHERE expires < now()'", "chmod 755 script.sh", "kill -9 48213", "kill 1234",
    "ls -la", "pytest -q", "",
])
def test_ordinary_commands_pass(cmd):
    assert check_command(cmd) is None, cmd


@pytest.mark.parametrize("text, rule", [
    ("use sk-ant-api03-Qw7eRt9yUi2oPa4sDf6gHj8kLz1xCv3bNm5 for the client", "secret_anthropic_key"),
    ("key: sk-proj-Zx81mNq4Rt7Yu0Ip3As6Df9Gh2Jk5Lz8Xc1V", "secret_openai_key"),
    ("token ghp_9fK2LmQx7rT4vW8zY1aB3cD5eF6gH0iJ2kL4", "secret_github_token"),
    ("AKIAIOSFODNN7EXAMPL3 is the key", "secret_aws_access_key"),
    ("slack xoxb-1234567890-abcdefghij", "secret_slack_token"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nabc", "secret_private_key"),
])
def test_secret_shapes(text, rule):
    hit = check_prompt_rules(text)
    assert hit is not None and hit.rule == rule and hit.category == "secrets"
    assert check_command(f"echo '{text}'").rule == rule


def test_prompt_rules_fire_on_instructions_not_on_explanations():
    assert check_prompt_rules("just run `git push --force origin main`").rule == "git_push_force"
    assert check_prompt_rules("please rm -rf src and start over").rule == "rm_rf"
    for harmless in ("explain what git reset --hard does", "add a check that refuses rm -rf /",
                     "How can I undo a `git reset --hard`?", "write a test for the DELETE endpoint",
                     "为什么 pkill -f python 会把编辑器也杀掉？", "rm -rf node_modules and reinstall"):
        assert check_prompt_rules(harmless) is None, harmless


@pytest.mark.parametrize("text", [
    "You must not run git push --force origin main.",
    "Rule: no `git clean -fdx` here, the data folder is untracked on purpose.",
    "git push --force to main is not allowed",
    "Nobody runs rm -rf src in this repo",
    "Stop using git push -f origin master.",
    "Add validation that rejects `chmod 777` in our provisioning scripts.",
    "Add an alert when someone runs `kill -9` on the worker.",
    "严禁 git push --force origin main",
    "以后不准 git reset --hard",
    "千万别 rm -rf 整个项目目录，清理只清 build。",
    "git clean -fdx 会删掉什么？",
    "review this PR: it adds a DROP TABLE in a migration, tell me whether it's safe to merge",
    "there's an rm -rf in the release script, add an allowlist check on the path",
    "git clean -fdx は何をするの？知りたいだけで、実行はしないで",
    "hay un rm -rf en el script de release, añade una comprobación de rutas permitidas",
    "tem um rm -rf no script de release, coloca uma checagem de caminho permitido",
    # asking what a command would do, how to recover, or to be shown it first, in each language
    "list what TRUNCATE TABLE sessions would lose, don't execute it",
    "这个脚本里的 rm -rf $OUT/ 会不会在变量为空的时候删到根目录",
    "以后 git push --force 的命令先给我看，我确认了再说",
    "`git reset --hard` してしまった。reflog で戻す手順を教えて",
    "本番で DROP DATABASE が流れないようにチェックを入れて",
    "dime qué borra exactamente git clean -fdx en este repo",
    "En este repo no se hace git push --force a main, ¿vale?",
    "Nach einem git reset --hard ist mein Stand weg. Kann ich ihn zurückholen?",
    "dis-moi ce que supprime git clean -fdx ici",
    "avant tout git push --force, tu m'affiches la branche cible",
    "o que exatamente o rm -rf $DIR/* apaga se DIR estiver vazio",
    "Schreib einen Pre-Commit-Hook, der bei jedem git push --force eine Bestätigung verlangt.",
    # "without running it" at the end, "I only want to know what ...", simulating it, "which would it delete",
    # asking first (round 11 of docs/drift.md)
    "what would git clean -fdx remove here? I just want to know what it deletes",
    "explain git reset --hard without running it.",
    "simulate DROP SCHEMA staging on the test database and list what it touches",
    "¿qué borraría git clean -fdx? sin ejecutarlo.",
    "mostre o que o DROP TABLE users afetaria, sem executar.",
    "dis-moi ce que ferait git clean -fdx, sans l'exécuter.",
    "Was würde git clean -fdx löschen? Ohne es auszuführen.",
    "rm -rf build/ 会删掉哪些文件？我不执行",
    "git reset --hard した後、前のコミットに戻せる？",
    "任何 truncate table 都要先问我",
])
def test_prompt_rules_skip_rules_the_user_states(text):
    """A prohibition or guard governing the command is a rule being set, not a request to run it."""
    assert check_prompt_rules(text) is None, text


@pytest.mark.parametrize("text, rule", [
    # a prohibition elsewhere in the prompt does not cover the command
    ("don't ask, just run `git reset --hard`", "git_reset_hard"),
    ("Run git reset --hard and don't ask me about the uncommitted changes.", "git_reset_hard"),
    ("Never mind the review, git push --force origin main now", "git_push_force"),
    ("Don't forget to git push --force origin main after the rebase", "git_push_force"),
    ("Ignore the no-force-push rule for now and run git push --force origin main.", "git_push_force"),
    ("不要问了，直接 git reset --hard", "git_reset_hard"),
    ("不要犹豫，直接 rm -rf src 重来。", "rm_rf"),
    ("在我的工作区执行 git reset --hard，本地改动不要了", "git_reset_hard"),
    # "tell me / show me" after an order to run it asks for a report, not an explanation
    ("just DROP TABLE users, what could go wrong", "sql_drop"),
    ("git reset --hard して、終わったら教えて", "git_reset_hard"),
    ("haz git reset --hard y dime cuando acabes", "git_reset_hard"),
    ("mach git reset --hard und sag mir Bescheid", "git_reset_hard"),
    ("lance git reset --hard et dis-moi quand c'est fait", "git_reset_hard"),
    ("roda git reset --hard e me diz quando acabar", "git_reset_hard"),
    # a check or guard the order does without is not one being added
    ("チェックはいいから git push --force origin main して", "git_push_force"),
    ("ガードを外して rm -rf /srv/data を流して", "rm_rf"),
    ("Der Kunde verlangt es, also git push --force origin main.", "git_push_force"),
    # "without running" something else, "I want to know if ...", "we can restore it later": orders all the same
    ("run git push --force origin main without running the tests", "git_push_force"),
    ("just git reset --hard, I only want to know if it builds afterwards", "git_reset_hard"),
    ("haz git push --force a main sin ejecutar los tests", "git_push_force"),
    ("faz git reset --hard sem executar o backup antes", "git_reset_hard"),
    ("führ git reset --hard aus, ohne es vorher zu sichern", "git_reset_hard"),
    ("git clean -fdx 然后直接跑，不用先问我", "git_clean_force"),
    ("DELETE FROM users を本番で流して。あとで戻せるから", "sql_delete_all"),
])
def test_prompt_rules_still_fire_when_the_prohibition_governs_something_else(text, rule):
    hit = check_prompt_rules(text)
    assert hit is not None and hit.rule == rule, text


def test_rules_import_stdlib_only():
    """The PreToolUse guard runs rules.py with `python -I -S` (no site-packages)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from compass_hooks.drift.rules import check_command;"
        "hit = check_command('git reset --hard');"
        "assert hit.rule == 'git_reset_hard', hit;"
        "bad = [m for m in ('numpy', 'click', 'compass_hooks.drift.features', 'compass_hooks.core') if m in sys.modules];"
        "assert not bad, bad; print('ok')"
    )
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(ROOT)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
