"""Which arguments of well-known commands are paths (data for pathargs.py)."""

from __future__ import annotations

from typing import NamedTuple

from askgate.policy.shell.argv import names


class Spec(NamedTuple):
    """How one command's words map to paths.

    kind: "read" (operands read), "write" (operands written), "copy" (last operand
    written unless -t, the rest read), "none" (operands only when they look like
    paths), "ignore" (operands are never local paths: ssh's host and remote command).
    pattern: the first operand is a pattern/program unless an option in
    `pattern_opts` supplied it. skip: leading operands that are not paths (chmod MODE).
    """

    kind: str
    short_value: str = ""
    long_value: frozenset[str] = frozenset()
    pattern: bool = False
    pattern_opts: frozenset[str] = frozenset()
    read_opts: frozenset[str] = frozenset()
    write_opts: frozenset[str] = frozenset()
    skip: int = 0
    optional_value: frozenset[str] = frozenset()


def spec(
    kind: str,
    short: str = "",
    long: str = "",
    *,
    pattern: str | None = None,
    reads: str = "",
    writes: str = "",
    skip: int = 0,
    optional: str = "",
) -> Spec:
    """A Spec from space-separated option lists; `pattern` names the options giving it."""
    return Spec(
        kind,
        short,
        names(long),
        pattern is not None,
        names(pattern or ""),
        names(reads),
        names(writes),
        skip,
        names(optional),
    )


_GREP = spec(
    "read",
    "efABCmdD",
    "--regexp --file --max-count --context --after-context --before-context --include "
    "--exclude --exclude-dir --exclude-from --label --binary-files --devices --directories",
    pattern="-e -f --regexp --file",
    reads="-f --file --exclude-from",
    optional="--color --colour",
)
_RG = spec(
    "read",
    "efABCmgtTjMdErl",
    "--regexp --file --max-count --context --after-context --before-context --glob --iglob "
    "--type --type-not --threads --max-columns --max-depth --encoding --replace --pre "
    "--pre-glob --sort --sortr --colors --path-separator --type-add --type-clear --ignore-file "
    "--max-filesize --context-separator --engine --field-match-separator "
    "--field-context-separator --dfa-size-limit --regex-size-limit",
    pattern="-e -f --regexp --file",
    reads="-f --file --ignore-file",
    optional="--color",
)
_AG = spec(
    "read",
    "ABCGgmp",
    "--ignore --ignore-dir --file-search-regex --max-count --context --after --before "
    "--path-to-ignore --depth --pager",
    pattern="",
)
_SED = spec(
    "read",
    "efl",
    "--expression --file --line-length",
    pattern="-e -f --expression --file",
    reads="-f --file",
    optional="-i --in-place",
)
_AWK = spec(
    "read",
    "fvFileE",
    "--file --assign --field-separator --include --load --source",
    pattern="-f --file -e --source -E",
    reads="-f --file -i --include -E",
    writes="--pretty-print --profile --dump-variables",  # gawk writes these files
    optional="--pretty-print --profile --dump-variables",
)
_HEAD = spec("read", "ncs", "--lines --bytes --sleep-interval --pid --max-unchanged-stats")
_COPY = spec(
    "copy",
    "tS",
    "--target-directory --suffix",
    writes="-t --target-directory",
    optional="--backup --reflink --sparse --preserve --no-preserve --update --context",
)
_CC = spec(
    "read",
    "oILDUlxTuze",
    "--output -include -isystem -iquote -idirafter -imacros -MF -MT -MQ -Xlinker -Xassembler "
    "-Xpreprocessor --param",
    writes="-o --output -MF",
)
_SHELL = spec("read", "oO", "--rcfile --init-file", reads="--rcfile --init-file")

