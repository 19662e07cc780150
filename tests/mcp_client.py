"""Drives `memlog mcp` with the official MCP Python SDK, as an agent's client would.

Usage: python tests/mcp_client.py MEMLOG_BINARY WORKSPACE

The workspace must hold an initialized project `demo`. Run by tests/cli/mcp.rs; prints `ok`
and exits 0 when every check passed, else raises.
"""

import asyncio
import json
import os
import pathlib
import subprocess
import sys

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# Obviously fake: the shape of a GitHub token, never a real one.
FAKE_TOKEN = "ghp_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE0000"

EXPECTED_TOOLS = {
    "query", "show", "list", "create", "supersede", "update", "deprecate", "pin", "unpin",
    "validate", "apply", "context", "history", "audit", "stats", "verify", "projects", "health",
    "config_validate",
}


SCHEMAS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "schemas" / "commands"
# The command each tool runs, by its schema file.
COMMAND_OF = {"create": "add", "config_validate": "config-validate"}


def body(result, tool=None):
    """The JSON a tool answered (the text content; structured content must agree), checked
    against the schema of the command the tool runs: the same contract as `--json`."""
    assert result.content, f"no content: {result}"
    data = json.loads(result.content[0].text)
    if result.structured_content is not None:
        assert result.structured_content == data, "structured content differs from the text"
    if tool is not None:
        name = COMMAND_OF.get(tool, tool.replace("_", "-"))
        schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
        jsonschema.Draft202012Validator(schema).validate(data)
    return data


async def call(session, tool, args):
    """Calls a tool and returns its checked answer."""
    return body(await session.call_tool(tool, args), tool)


def entry(summary, **extra):
    args = {
        "section": "decisions",
        "kind": "decision",
        "subject": "auth-service.token-refresh",
        "scope": "repo",
        "summary": summary,
        "content": "Tokens are refreshed by the gateway five minutes before they expire.",
        "confidence": 0.9,
        "evidence": [{"type": "code", "uri": "src/auth.rs#L10-L20", "note": "refresh loop"}],
        "tags": ["auth"],
    }
    args.update(extra)
    return args


async def main(binary, workspace):
    env = {"MEMLOG_ACTOR": "agent-mcp", "MEMLOG_NOW": "2026-11-22T10:31:12.123Z"}
    params = StdioServerParameters(
        command=binary,
        args=["mcp", "--workspace", workspace, "--project", "demo"],
        env=env,
        cwd=workspace,
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "memlog", init.server_info
            assert init.capabilities.tools is not None

            listed = await session.list_tools()
            names = {t.name for t in listed.tools}
            assert EXPECTED_TOOLS <= names, f"missing tools: {EXPECTED_TOOLS - names}"
            for tool in listed.tools:
                assert tool.description, f"{tool.name} has no description"
                assert tool.input_schema.get("type") == "object", tool.name
            create = next(t for t in listed.tools if t.name == "create")
            assert "summary" in create.input_schema["properties"]

            # Create an entry and query it back.
            created = await session.call_tool("create", entry("Refresh tokens in the gateway"))
            assert not created.is_error, created
            data = body(created, "create")
            assert data["success"] is True and isinstance(data["warnings"], list), data
            entry_id = data["results"]["id"]
            assert entry_id.startswith("m-"), data

            found = await call(session, "query", {"text": "gateway refresh"})
            assert found["success"] is True, found
            ids = [r["id"] for r in found["results"]]
            assert entry_id in ids, found

            shown = await call(session, "show", {"id": entry_id[:8]})
            assert shown["results"]["summary"] == "Refresh tokens in the gateway", shown

            # A command-line writer beside the running server: no lock is held between calls.
            cli = subprocess.run(
                [binary, "--workspace", workspace, "--json", "add", "demo",
                 "--section", "learnings", "--kind", "other", "--subject", "cli.writer",
                 "--scope", "repo", "--summary", "Written by the command line",
                 "--content", "While the MCP server runs.", "--confidence", "0.8",
                 "--evidence", "code:src/lib.rs#L1:the place"],
                env={**os.environ, **env}, capture_output=True, text=True, timeout=60,
            )
            assert cli.returncode == 0, cli.stdout + cli.stderr
            listed_entries = await call(session, "list", {})
            assert len(listed_entries["results"]) == 2, listed_entries

            # A fake credential is refused, and never echoed back.
            refused = await session.call_tool(
                "create", entry("Gateway token for the refresh job", content=f"use {FAKE_TOKEN}")
            )
            assert refused.is_error, refused
            error = body(refused, "create")
            assert error["success"] is False, error
            assert error["error"]["code"] == "SECRET_DETECTED", error
            assert FAKE_TOKEN not in refused.content[0].text

            # Bad arguments are tool errors naming the problem; the server keeps serving.
            bad = await session.call_tool("query", {"txt": "gateway"})
            assert bad.is_error and body(bad)["error"]["code"] == "USAGE_ERROR", bad
            assert "txt" in body(bad)["error"]["message"], bad
            bad = await session.call_tool("create", {"confidence": "high"})
            assert bad.is_error and body(bad)["error"]["code"] == "USAGE_ERROR", bad
            bad = await session.call_tool("show", {"id": "m-zzzzzzzz"})
            assert bad.is_error and body(bad)["error"]["code"] == "NOT_FOUND", bad
            bad = await session.call_tool("no-such-tool", {})
            assert bad.is_error, bad

            # Supersede, then the history has both versions.
            replaced = await session.call_tool(
                "supersede",
                {"id": entry_id, "reason": "moved", "summary": "Refresh tokens in the sidecar"},
            )
            assert not replaced.is_error, replaced
            new_id = body(replaced)["results"]["id"]
            found = await call(session, "query", {"text": "refresh", "summary_only": True})
            ids = [r["id"] for r in found["results"]]
            assert new_id in ids and entry_id not in ids, found

            # Context: an AgentTask in, the task with memory_context out; or prompt text.
            task = {"goal": "change token refresh", "project": "demo", "memory_enabled": True}
            filled = await call(session, "context", {"task": task})
            assert filled["results"]["memory_context"], filled
            prompt = await call(session, "context", {"task": task, "format": "prompt"})
            assert "sidecar" in prompt["results"]["prompt"], prompt

            stats = await call(session, "stats", {})
            assert stats["success"] is True, stats
            health = await call(session, "health", {"all": True})
            assert [h["project"] for h in health["results"]] == ["demo", "global"], health
            assert all(h["healthy"] for h in health["results"]), health
            checked = await call(session, "config_validate", {})
            assert checked["results"][0]["valid"] is True, checked
            projects = await call(session, "projects", {})
            assert projects["results"][0]["entries"] == 3, projects
            week = await call(session, "stats", {"range": "7d"})
            assert week["results"]["range"]["label"] == "7d", week
            ran = await call(session, "lifecycle_run", {"dry_run": True})
            assert ran["results"]["dry_run"] is True, ran
            fresh = await call(session, "check_freshness", {})
            assert isinstance(fresh["results"], list), fresh
    print("ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
