"""More programs that start other commands (red team 2026-11-29).

Sandboxes, profilers, session and scheduling tools, and builtins that run strings.
All are floored: they run a command with other privileges, later, elsewhere, or
with options whose arity the analyser does not track. The inner command is still
handed on, so a deny rule sees it.
"""

from __future__ import annotations

from askgate.policy.shell.argv import names, scan
from askgate.policy.shell.peeling import Handler, Peel, joined, kept, simple
from askgate.policy.shell.variables import callback
from askgate.policy.shell.words import Word


def _callback(name: str) -> Handler:
    """mapfile -C, compgen -C/-W …: strings run as code, shown to denies and floored."""

    def handler(args: list[Word]) -> Peel | None:
        found = callback(name, args)
        if found is None:
            return None
        scripts, reason = found
        peel = kept(reason)
        peel.scripts.extend(scripts)
        return peel

    return handler


def _after_first_operand(floor: str, short_value: str = "", long_value: str = "") -> Handler:
    """`tool [options] FIXED command…` (faketime TIME cmd, sg GROUP cmd)."""
    return simple(short_value, long_value, floor=floor, skip_operands=1)


def _subcommand(words: tuple[str, ...], floor: str, short_value: str = "") -> Handler:
    """`tool SUB [options] command…` (`ip netns exec NS cmd`, `perf record cmd`)."""

    def handler(args: list[Word]) -> Peel | None:
        rest = list(args)
        for expected in words:
            if not rest or rest[0].text != expected:
                return None
            rest = rest[1:]
        return simple(short_value, floor=floor)(rest)

    return handler


def _sg(args: list[Word]) -> Peel:
    peel = kept("sg runs a command with another group")
    rest = [w for w in args[1:] if w.text != "-c"]
    if rest:
        peel.scripts.append((joined(rest), "sg -c"))
    return peel


def _strings(options: str, floor: str) -> Handler:
    """A tool whose listed options take a shell command string (`nix-shell --run CMD`)."""
    wanted = names(options)

    def handler(args: list[Word]) -> Peel | None:
        scripts = [
            args[i + 1] for i in range(len(args) - 1) if args[i].text.split("=")[0] in wanted
        ]
        scripts += [
            Word(w.text.split("=", 1)[1], w.source, w.dynamic)
            for w in args
            if "=" in w.text and w.text.split("=")[0] in wanted
        ]
        if not scripts:
            return None
        peel = kept(floor)
        for script in scripts:
            peel.scripts.append((script, "command string"))
        return peel

    return handler


def _every_argument(floor: str) -> Handler:
    """moreutils' pee and mispipe: each argument is a shell command."""

    def handler(args: list[Word]) -> Peel:
        peel = kept(floor)
        peel.scripts.extend((w, "command string") for w in args if not w.text.startswith("-"))
        return peel

    return handler


_TMUX_RUNS = names(
    "new-session new new-window neww split-window splitw run-shell run if-shell if "
    "respawn-pane respawnp respawn-window respawnw pipe-pane pipep display-popup popup "
    "send-keys send"
)


def _tmux(args: list[Word]) -> Peel | None:
    result = scan(args, "LSfc")
    rest = result.operands
    if not rest or rest[0].text not in _TMUX_RUNS:
        return None
    peel = kept(f"tmux {rest[0].text} runs a command in a terminal session")
    # Whether -d, -b … take a value differs between tmux commands: every operand and
    # their join are offered to deny rules (all of them are floored).
    tail = scan(rest[1:], "cetnsFxyNlwhST", permute=True).operands
    for script in [joined(tail), *tail[:12]] if len(tail) > 1 else tail:
        peel.scripts.append((script, "tmux"))
    return peel


def _screen(args: list[Word]) -> Peel:
    result = scan(args, "cehpRSstTx", permute=False)
    if not result.operands:
        return kept("screen starts a shell")
    return Peel(result.operands, "screen runs a command in a terminal session")


def _crontab(args: list[Word]) -> Peel | None:
    if any(w.text in ("-l", "-T") for w in args):
        return None
    return kept("crontab installs commands that run later")


def _shell_command_options(args: list[Word]) -> Peel | None:
    """pwsh / powershell -Command|-c|-EncodedCommand: PowerShell code, not analysed."""
    for index, word in enumerate(args):
        option = word.text.lower().lstrip("-/")
        if (
            word.text[:1] in "-/"
            and option
            and ("command".startswith(option) or "encodedcommand".startswith(option))
        ):
            peel = kept("PowerShell code is not analysed")
            if index + 1 < len(args):
                peel.scripts.append((joined(args[index + 1 :]), "pwsh -c"))
            return peel
    return None


_SESSION = "runs a command in another session or sandbox"
_SYSTEMD_RUN_VALUES = (
    "--unit --property --setenv --working-directory --uid --gid --nice --slice --description "
    "--machine --on-calendar --on-active --on-boot --timer-property --path-property"
)
_UNSHARE_VALUES = "--setuid --setgid --wd --root --propagation"
LAUNCHERS: dict[str, Handler] = {
    **{name: _callback(name) for name in ("mapfile", "readarray", "compgen", "complete")},
    "systemd-run": simple(
        "pMEpu", _SYSTEMD_RUN_VALUES, floor="systemd-run runs a command as a service"
    ),
    "unshare": simple("", _UNSHARE_VALUES, floor=f"unshare {_SESSION}"),
    "firejail": simple(floor=f"firejail {_SESSION}"),
    "bwrap": lambda args: kept(f"bwrap {_SESSION}"),
    "fakeroot": simple("is", floor="fakeroot runs a command as a pretend root"),
    "valgrind": simple(floor="valgrind runs a command under instrumentation"),
    "perf": _subcommand(("record",), "perf runs a command under the profiler", "oepFcC"),
    "torsocks": simple(floor="torsocks runs a command through a proxy"),
    "proxychains": simple("f", floor="proxychains runs a command through a proxy"),
    "proxychains4": simple("f", floor="proxychains runs a command through a proxy"),
    "entr": simple(floor="entr runs a command whenever files change"),
    "ccache": simple(floor="ccache runs a compiler command"),
    "dbus-launch": simple(floor=f"dbus-launch {_SESSION}"),
    "dbus-run-session": simple(floor=f"dbus-run-session {_SESSION}"),
    "xvfb-run": simple("nsefpw", floor=f"xvfb-run {_SESSION}"),
    "faketime": _after_first_operand("faketime runs a command with another clock", "f"),
    "setpriv": simple(floor="setpriv runs a command with other privileges"),
    "prlimit": simple("p", floor="prlimit runs a command with other limits"),
    "numactl": simple("CmNpPi", floor="numactl runs a command with another CPU/memory policy"),
    "ssh-agent": simple("aEPt", floor=f"ssh-agent {_SESSION}"),
    "ifne": simple(floor="ifne runs a command when its input is not empty"),
    "chronic": simple(floor="chronic runs a command"),
    "sg": _sg,
    "ip": _subcommand(("netns", "exec"), f"ip netns exec {_SESSION}"),
    "tmux": _tmux,
    "screen": _screen,
    "at": lambda args: kept("at runs commands later"),
    "batch": lambda args: kept("batch runs commands later"),
    "crontab": _crontab,
    "nix-shell": _strings("--run --command", "nix-shell runs a command string"),
    "pee": _every_argument("pee runs its arguments as shell commands"),
    "mispipe": _every_argument("mispipe runs its arguments as shell commands"),
    "pwsh": _shell_command_options,
    "powershell": _shell_command_options,
}
