"""ACP proxy: `askgate acp -- AGENT…` answers an ACP agent's permission requests by policy."""
