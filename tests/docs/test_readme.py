"""README's two set-up commands stay the ones CI runs."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```sh", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.strip().splitlines()]


def test_readme_opens_with_two_commands():
    cmds = readme_commands()
    assert len(cmds) == 2
    assert "zswap-host" in cmds[0] and "pytest" in cmds[1]


def test_ci_runs_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert readme_commands()[1] in ci.splitlines()
