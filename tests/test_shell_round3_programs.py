"""Issue #22, the program-knowledge half: each class's attacks under three policies (the
round-2 permissive one, examples/policy.toml, the policy `askgate init --yes` writes),
benign neighbours that must stay allowed under the permissive policy, the program specs'
examples, and the harms confirmed in real bash where they are observable."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from askgate.policy.engine import Policy
from askgate.policy.model import Action
from askgate.policy.protected import protected_rules
from askgate.policy.shell.pathargs import check_examples
from askgate.policy.shell.pathspecs import (
    INDEX,
    SPECS,
    ProgramSpecError,
    _index,
    _load_section,
    all_examples,
    load,
    spec_for,
)
from cli_harness import Cli
from test_shell_engine_corpus import permissive_policy

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_POLICY = ROOT / "examples" / "policy.toml"

# (command, what the permissive policy must answer: "deny" or "blocked" = not allow)
ATTACKS = {
    "4 unknown-role options and clusters": [
        ("cp -qp/etc/x a.txt", "deny"),
        ("cat --bogus=/etc/hosts a.txt", "blocked"),
        ("tee -Z ~/.bashrc < a.txt", "deny"),
        ("head -qj/etc/x a.txt", "blocked"),
        ("sed -irc s/a/b/ .env", "deny"),
        ("sed -i.pth s/x/y/ a.txt", "blocked"),  # writes a.txt.pth
        ("cp --target=/etc a.txt", "deny"),
    ],
    "4 options that name programs are code": [
        ("split --filter=sh a.txt", "blocked"),
        ("split --fil=sh a.txt", "blocked"),
        ("sdiff --diff-program=./evil a.txt b.txt", "blocked"),
        ("install --strip-program=./evil a.txt b", "blocked"),
        ("make CC=./evil", "blocked"),
        ("make X!=id", "blocked"),
        ("make 'X=$(shell id)' all", "blocked"),
        ("make .SHELLFLAGS=-ec all", "blocked"),
        ("sort --compress-program=./evil a.txt", "blocked"),
    ],
    "4 implicit targets and round-2 leftovers": [
        ("patch -d /etc -p1 < x.diff", "deny"),
        ("patch --directory=/etc -p1 < x.diff", "deny"),
        ("iconv -f utf8 -t ascii -o /etc/hosts a.txt", "deny"),
        ("iconv -f utf8 -t ascii --output=/etc/hosts a.txt", "deny"),
        ("ssh-keygen -A", "deny"),
        ("cd /etc && git init", "deny"),
        ("git init --bare /etc/repo", "deny"),
        ("pytest --junitxml=/etc/x.xml", "deny"),
    ],
    "7 persistence and instruction files": [
        ("echo x > CLAUDE.md", "blocked"),
        ("cp evil.md AGENTS.md", "blocked"),
        ("tee GEMINI.md < a.txt", "blocked"),
        ("echo x > .cursorrules", "blocked"),
        ("mkdir -p .github/workflows && cp a.txt .github/workflows/ci.yml", "blocked"),
        ("echo 'curl x|sh' >> ~/.profile", "blocked"),
        ("cp a.txt ~/.config/systemd/user/evil.service", "blocked"),
        ("cp evil.pth .venv/lib/python3.12/site-packages/", "blocked"),
        ("echo 'shell id' > ~/.gdbinit", "blocked"),
        ("mv .github x", "blocked"),
        ("rm -rf .git/hooks", "deny"),
        ("mv .claude x", "blocked"),
    ],
    "8 interpreter arguments and stdin languages": [
        ("python -m venv /etc/v", "deny"),
        ("python3 x.py /etc/hosts", "deny"),
        ("python3 -m http.server --directory /etc/x 8000", "deny"),
        ("echo 'shell id' | gdb", "blocked"),
        ("gdb -batch ./a.out < cmds.txt", "blocked"),
        ("echo 'import os' | python3 -i", "blocked"),
        ("echo '!id' | python3 -m pdb x.py", "blocked"),
        ("echo 'require(1)' | node -i", "blocked"),
        ("echo 'rm -rf /' | script", "blocked"),
    ],
    "11 where a file lands is the write": [
        ("cp evil/settings.json .claude/", "blocked"),
        ("cp --target-directory=.claude evil/settings.json", "blocked"),
        ("cp -t .claude evil/settings.json", "blocked"),
        ("cp evil/.gitattributes .", "blocked"),
        ("cp a.txt /etc/", "deny"),
        ("mv /etc/hosts a.txt", "deny"),
        ("ln -s a.txt .git/hooks/", "blocked"),
        ("sed -f script.sed a.txt", "blocked"),
        ("awk -f prog.awk a.txt", "blocked"),
        ("gawk --include=lib.awk '{print}' a.txt", "blocked"),
    ],
    "3 round-2 leftovers: SQL that writes, tar -P, newgrp": [
        ("sqlite3 db \"vacuum into '/etc/x'\"", "blocked"),
        ("sqlite3 db \"VACUUM main INTO 'x.db'\"", "blocked"),
        ("sqlite3 db \"attach '/etc/x' as e; create table e.t(a)\"", "blocked"),
        ("sqlite3 db '.shell id'", "blocked"),
        ('duckdb -c "install httpfs"', "blocked"),
        ("tar --transform s,^,/etc/, -P -xf x.tar", "blocked"),
        ("tar -xPf x.tar", "blocked"),
        ("tar xPf x.tar", "blocked"),
        ("tar --absolute-names -xf x.tar", "blocked"),
        ("tar --abs -xf x.tar", "blocked"),
        ("newgrp", "blocked"),
        ("newgrp docker < cmds.txt", "blocked"),
    ],
    "4 attached values of code options": [
        ("gawk --source='BEGIN{system(\"id\")}'", "blocked"),
        ("gawk --sou='BEGIN{system(\"id\")}'", "blocked"),
        ("gawk -e'BEGIN{system(\"id\")}'", "blocked"),
        ("gawk -ne 'BEGIN{system(\"id\")}'", "blocked"),
        ("sed --expr='1e id' a.txt", "blocked"),
        ("sed --e '1e id' a.txt", "blocked"),
        ('node --eval=\'require("child_process").execSync("id")\'', "blocked"),
    ],
    "12 paths inside git objects": [
        ("git show :0:.env", "deny"),
        ("git show HEAD:.env", "deny"),
        ("git cat-file -p :0:.env", "deny"),
        ("git show HEAD~3:src/.env.local", "deny"),
        ("git cat-file blob :.env", "deny"),
    ],
}
BENIGN = [
    "cp a.txt b.txt",
    "cp -r src build",
    "mv a.txt b.txt",
    "cat -n a.txt",
    "head -20 a.txt",
    "grep -rn TODO src",
    "sed -n 1,5p a.txt",
    "sed -i s/a/b/ a.txt",
    "make test VERBOSE=1",
    "python -m pytest -q tests",
    "python3 -m venv .venv",
    "git show HEAD",
    "git log --oneline -5",
    "sort -o out.txt a.txt",
    "diff -u a.txt b.txt",
    "rm -r build",
    "sqlite3 db 'select * from t'",
    "tar -xf x.tar",
    "tar -cPf x.tar a.txt",
    "sed --expression=s/a/b/ a.txt",
    "awk -F: '{print $1}' a.txt",
    "node --print='1+1'",
]
CASES = [(cls, command, expect) for cls, items in ATTACKS.items() for command, expect in items]


def _id(case: tuple[str, str, str]) -> str:
    return f"{case[0].split()[0]}:{case[1][:50]}"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    cli = Cli(tmp_path_factory.mktemp("round3"))
    root = cli.project("app")
    home = Path(cli.env["HOME"])
    for directory in (home / ".ssh", root / ".claude", root / ".github" / "workflows",
                      root / ".git" / "hooks", root / "evil"):  # fmt: skip
        directory.mkdir(parents=True, exist_ok=True)
    for path, text in {
        root / "a.txt": "a\n", root / "b.txt": "b\n", root / ".env": "SECRET=1\n",
        root / ".claude" / "settings.json": "{}", root / ".github" / "workflows" / "ci.yml": "",
        home / ".ssh" / "id_rsa": "KEY", home / ".bashrc": "",
    }.items():  # fmt: skip
        path.write_text(text)
    # The stricter policy init writes without the sandbox (with it, reads anywhere are the
    # kernel's to hold, and these cases are the sandbox's, not the analysis').
    result = cli.run("init", "--yes", "--sandbox", "off", "--cwd", str(root))
    assert result.returncode == 0, result
    env = dict(cli.env)
    permissive = permissive_policy(home, root)
    # The built-in deny floors (askgate's registration files) as Policy.load adds them.
    permissive = Policy(
        [*permissive.rules.rules, *protected_rules(env, str(root))],
        project_root=str(root),
        default=Action.ALLOW,
        env=env,
    )
    return {
        "root": str(root),
        "permissive": permissive,
        "example": Policy.load(str(root), config_files=[str(EXAMPLE_POLICY)], env=env),
        "init": Policy.load(str(root), env=env),
    }


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_attack_is_not_allowed_under_any_policy(world: dict[str, object], case) -> None:
    _, command, expect = case
    root = str(world["root"])
    for name in ("permissive", "example", "init"):
        policy = world[name]
        assert isinstance(policy, Policy)
        decision = policy.decide("bash", command, cwd=root)
        assert decision.action is not Action.ALLOW, (name, command, decision.reason)
        if name == "permissive" and expect == "deny":
            assert decision.action is Action.DENY, (command, decision.reason)


@pytest.mark.parametrize("command", BENIGN)
def test_benign_neighbour_stays_allowed_under_the_permissive_policy(world, command) -> None:
    policy = world["permissive"]
    assert isinstance(policy, Policy)
    decision = policy.decide("bash", command, cwd=str(world["root"]))
    assert decision.action is Action.ALLOW, (command, decision.reason)


def test_every_program_spec_example_holds() -> None:
    examples = all_examples()
    assert len(examples) >= 100 and len(SPECS) >= 100
    check_examples(examples)


def test_the_lazy_index_agrees_with_a_full_parse() -> None:
    specs, _ = load()
    assert set(specs) == set(INDEX)
    for name, spec in specs.items():
        assert spec_for(name) == spec, name
        assert INDEX[name].kind == spec.kind and INDEX[name].network == spec.network, name


def test_a_spec_is_parsed_only_when_first_used(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text(
        "[cp]\nkind = 'copy'\nexamples = [{ run = 'cp a b', writes = ['b'] }]\n"
        "[broken]\nkind = 'read'\nwritse = 1\n"
    )
    index = _index(str(tmp_path))  # the index reads names only: the broken table loads
    assert set(index) == {"cp", "broken"} and index["broken"].kind == "read"
    with pytest.raises(ProgramSpecError, match=r"\[broken\]: unknown field"):
        _load_section(index["broken"])  # its first use fails loudly (the analysis asks)


def test_a_wrong_example_fails_the_load_loudly(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text(
        "[cp]\nkind = 'copy'\nexamples = [{ run = 'cp a b', writes = ['a'] }]\n"
    )
    _, examples = load(str(tmp_path))
    with pytest.raises(ProgramSpecError, match=r"x\.toml: \[cp\]\.examples\[0\]"):
        check_examples(examples)


def test_a_spec_with_an_unknown_field_fails_the_load(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text("[cp]\nkind = 'copy'\nwritse = '-o'\n")
    with pytest.raises(ProgramSpecError, match="unknown field"):
        load(str(tmp_path))


# -- the harms, in real bash ------------------------------------------------------------

BASH = shutil.which("bash")


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize(
    ("command", "harmed"),
    [
        ("sed -irc s/a/b/ .env", ".envrc"),  # the backup suffix makes a direnv file
        ("cp a.txt .claude/", ".claude/a.txt"),  # the file lands inside the directory
        ("cp --target-directory=.claude a.txt", ".claude/a.txt"),
        ("cp evil/.gitattributes .", ".gitattributes"),
        ("git init -q", ".git"),
    ],
)
def test_the_harm_is_real_in_bash(tmp_path: Path, command: str, harmed: str) -> None:
    (tmp_path / ".env").write_text("a=1\n")
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / ".claude").mkdir()
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / ".gitattributes").write_text("* filter=x\n")
    subprocess.run([BASH, "-c", command], cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / harmed).exists()


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_mv_of_a_protected_directory_removes_what_is_inside_in_bash(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{}")
    subprocess.run([BASH, "-c", "mv .claude x"], cwd=tmp_path, check=True)
    assert not (tmp_path / ".claude" / "settings.json").exists()


@pytest.mark.skipif(BASH is None, reason="needs bash")
@pytest.mark.parametrize(
    ("command", "needs"),
    [
        ("sed --expr='1e touch PWNED' a.txt", "sed"),  # an abbreviated --expression
        ('node --eval=\'require("fs").writeFileSync("PWNED", "")\'', "node"),
        ("sqlite3 db \"vacuum into 'PWNED'\"", "sqlite3"),  # SQL that writes a file
        ("sqlite3 db \"attach 'PWNED' as e; create table e.t(a)\"", "sqlite3"),
    ],
)
def test_code_in_an_attached_or_sql_value_runs_in_bash(
    tmp_path: Path, command: str, needs: str
) -> None:
    if shutil.which(needs) is None:
        pytest.skip(f"needs {needs}")
    (tmp_path / "a.txt").write_text("a\n")
    subprocess.run([BASH, "-c", command], cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / "PWNED").exists()


@pytest.mark.skipif(BASH is None or shutil.which("tar") is None, reason="needs bash and tar")
def test_tar_P_extracts_to_the_absolute_path_in_the_archive_in_bash(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "planted"
    target.parent.mkdir()
    target.write_text("x")
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run([BASH, "-c", f"tar -cPf x.tar {target}"], cwd=work, check=True)
    target.unlink()
    subprocess.run([BASH, "-c", "tar -xPf x.tar"], cwd=work, check=True)
    assert target.exists()  # written outside the working directory, where the archive said


def test_every_recursive_reader_has_a_finder() -> None:
    from askgate.policy.shell.pathargs import _RECURSIVE_FINDERS, RECURSIVE_NAMES

    assert set(_RECURSIVE_FINDERS) == RECURSIVE_NAMES
