"""README's bytes-per-step example names the policy whose bytes it is."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_names_the_policy_of_its_byte_figure():
    readme = re.sub(r"\s+", " ", (ROOT / "README.md").read_text())
    assert ("e.g. 394.9 B scheduler -> runner per step under the `send` policy for 4 "
            "running requests with msgpack") in readme
