"""Which hosts a shell command's network tools will contact, read from their arguments.

The engine checks each host against the `net` surface (policy/net.py), so a wildcard bash
allow (`curl *`) allows running curl, not reaching any host: the host needs a net allow
(or the default). What this module cannot tell for sure comes back as an *unknown* target
(`None`), which the engine checks against the default, never against a named host's
allow. Mistakes only go one way: an option whose value this table does not know is
taken for a flag, so its value is read as a host too (stricter, never looser), and every
word holding `://` is read as a URL wherever it stands.

Input is a unit's command as the analysis normalised it (words joined by single spaces,
wrappers stripped), so a quoted word with spaces arrives split: the extra pieces are
extra hosts (stricter). Program knowledge is data (`PROGRAMS`), with examples
(`EXAMPLES`) that tests check.

Documented limits: ssh aliases from `~/.ssh/config`, `.npmrc`/`pip.conf` registries,
`url.*.insteadOf` in the global git configuration and environment variables such as
`PIP_INDEX_URL` are not read (a repository's own `insteadOf` makes the remote unknown).
Under `[sandbox] network = "policy"` the proxy checks every connection whatever the
command line said (docs/network.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.net import (
    NETWORK_PROGRAMS,
    SCHEME_PORTS,
    UNKNOWN_PORT,
    NetTarget,
    net_target,
    parse_url,
)

# A target the analysis cannot name: the engine applies the default to it.
Unknown = None
Targets = list[NetTarget | None]


class Implied(NetTarget):
    """A host the program contacts without the command line naming it (npm's registry
    for `npm install`): running the program is what the bash rule allowed, so only a net
    deny or ask applies to it. A host the command line names needs a net allow."""


PYPI = (Implied("pypi.org", 443), Implied("files.pythonhosted.org", 443))
NPM = (Implied("registry.npmjs.org", 443),)
YARN = (Implied("registry.yarnpkg.com", 443),)
CRATES = (
    Implied("index.crates.io", 443),
    Implied("static.crates.io", 443),
    Implied("crates.io", 443),
)
GO = (Implied("proxy.golang.org", 443), Implied("sum.golang.org", 443))

# Options whose value is the next word (or `--opt=value`), per program. An option not
# listed is a flag: the word after it is read as an operand (stricter).
_CURL_VALUES = frozenset(
    [
        "-A",
        "-b",
        "-c",
        "-C",
        "-d",
        "-D",
        "-e",
        "-E",
        "-F",
        "-H",
        "-K",
        "-m",
        "-o",
        "-Q",
        "-r",
        "-T",
        "-u",
        "-U",
        "-w",
        "-X",
        "-y",
        "-Y",
        "-z",
        "--abstract-unix-socket",
        "--cacert",
        "--capath",
        "--cert",
        "--cert-type",
        "--ciphers",
        "--config",
        "--connect-timeout",
        "--cookie",
        "--cookie-jar",
        "--continue-at",
        "--create-file-mode",
        "--data",
        "--data-ascii",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "--dump-header",
        "--form",
        "--form-string",
        "--header",
        "--interface",
        "--json",
        "--keepalive-time",
        "--key",
        "--key-type",
        "--limit-rate",
        "--local-port",
        "--max-filesize",
        "--max-redirs",
        "--max-time",
        "--oauth2-bearer",
        "--output",
        "--output-dir",
        "--pass",
        "--proto",
        "--proto-redir",
        "--quote",
        "--range",
        "--referer",
        "--request",
        "--retry",
        "--retry-delay",
        "--retry-max-time",
        "--speed-limit",
        "--speed-time",
        "--trace",
        "--trace-ascii",
        "--upload-file",
        "--user",
        "--user-agent",
        "--write-out",
        "--unix-socket",
        "--variable",
        "--expand-url",
        "--resolve",
        "--connect-to",
    ]
)
_CURL_HOSTS = frozenset(["-x", "--proxy", "--preproxy", "--url", "--doh-url"])
_CURL_OPAQUE = frozenset(["--resolve", "--connect-to", "-K", "--config"])
_WGET_VALUES = frozenset(
    [
        "-O",
        "-o",
        "-a",
        "-P",
        "-t",
        "-T",
        "-w",
        "-U",
        "-A",
        "-R",
        "-D",
        "-I",
        "-X",
        "-l",
        "-Q",
        "-B",
        "--output-document",
        "--output-file",
        "--append-output",
        "--directory-prefix",
        "--tries",
        "--timeout",
        "--wait",
        "--user-agent",
        "--accept",
        "--reject",
        "--domains",
        "--include-directories",
        "--exclude-directories",
        "--level",
        "--quota",
        "--header",
        "--user",
        "--password",
        "--http-user",
        "--http-password",
        "--post-data",
        "--post-file",
        "--body-data",
        "--body-file",
        "--method",
        "--referer",
        "--load-cookies",
        "--save-cookies",
        "--ca-certificate",
        "--certificate",
        "--private-key",
        "--bind-address",
        "--base",
    ]
)
_WGET_OPAQUE = frozenset(["-i", "--input-file", "-e", "--execute"])
_NC_VALUES = frozenset(
    [
        "-p",
        "-s",
        "-w",
        "-i",
        "-q",
        "-O",
        "-I",
        "-T",
        "-P",
        "-W",
        "-X",
        "-e",
        "-c",
        "-g",
        "-G",
        "-m",
        "-M",
        "--source-port",
        "--source",
        "--wait",
        "--exec",
        "--sh-exec",
        "--lua-exec",
        "--proxy-type",
        "--proxy-auth",
        "--idle-timeout",
        "-d",
        "--delay",
    ]
)
_NC_PROXY = frozenset(["-x", "--proxy"])
_NC_LISTEN = frozenset(["-l", "--listen", "-U", "--unixsock"])
_SSH_VALUES = frozenset(
    [
        "-b",
        "-c",
        "-D",
        "-E",
        "-e",
        "-F",
        "-I",
        "-i",
        "-L",
        "-l",
        "-m",
        "-O",
        "-Q",
        "-R",
        "-S",
        "-W",
        "-w",
        "-B",
    ]
)
_SCP_VALUES = frozenset(["-c", "-D", "-F", "-i", "-l", "-o", "-S", "-X"])
_RSYNC_VALUES = frozenset(
    [
        "-e",
        "--rsh",
        "--rsync-path",
        "--exclude",
        "--include",
        "--exclude-from",
        "--include-from",
        "--files-from",
        "--filter",
        "-f",
        "--log-file",
        "--partial-dir",
        "--temp-dir",
        "-T",
        "--compare-dest",
        "--copy-dest",
        "--link-dest",
        "--password-file",
        "--chmod",
        "--chown",
        "--bwlimit",
        "--timeout",
        "--contimeout",
        "--max-size",
        "--min-size",
        "--suffix",
        "--backup-dir",
        "--out-format",
        "--usermap",
        "--groupmap",
    ]
)
_GIT_GLOBAL_VALUES = frozenset(
    ["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"]
)
_GIT_VALUES = frozenset(
    [
        "-b",
        "-o",
        "-j",
        "-u",
        "--branch",
        "--origin",
        "--depth",
        "--shallow-since",
        "--shallow-exclude",
        "--reference",
        "--reference-if-able",
        "--separate-git-dir",
        "--template",
        "--config",
        "--jobs",
        "--upload-pack",
        "--receive-pack",
        "--exec",
        "--filter",
        "--server-option",
        "--recurse-submodules-default",
        "--push-option",
        "-c",
        "--negotiation-tip",
        "--refmap",
        "--strategy",
        "-s",
        "-X",
        "--strategy-option",
    ]
)
_PIP_VALUES = frozenset(
    [
        "-r",
        "-c",
        "-e",
        "-t",
        "-t",
        "--requirement",
        "--constraint",
        "--editable",
        "--target",
        "--prefix",
        "--root",
        "--src",
        "--platform",
        "--python-version",
        "--implementation",
        "--abi",
        "--upgrade-strategy",
        "--progress-bar",
        "--log",
        "--cache-dir",
        "--timeout",
        "--retries",
        "--cert",
        "--client-cert",
        "--trusted-host",
        "--global-option",
        "--config-settings",
        "-C",
        "--report",
        "-d",
        "--dest",
        "--no-binary",
        "--only-binary",
        "--python",
    ]
)
_PIP_INDEXES = frozenset(
    ["-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--proxy"]
)
_PIP_NETWORK = frozenset(["install", "download", "wheel", "index", "search"])
_NPM_NETWORK = frozenset(
    [
        "install",
        "i",
        "ci",
        "add",
        "update",
        "up",
        "upgrade",
        "publish",
        "view",
        "info",
        "show",
        "outdated",
        "audit",
        "exec",
        "dlx",
        "create",
        "init",
        "unpublish",
        "deprecate",
        "dist-tag",
        "search",
        "login",
        "adduser",
        "ping",
        "doctor",
        "fund",
        "pack",
    ]
)
_CARGO_NETWORK = frozenset(
    ["install", "build", "fetch", "update", "search", "publish", "add", "check", "run", "test"]
)
_GO_NETWORK = frozenset(["get", "install", "build", "run", "test"])
_SOCAT_ADDRESS = lazy_compile(
    r"(?:tcp[46]?|tcp[46]?-connect|udp[46]?|udp[46]?-connect|openssl|openssl-connect|ssl"
    r"|socks4a?|socks5|proxy|proxy-connect|sctp[46]?|sctp[46]?-connect|dccp|dtls):"
    r"(?P<rest>[^,]+)",
    re.IGNORECASE,
)


def _options(
    words: Sequence[str], values: frozenset[str]
) -> tuple[list[tuple[str, str | None]], list[str]]:
    """(options with their values, operands) of a getopt-style argv tail."""
    options: list[tuple[str, str | None]] = []
    operands: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            operands += words[index:]
            break
        if not word.startswith("-") or word == "-":
            operands.append(word)
            continue
        name, eq, attached = word.partition("=")
        if eq and name.startswith("--"):
            options.append((name, attached))
            continue
        if name in values:
            options.append((name, words[index] if index < len(words) else None))
            index += 1
            continue
        if not word.startswith("--") and len(word) > 2 and word[:2] in values:
            options.append((word[:2], word[2:]))  # -H'x: y', -p2222
            continue
        options.append((name, None))
    return options, operands


def _url_words(words: Sequence[str]) -> Targets:
    """Every word that holds a URL, wherever it stands (`--url=…`, `-dx=http://…` …)."""
    found: Targets = []
    for word in words:
        at = word.find("://")
        if at < 0:
            continue
        start = at
        while start > 0 and (word[start - 1].isalnum() or word[start - 1] in "+.-"):
            start -= 1
        found.append(parse_url(word[start:]))
    return found


def _curl(words: Sequence[str], _cwd: str) -> Targets:
    options, operands = _options(words, _CURL_VALUES)
    found = _url_words(words)
    for name, value in options:
        if name in _CURL_OPAQUE:
            found.append(Unknown)  # another address or more URLs than the line shows
        elif name in _CURL_HOSTS and value is not None and "://" not in value:
            found.append(parse_url(value, default_scheme="http"))
    found += [parse_url(op, default_scheme="http") for op in operands if "://" not in op]
    found += _host_headers(options, ("-H", "--header"))
    return found


def _host_headers(options: list[tuple[str, str | None]], names: tuple[str, ...]) -> Targets:
    """A `Host:` header names the site a server in front of the connection (a CDN, a
    shared proxy) hands the request to: that host is contacted too."""
    found: Targets = []
    for name, value in options:
        if name in names and value is not None:
            field, colon, host = value.partition(":")
            if colon and field.strip().lower() == "host":
                found.append(parse_url(host.strip(), default_scheme="http"))
    return found


def _wget(words: Sequence[str], _cwd: str) -> Targets:
    options, operands = _options(words, _WGET_VALUES)
    found = _url_words(words)
    found += _host_headers(options, ("--header",))
    if any(name in _WGET_OPAQUE for name, _ in options):
        found.append(Unknown)
    found += [parse_url(op, default_scheme="http") for op in operands if "://" not in op]
    return found


def _host_port(host: str, port_text: str | None, default: int) -> NetTarget | None:
    if port_text is not None and not port_text.isdigit():
        return None  # a range, a service name: cannot tell which port
    try:
        return net_target(host, int(port_text) if port_text else default)
    except ValueError:
        return None


def _netcat(words: Sequence[str], _cwd: str) -> Targets:
    options, operands = _options(words, _NC_VALUES | _NC_PROXY)
    names = {name for name, _ in options}
    if names & _NC_LISTEN:
        return []  # listening (or a Unix socket): nothing is contacted
    found: Targets = []
    for name, value in options:
        if name in _NC_PROXY:
            found.append(_split_host_port(value or "", 1080))
    if operands:
        found.append(_host_port(operands[0], operands[1] if len(operands) > 1 else None, 0))
    return found


def _telnet(words: Sequence[str], _cwd: str) -> Targets:
    _options_found, operands = _options(words, frozenset(["-l", "-n", "-e", "-b"]))
    if not operands:
        return []
    return [_host_port(operands[0], operands[1] if len(operands) > 1 else None, 23)]


def _split_host_port(text: str, default: int) -> NetTarget | None:
    """`host`, `host:port`, `[v6]:port`, `user@host`."""
    text = text.rpartition("@")[2]
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else None
        return _host_port(host, port, default)
    host, sep, port_text = text.partition(":")
    return _host_port(host, port_text if sep else None, default)


def _socat(words: Sequence[str], _cwd: str) -> Targets:
    found: Targets = []
    for word in words:
        match = _SOCAT_ADDRESS.match(word)
        if match is not None:
            rest = match["rest"]
            if word.lower().startswith(("socks", "proxy")):
                found.append(Unknown)  # proxy:PROXYHOST:HOST:PORT: two hosts, one unread
            else:
                host, _, port = rest.rpartition(":")
                found.append(_host_port(host, port, 0) if host else Unknown)
    return found


def _ssh(words: Sequence[str], _cwd: str) -> Targets:
    options, operands = _options(words, _SSH_VALUES | {"-p", "-J", "-o"})
    port = 22
    found: Targets = []
    for name, value in options:
        if name == "-p" and value is not None:
            port = int(value) if value.isdigit() else UNKNOWN_PORT
        elif name == "-J":
            found += [_split_host_port(hop, 22) for hop in (value or "").split(",")]
    found += _ssh_config_targets(options)
    if operands:
        destination = operands[0]
        if destination.startswith("ssh://"):
            found.append(parse_url(destination))
        else:
            found.append(_host_port(destination.rpartition("@")[2], None, port))
    return found


def _ssh_config_targets(options: list[tuple[str, str | None]]) -> Targets:
    """`-o KEY=VALUE` or `-o 'KEY VALUE'` (ssh reads both) that moves the connection
    elsewhere: where to cannot be told from here."""
    found: Targets = []
    for name, value in options:
        if name == "-o":
            key = re.split(r"[=\s]", (value or "").strip(), maxsplit=1)[0].lower()
            if key in ("hostname", "proxyjump", "proxycommand", "port"):
                found.append(Unknown)
    return found


def _remote_path(word: str, default: int) -> NetTarget | bool | None:
    """`[user@]host:path` (scp, rsync, git): the host; False when the word is local."""
    if "://" in word:
        return parse_url(word)
    if word.startswith(("/", "./", "../", "~")):
        return False
    head, sep, _tail = word.partition(":")
    if not sep or "/" in head:
        return False
    if _tail.startswith(":"):  # rsync host::module (the rsync daemon)
        return _host_port(head.rpartition("@")[2], None, 873)
    return _host_port(head.rpartition("@")[2], None, default) if head else Unknown


def _scp(words: Sequence[str], _cwd: str) -> Targets:
    options, operands = _options(words, _SCP_VALUES | {"-P", "-J"})
    port = 22
    found: Targets = []
    for name, value in options:
        if name == "-P" and value is not None:
            port = int(value) if value.isdigit() else UNKNOWN_PORT
        elif name == "-J":
            found += [_split_host_port(hop, 22) for hop in (value or "").split(",")]
    found += _ssh_config_targets(options)
    for operand in operands:
        target = _remote_path(operand, port)
        if target is not False:
            found.append(target if isinstance(target, NetTarget) else Unknown)
    return found


def _sftp(words: Sequence[str], cwd: str) -> Targets:
    options, operands = _options(words, _SCP_VALUES | {"-P", "-J", "-b", "-B", "-R", "-s"})
    if not operands:
        return []
    port = next((int(v) for n, v in options if n == "-P" and v and v.isdigit()), 22)
    first = operands[0]
    if first.startswith("sftp://"):
        return [parse_url(first), *_ssh_config_targets(options)]
    host = first.partition(":")[0].rpartition("@")[2]
    return [_host_port(host, None, port), *_ssh_config_targets(options)]


def _rsync(words: Sequence[str], _cwd: str) -> Targets:
    options, operands = _options(words, _RSYNC_VALUES | {"--port"})
    found: Targets = []
    port = next((int(v) for n, v in options if n == "--port" and v and v.isdigit()), None)
    for operand in operands:
        target = _remote_path(operand, 22)
        if target is not False:
            if isinstance(target, NetTarget) and port is not None and target.port == 873:
                target = NetTarget(target.host, port)
            found.append(target if isinstance(target, NetTarget) else Unknown)
    return found


def _git_remote(word: str) -> NetTarget | bool | None:
    """A git remote spelled as a URL or `host:path`; False for a local path or a name."""
    if word.startswith("file://"):
        return False
    if "://" in word:
        return parse_url(word)
    target = _remote_path(word, 22)
    return target


def _git(words: Sequence[str], cwd: str) -> Targets:
    found = _git_globals(words, cwd)
    if found is None:
        return [Unknown]  # `-c url.X.insteadOf=…` rewrites every URL
    index, directory, git_dir = found
    if index >= len(words):
        return []
    return _git_subcommand(words[index], list(words[index + 1 :]), directory, git_dir)


def _git_globals(words: Sequence[str], cwd: str) -> tuple[int, str, str | None] | None:
    """(index of the subcommand, the directory `-C` moves to, `--git-dir`), or None when
    a `-c` option rewrites URLs (`url.*.insteadOf`)."""
    index = 0
    git_dir: str | None = None
    directory = cwd
    while index < len(words) and words[index].startswith("-"):
        name, eq, attached = words[index].partition("=")
        value = attached if eq else (words[index + 1] if index + 1 < len(words) else "")
        if name == "-c" and "insteadof" in value.lower():
            return None
        if name == "-C" and value:
            directory = os.path.join(directory, value)
        if name == "--git-dir" and value:
            git_dir = os.path.join(directory, value)
        index += 1 if eq or name not in _GIT_GLOBAL_VALUES else 2
    return index, directory, git_dir


_GIT_NETWORK = frozenset({"clone", "fetch", "pull", "push", "ls-remote"})


def _git_subcommand(sub: str, rest: list[str], directory: str, git_dir: str | None) -> Targets:
    """The hosts `git SUB REST…` talks to."""
    if sub == "submodule" and rest[:1] and rest[0] in ("add", "update", "sync", "foreach"):
        return [Unknown]  # the URLs are in .gitmodules (or the command runs a script)
    if sub == "archive":
        remotes = [w.partition("=")[2] for w in rest if w.startswith("--remote=")]
        return [_named_or_url(r, directory, git_dir) for r in remotes]
    if sub == "remote":
        return [Unknown] if "-f" in rest or rest[:1] == ["update"] else []
    if sub not in _GIT_NETWORK:
        return []
    options, operands = _options(rest, _GIT_VALUES)
    if sub == "clone":
        return [_named_or_url(operands[0], directory, git_dir)] if operands else [Unknown]
    if any(name in ("--all", "--multiple") for name, _ in options):
        return [Unknown]
    remote = operands[0] if operands else "origin"
    return [_named_or_url(remote, directory, git_dir)]


def _named_or_url(word: str, directory: str, git_dir: str | None) -> NetTarget | None:
    """A remote as written: a URL or `host:path` (its host, named on the command line),
    else a remote name looked up in the repository's configuration (its host counts as
    implied: the repository, not the command, names it), else nothing (a local path, or
    no such remote: git fails)."""
    target = _git_remote(word)
    if isinstance(target, NetTarget) or target is None:
        return target
    urls = remote_urls(word, directory, git_dir)
    if urls is None:
        return _LOCAL
    if urls == [_REWRITTEN]:
        return Unknown
    found = [_git_remote(url) for url in urls]
    if any(t is None for t in found):
        return Unknown
    hosts = [t for t in found if isinstance(t, NetTarget)]
    if not hosts:
        return _LOCAL
    return Implied(*hosts[0]) if len(set(hosts)) == 1 else Unknown


# A remote that is a directory on this machine (or no remote at all): nothing to check.
_LOCAL = NetTarget("localhost.invalid", 0)
_REWRITTEN = "\x00rewritten"


def remote_urls(name: str, directory: str, git_dir: str | None = None) -> list[str] | None:
    """The `url`/`pushurl` of remote `name` in the repository around `directory`
    (None when there is no such remote; [_REWRITTEN] when the configuration rewrites
    URLs, so the host cannot be told)."""
    config = _git_config_path(directory, git_dir)
    if config is None:
        return None
    try:
        with open(config, encoding="utf-8", errors="replace") as handle:
            text = handle.read(256 * 1024)
    except OSError:
        return None
    if "insteadof" in text.lower():
        return [_REWRITTEN]
    section = None
    urls: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            header = re.fullmatch(r'\[\s*remote\s+"(?P<name>[^"]*)"\s*\]', line)
            section = header["name"] if header else ""
            continue
        if section != name:
            continue
        key, eq, value = line.partition("=")
        if eq and key.strip().lower() in ("url", "pushurl"):
            urls.append(value.strip().strip('"'))
    return urls or None


def remote_hosts(directory: str) -> list[str]:
    """`HOST:PORT` of every remote of the repository around `directory` (for the `[net]`
    table `askgate init` writes); [] when there is none or URLs are rewritten."""
    config = _git_config_path(directory, None)
    if config is None:
        return []
    try:
        with open(config, encoding="utf-8", errors="replace") as handle:
            text = handle.read(256 * 1024)
    except OSError:
        return []
    names = [m["name"] for m in _REMOTE_HEADER.finditer(text)]
    found: list[str] = []
    for name in names:
        for url in remote_urls(name, directory) or []:
            target = _git_remote(url) if url != _REWRITTEN else None
            if isinstance(target, NetTarget) and target.value not in found:
                found.append(target.value)
    return found


_REMOTE_HEADER = lazy_compile(r'^\s*\[\s*remote\s+"(?P<name>[^"]*)"\s*\]', re.MULTILINE)


def _git_config_path(directory: str, git_dir: str | None) -> str | None:
    if git_dir is not None:
        return os.path.join(git_dir, "config")
    current = os.path.abspath(directory)
    for _ in range(64):
        candidate = os.path.join(current, ".git")
        if os.path.isdir(candidate):
            return os.path.join(candidate, "config")
        if os.path.isfile(candidate):
            try:
                with open(candidate, encoding="utf-8") as handle:
                    pointer = handle.read(4096).strip()
            except OSError:
                return None
            if not pointer.startswith("gitdir:"):
                return None
            linked = os.path.join(current, pointer[len("gitdir:") :].strip())
            common = os.path.join(linked, "commondir")
            if os.path.isfile(common):
                with open(common, encoding="utf-8") as handle:
                    linked = os.path.join(linked, handle.read(4096).strip())
            return os.path.join(linked, "config")
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None


def _pip(words: Sequence[str], _cwd: str) -> Targets:
    options, operands = _options(words, _PIP_VALUES | _PIP_INDEXES)
    if not operands or operands[0] not in _PIP_NETWORK:
        return []
    found = _url_words(words)
    names = {name for name, _ in options}
    for name, value in options:
        if name in _PIP_INDEXES and value is not None and "://" not in value:
            if name in ("-f", "--find-links") and not value.startswith(("http", "//")):
                continue  # a local directory of wheels
            found.append(parse_url(value, default_scheme="https"))
    if not names & {"-i", "--index-url", "--no-index"}:
        found += PYPI
    return found


def _npm_like(registry: tuple[NetTarget, ...]) -> Callable[[Sequence[str], str], Targets]:
    def hosts(words: Sequence[str], _cwd: str) -> Targets:
        options, operands = _options(words, frozenset({"--registry", "-w", "--workspace"}))
        found = _url_words(words)
        named = [value for name, value in options if name == "--registry" and value]
        found += [parse_url(v, default_scheme="https") for v in named if "://" not in v]
        if operands and operands[0] in _NPM_NETWORK and not named:
            found += registry
        return found

    return hosts


def _npx(words: Sequence[str], _cwd: str) -> Targets:
    return [*_url_words(words), *NPM]


def _implicit(
    network: frozenset[str], hosts: tuple[NetTarget, ...]
) -> Callable[[Sequence[str], str], Targets]:
    def found(words: Sequence[str], _cwd: str) -> Targets:
        operands = [word for word in words if not word.startswith("-")]
        return [*_url_words(words), *hosts] if operands[:1] and operands[0] in network else []

    return found


def _go(words: Sequence[str], _cwd: str) -> Targets:
    operands = [word for word in words if not word.startswith("-")]
    if operands[:2] == ["mod", "download"] or (operands[:1] and operands[0] in _GO_NETWORK):
        return [*GO]
    return []


PROGRAMS: dict[str, Callable[[Sequence[str], str], Targets]] = {
    "curl": _curl,
    "wget": _wget,
    "wget2": _wget,
    "nc": _netcat,
    "ncat": _netcat,
    "netcat": _netcat,
    "telnet": _telnet,
    "socat": _socat,
    "ssh": _ssh,
    "scp": _scp,
    "sftp": _sftp,
    "rsync": _rsync,
    "git": _git,
    "pip": _pip,
    "pip3": _pip,
    "npm": _npm_like(NPM),
    "pnpm": _npm_like(NPM),
    "yarn": _npm_like(YARN),
    "npx": _npx,
    "cargo": _implicit(_CARGO_NETWORK, CRATES),
    "go": _go,
}
_PYTHON = lazy_compile(r"python(?:[0-9.]*)?")

# (command, the HOST:PORT values it contacts; "?" = a target that cannot be told)
EXAMPLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("curl https://example.com/x", ("example.com:443",)),
    ("curl -fsSL example.com", ("example.com:80",)),
    ("curl -H X-Token:1 -o out http://a.test:8080/p", ("a.test:8080",)),
    ("curl -x proxy.test:3128 https://b.test", ("b.test:443", "proxy.test:3128")),
    ("curl --resolve b.test:443:10.0.0.1 https://b.test", ("b.test:443", "?")),
    ("curl http://2130706433/", ("localhost:80",)),
    ("curl http://evil.test\\@good.test/", ("?",)),
    ("wget -q -O - https://files.test/a.tgz", ("files.test:443",)),
    ("nc -z db.test 5432", ("db.test:5432",)),
    ("nc -l 8080", ()),
    ("ssh -p 2222 deploy@host.test uptime", ("host.test:2222",)),
    ("ssh -J jump.test host.test", ("jump.test:22", "host.test:22")),
    ("scp -P 2200 file user@host.test:/tmp/", ("host.test:2200",)),
    ("scp ./a ./b", ()),
    ("rsync -av src/ backup.test::module/", ("backup.test:873",)),
    ("rsync -av src/ user@backup.test:dst/", ("backup.test:22",)),
    ("git clone https://github.com/o/r.git", ("github.com:443",)),
    ("git clone git@github.com:o/r.git", ("github.com:22",)),
    ("git status", ()),
    ("pip install requests", ("pypi.org:443", "files.pythonhosted.org:443")),
    ("pip install --index-url https://mirror.test/simple x", ("mirror.test:443",)),
    ("python -m pip download --no-index -f ./wheels x", ()),
    ("npm install --registry https://npm.test/ left-pad", ("npm.test:443",)),
    ("npm test", ()),
    ("socat - TCP:db.test:5432", ("db.test:5432",)),
)


def contacted(command: str, cwd: str, argv: Sequence[str] = ()) -> Targets:
    """The targets `command` (one normalised unit) contacts; [] for other programs.
    `argv`: its words, when one holds a space (Unit.words). Reads at most one file: the
    repository's git configuration, for a named remote."""
    words = list(argv) if argv else command.split(" ")
    program = os.path.basename(words[0])
    if program not in NETWORK_PROGRAMS:
        return []
    rest = words[1:]
    if _PYTHON.fullmatch(program):
        if rest[:2] != ["-m", "pip"]:
            return []
        program, rest = "pip", rest[2:]
    elif program == "uv":
        if rest[:1] != ["pip"]:
            return []
        program, rest = "pip", rest[1:]
    handler = PROGRAMS.get(program)
    if handler is None:
        return []  # (NETWORK_PROGRAMS names every key of PROGRAMS: a test checks it)
    found = handler(rest, cwd)
    unique: Targets = []
    for target in found:
        if target is _LOCAL:
            continue
        if target not in unique:
            unique.append(target)
    return unique


def looks_at_files(command: str) -> bool:
    """Whether `contacted` may read a git configuration for `command` (its answer then
    depends on a file, so it is not remembered)."""
    return command.startswith("git ") or " git " in command[:64]


def render(targets: Targets) -> tuple[str, ...]:
    return tuple("?" if target is None else target.value for target in targets)


def check_examples(cwd: str = "/") -> list[str]:
    """Each example that does not give its hosts (for the tests)."""
    failed = []
    for command, expected in EXAMPLES:
        got = render(contacted(command, cwd))
        if sorted(got) != sorted(expected):
            failed.append(f"{command!r}: {got} != {expected}")
    return failed


__all__ = [
    "PROGRAMS",
    "SCHEME_PORTS",
    "Implied",
    "check_examples",
    "contacted",
    "remote_hosts",
    "remote_urls",
]
