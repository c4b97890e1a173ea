"""The import contracts see every arrow (issue 24 item 8): each command that `askgate`
routes by word, each agent's hook and each `askgate install AGENT` is an import that
grimp (import-linter's graph) finds, not an import string it cannot read. The contracts
themselves are pyproject.toml's `[tool.importlinter]`, run by `lint-imports`."""

from __future__ import annotations

import grimp
import pytest

from askgate import cli, hooks, install

GRAPH = grimp.build_graph("askgate")


def _imports(importer: str, imported: str) -> bool:
    return GRAPH.direct_import_exists(importer=importer, imported=imported, as_packages=False)


@pytest.mark.parametrize("word", sorted(cli.ROUTED))
def test_each_routed_command_is_an_import_the_contracts_see(word: str) -> None:
    module = cli.ROUTED[word].partition(":")[0]
    assert module in GRAPH.modules, module
    assert module == "askgate.cli" or _imports("askgate.cli", module), word


def test_the_hook_command_is_an_import_the_contracts_see() -> None:
    assert _imports("askgate.cli", "askgate.hooks")
    assert _imports("askgate.entry", "askgate.hooks")
    for agent, target in hooks.HOOKS.items():
        module = target.partition(":")[0]
        assert _imports("askgate.hooks", module), agent
        assert _imports(module, "askgate.hooks.runner"), agent


@pytest.mark.parametrize("agent", sorted(install.AGENTS))
def test_each_install_agent_is_an_import_the_contracts_see(agent: str) -> None:
    assert _imports("askgate.install", install.AGENTS[agent]), agent


def test_the_routing_tables_name_what_they_import() -> None:
    """The word tables (for help and errors) and the explicit imports agree."""
    for word, target in cli.ROUTED.items():
        module, _, name = target.partition(":")
        function = cli._routed_function(word)
        assert function.__module__ == module and function.__name__ == name, word
    for agent, module in install.AGENTS.items():
        assert install._installer(agent).__module__ == module, agent
