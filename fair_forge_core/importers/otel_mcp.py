"""MCP `tools/call` spans (OpenTelemetry semantic conventions, `docs/gen-ai/mcp.md`) that record a
call another tool span records: which tool span each one belongs to (`otel_genai` reads the call
once, from that span, with the error mark and result the MCP spans add)."""

from __future__ import annotations

from typing import Any

from fair_forge_core.importers.otel_spans import Intervals, Span
from fair_forge_core.importers.trace import nearest_marked


def is_mcp_call(span: Span) -> bool:
    """An MCP `tools/call` span (`mcp.method.name`; `gen_ai.operation.name` is only recommended on it)."""
    return span.attrs.get("mcp.method.name") == "tools/call"


def _tool_name(span: Span) -> str:
    name = span.attrs.get("gen_ai.tool.name")
    return name if isinstance(name, str) else f"\0{name!r}"


def mcp_same_call(spans: list[Span]) -> dict[int, Span | None]:
    """The MCP `tools/call` spans that record a call another tool span records (by their `id`),
    each with the outermost tool span of that call, the one read: those under a tool span
    (`execute_tool` or `tools/call`, by `parentSpanId`: the agent's tool span around its MCP
    client span, the client span around the server's; a parent cycle that leads back to the
    span itself ends the walk), and, not linked to one, those inside the time of an
    `execute_tool` span that is no MCP span, of the same trace and `gen_ai.tool.name` (of
    several, the first of those starting by its start to end last). A span whose tool spans
    above it close a cycle has no outermost one: None (it is skipped, nothing merged).

    Near-linear in the spans: the walks up are one pass over the tree (`nearest_marked`), the
    way to the outermost is followed once per span (each span's answer kept), and "inside the
    time of" is a binary search among the enclosing spans sorted by start."""
    by_id = {s.key: s for s in spans}

    def is_tool(key: tuple[str, str]) -> bool:
        span = by_id[key]
        return span.attrs.get("gen_ai.operation.name") == "execute_tool" or is_mcp_call(span)

    def parent_of(key: tuple[str, str]) -> tuple[str, str] | None:
        parent = by_id[key].parent_key
        return parent if parent in by_id else None

    tools = nearest_marked(by_id, parent_of, is_tool)
    outer: dict[tuple[str, Any], list[Span]] = {}  # (trace, tool name) → its execute_tool spans that are no MCP span
    for span in spans:
        if span.attrs.get("gen_ai.operation.name") == "execute_tool" and not is_mcp_call(span):
            outer.setdefault((span.key[0], _tool_name(span)), []).append(span)
    within = {name: Intervals([(s.start, s.end) for s in around]) for name, around in outer.items()}
    above: dict[int, Span] = {}  # an MCP span → the tool span right around it
    for span in (s for s in spans if is_mcp_call(s)):
        parent = tools.get(span.parent_key)
        if parent is not None and parent != span.key:
            above[id(span)] = by_id[parent]
        else:
            name = (span.key[0], _tool_name(span))
            found = within[name].cover(span.start, span.end) if name in within else None
            if found is not None:
                above[id(span)] = outer[name][found]
    return _outermost(above)


def _outermost(above: dict[int, Span]) -> dict[int, Span | None]:
    """Each span's outermost tool span, following `above` up (each span's answer kept, so each
    link is followed once); None for the spans of a cycle and those under one."""
    found: dict[int, Span | None] = {}
    for start in above:
        path, on_path = [], set()
        node = start
        while node in above and node not in found and node not in on_path:
            path.append(node)
            on_path.add(node)
            node = id(above[node])
        if node in on_path:  # a cycle: no span of it is the outermost
            answer = None
        elif node in found:
            answer = found[node]
        else:  # the top: the span above the last one on the path
            answer = above[path[-1]]
        for member in path:
            found[member] = answer
    return found