_READERS = names(
    "cat more batcat nl tac column strings base32 md5sum sha1sum sha224sum sha256sum sha384sum "
    "sha512sum b2sum cksum sum wc cmp comm paste join fold fmt expand unexpand rev shuf readlink "
    "realpath zcat bzcat xzcat zstdcat lz4cat zless view diff3 sdiff pr iconv look tsort "
    "xmllint source . python2 lsattr getfacl md5 shasum crontab"
)
_WRITERS = names(
    "rm rmdir unlink mkfifo mknod vi vim nvim nano emacs ed ex pico micro hx kak sqlite3 tee "
    "srm chattr setfacl"
)

SPECS: dict[str, Spec] = dict.fromkeys(_READERS, Spec("read"))
SPECS.update(dict.fromkeys(_WRITERS, Spec("write")))
SPECS.update(dict.fromkeys(("head", "tail"), _HEAD))
SPECS.update(dict.fromkeys(("grep", "egrep", "fgrep", "zgrep"), _GREP))
SPECS.update(dict.fromkeys(("ag", "ack"), _AG))
SPECS.update(dict.fromkeys(("sed", "gsed"), _SED))
SPECS.update(dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _AWK))
SPECS.update(dict.fromkeys(("cp", "mv", "ln"), _COPY))
SPECS.update(dict.fromkeys(("gcc", "cc", "clang", "g++", "c++", "clang++"), _CC))
SPECS.update(dict.fromkeys(("bash", "sh", "zsh", "dash", "ksh"), _SHELL))
SPECS.update(
    {
        "rg": _RG,
        "ls": spec(
            "read",
            "IwT",
            "--ignore --hide --width --tabsize --format --sort --time --time-style "
            "--block-size --quoting-style --indicator-style",
            optional="--color --colour --hyperlink",
        ),
        "sort": spec(
            "read",
            "koStT",
            "--key --output --buffer-size --field-separator --temporary-directory --parallel "
            "--files0-from --batch-size --compress-program --random-source --sort",
            reads="--files0-from --random-source",
            writes="-o --output",
        ),
        "diff": spec(
            "read",
            "CUxXIFLWSD",
            "--context --unified --exclude --exclude-from --ignore-matching-lines "
            "--show-function-line --label --width --starting-file --from-file --to-file "
            "--ifdef --line-format --tabsize --horizon-lines",
            reads="-X --exclude-from --from-file --to-file",
            optional="--color",
        ),
        "install": spec(
            "copy",
            "tSmogC",
            "--target-directory --suffix --mode --owner --group",
            writes="-t --target-directory",
        ),
        "rsync": spec(
            "copy",
            "efBT",
            "--rsh --rsync-path --exclude --include --exclude-from --include-from --files-from "
            "--filter --log-file --password-file --backup-dir --partial-dir --temp-dir "
            "--compare-dest --link-dest --copy-dest --chmod --chown --timeout --port --bwlimit "
            "--max-size --min-size --suffix --out-format --info --debug --remote-option "
            "--usermap --groupmap --skip-compress --only-write-batch --write-batch --read-batch",
            reads="--exclude-from --include-from --files-from --password-file --read-batch",
            writes="--log-file --backup-dir --write-batch --only-write-batch",
        ),
        "scp": spec("copy", "cFiJloPSDX", reads="-F -i"),
        "touch": spec("write", "dtr", "--date --reference", reads="-r --reference"),
        "truncate": spec("write", "sr", "--size --reference", reads="-r --reference"),
        "chown": spec("write", "", "--from --reference", reads="--reference", skip=1),
        "chgrp": spec("write", "", "--reference", reads="--reference", skip=1),
        "chmod": spec("write", "", "--reference", reads="--reference", skip=1),
        "mkdir": spec("write", "m", "--mode", optional="--context"),
        "shred": spec(
            "write", "ns", "--iterations --size --random-source", reads="--random-source"
        ),
        "patch": spec(
            "write",
            "iodpBrDFVYz",
            "--input --output --directory --strip --prefix --reject-file --ifdef --fuzz "
            "--version-control --basename-prefix --suffix",
            reads="-i --input",
            writes="-o --output -r --reject-file",
        ),
        "ssh": spec("ignore", "BbcDEeFIiJLlmOoPpQRSWw", reads="-F -i", writes="-E"),
        "curl": spec(
            "none",
            "oTKdFbcDEHXAeuxmwrYyzCQtUvPhS",
            "--output --upload-file --config --data --data-binary --data-raw --data-ascii "
            "--data-urlencode --form --cookie --cookie-jar --dump-header --trace --trace-ascii "
            "--cert --key --cacert --capath --stderr --netrc-file --output-dir --header --request "
            "--user-agent --referer --user --proxy --max-time --connect-timeout --retry --resolve "
            "--url --write-out --range --json --variable",
            reads="-T --upload-file -K --config -E --cert --key --cacert --capath --netrc-file",
            writes="-o --output -c --cookie-jar -D --dump-header --trace --trace-ascii --stderr "
            "--output-dir",
        ),
        "wget": spec(
            "none",
            "OoaPiteTwUlARDIXQ",
            "--output-document --output-file --append-output --directory-prefix --input-file "
            "--post-file --body-file --load-cookies --save-cookies --config --header --user "
            "--password --tries --timeout --user-agent --post-data --method --level --accept "
            "--reject",
            reads="-i --input-file --post-file --body-file --load-cookies --config",
            writes="-O --output-document -o --output-file -a --append-output -P "
            "--directory-prefix --save-cookies",
        ),
        "go": spec("none", "oC", writes="-o"),
        "make": spec(
            "none",
            "fCIjlWo",
            "--file --makefile --directory --include-dir --jobs --load-average --what-if "
            "--old-file",
            reads="-f --file --makefile -C --directory",
        ),
        "xxd": spec("copy", "cglsoCn"),  # `xxd IN OUT` writes OUT
        "od": spec("read", "AjNStw"),
        "hexdump": spec("read", "efns", reads="-f"),
        "base64": spec("read", "w", "--wrap"),
        "cut": spec("read", "bcdf", "--bytes --characters --delimiter --fields --output-delimiter"),
        "uniq": spec("copy", "fsw", "--skip-fields --skip-chars --check-chars --group"),
        "stat": spec("read", "cf", "--format --printf"),
        "du": spec(
            "read",
            "dBtX",
            "--max-depth --block-size --threshold --exclude --exclude-from --time-style "
            "--files0-from",
            reads="-X --exclude-from --files0-from",
        ),
        "tree": spec("read", "LPIoH", "--filelimit --timefmt --sort --charset", writes="-o"),
        "file": spec(
            "read",
            "mfFeP",
            "--magic-file --files-from --separator --exclude --parameter",
            reads="-m --magic-file -f --files-from",
        ),
        "less": spec(
            "read",
            "pxbhjoOPtTyz",
            "--pattern --log-file --LOG-FILE --tag --tag-file",
            writes="-o -O --log-file --LOG-FILE",
        ),
        "bat": spec(
            "read",
            "lHrmp",
            "--language --highlight-line --line-range --map-syntax --theme --style --tabs "
            "--paging --wrap --terminal-width --file-name --diff-context --italic-text "
            "--decorations --pager",
            optional="--color",
        ),
        "php": spec("read", "dcfr", reads="-f -c"),
        "python": spec("read", "WXQ"),
        "python3": spec("read", "WXQ"),
        "ruby": spec("read", "rICEFx"),
        "perl": spec("read", "IMmx"),
        "node": spec("read", "rC", "--require --import --input-type --loader --conditions"),
    }
)

# Options after which the operands are code or a module name, not a script file.
CODE_OPTIONS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("python", "python3", "python2"), names("-c -m")),
    "node": names("-e -p --eval --print"),
    "ruby": names("-e"),
    "perl": names("-e -E"),
    "php": names("-r"),
    **dict.fromkeys(("bash", "sh", "zsh", "dash", "ksh"), names("-c")),
}
