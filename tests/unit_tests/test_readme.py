import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_config_reference_is_generated_from_the_models() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "render_readme.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_second() -> None:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)
    assert commands[0] == "pip install -e . && python examples/quickstart.py"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1].replace('"', "") in ci.replace('"', "").replace("-q ", "")
