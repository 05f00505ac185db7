"""The interop stage's Python client: the official `mcp` SDK drives the built synapse-mcp over stdio.

It lists everything (all pages), runs the shared session in ../scenario.json (every tool the server
lists, a resource of every scheme), gets every prompt, completes every argument, answers the
approvals the server asks for, and subscribes to a variable and waits for its change notification.

    python check.py --binary target/debug/synapse-mcp --era legacy    # initialize, 2025-11-25
    python check.py --binary target/debug/synapse-mcp --era modern    # server/discover, 2026-07-28

Over HTTP (`--transport http`) the server takes the tokens file's token and, as an OAuth 2.1
resource server, JWT access tokens of a key made here: a second client connects with a JWT, and
a request without a token must get 401 with a `WWW-Authenticate` the SDK's OAuth code finds the
protected-resource metadata from.

`legacy` forces the initialize handshake; `modern` is the SDK's default (`mode="auto"`), which
probes `server/discover` and adopts 2026-07-28 when the server offers it. Each check prints one
line; any client-side error, exception, validation failure or SDK warning fails the run (exit 1).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Awaitable, Callable
import contextlib
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import jwt
import mcp_types as types
from cryptography.hazmat.primitives.asymmetric import ec
from mcp import Client
from mcp.client.auth.utils import extract_resource_metadata_from_www_auth, handle_protected_resource_response
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.client.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)

HERE = Path(__file__).resolve().parent
STAGE = HERE.parent
REPOSITORY = STAGE.parent.parent
NOTIFICATION_WAIT_SECONDS = 10
APPROVAL = {"approve": True, "reason": "approved by the interop check"}
# The OAuth authorization server the HTTP server trusts, played by a key made here.
ISSUER = "https://auth.interop.synapse.test"
AUDIENCE = "https://mcp.interop.synapse.test/mcp"


class Checks:
    """Counts and prints one line per check."""

    def __init__(self, client: str) -> None:
        self.client = client
        self.passed = 0
        self.failed: list[str] = []

    def ok(self, name: str, detail: str = "") -> None:
        self.passed += 1
        print(f"ok   {self.client} {name}{': ' + detail if detail else ''}", flush=True)

    def fail(self, name: str, message: str) -> None:
        self.failed.append(name)
        first = " ".join(message.split())
        print(f"FAIL {self.client} {name}: {first[:600]}", flush=True)

    async def run(self, name: str, body: Callable[[], Awaitable[str | None]]) -> bool:
        """Runs one check; an exception of any kind fails it with its message."""
        try:
            detail = await body()
        except Exception as error:  # noqa: BLE001 - every failure is reported, none hidden
            self.fail(name, describe(error))
            return False
        self.ok(name, detail or "")
        return True


def describe(error: BaseException) -> str:
    """An exception as one line: its type, message and, for grouped errors, the first cause."""
    if isinstance(error, BaseExceptionGroup) and error.exceptions:
        return describe(error.exceptions[0])
    code = getattr(error, "code", None)
    text = f"{type(error).__name__}{f' {code}' if isinstance(code, int) else ''}: {error}"
    if error.__cause__ is not None:
        text += f" (caused by {type(error.__cause__).__name__}: {error.__cause__})"
    return text


class WarningLog(logging.Handler):
    """Collects what the SDK logs at WARNING or above (dropped notifications, failed validation)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


class Fail(Exception):
    """A check's own verdict (not an SDK exception)."""


def dig(value: Any, path: str) -> Any:
    """The value at a dot path (`a.0.b`) of a JSON value."""
    for segment in path.split("."):
        if isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        elif isinstance(value, dict) and segment in value:
            value = value[segment]
        else:
            raise Fail(f"the result has nothing at `{path}` (stopped at `{segment}`)")
    return value


def substitute(value: Any, saved: dict[str, Any]) -> Any:
    """Resolves the scenario's `${step.path}` placeholders and `{"$file": path}` objects."""
    if isinstance(value, dict):
        if set(value) == {"$file"}:
            return json.loads((REPOSITORY / value["$file"]).read_text(encoding="utf-8"))
        return {key: substitute(item, saved) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, saved) for item in value]
    if not isinstance(value, str) or "${" not in value:
        return value
    if value.startswith("${") and value.endswith("}") and value.count("${") == 1:
        return placeholder(value[2:-1], saved)
    out, rest = "", value
    while "${" in rest:
        before, _, after = rest.partition("${")
        inner, _, rest = after.partition("}")
        found = placeholder(inner, saved)
        out += before + (found if isinstance(found, str) else json.dumps(found, ensure_ascii=False))
    return out + rest


def placeholder(inner: str, saved: dict[str, Any]) -> Any:
    expression, _, pipe = inner.partition("|")
    step, _, path = expression.partition(".")
    if step not in saved:
        raise Fail(f"placeholder `${{{inner}}}` names step `{step}`, which saved no result")
    value = dig(saved[step], path) if path else saved[step]
    if pipe == "uri":
        return quote(str(value), safe="")
    return value


def result_text(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


def contents_text(result: types.ReadResourceResult) -> str:
    parts = []
    for content in result.contents:
        parts.append(content.text if isinstance(content, types.TextResourceContents) else content.blob)
    return "".join(parts)


def check_expectations(step: dict[str, Any], structured: Any, text: str) -> None:
    for path, wanted in step.get("expect", {}).items():
        if structured is None:
            raise Fail(f"expected `{path}` = {json.dumps(wanted, ensure_ascii=False)} but the result has no structured content")
        got = dig(structured, path)
        if got != wanted:
            raise Fail(
                f"`{path}` is {json.dumps(got, ensure_ascii=False)}, expected {json.dumps(wanted, ensure_ascii=False)}"
            )
    if "expectText" in step and step["expectText"] not in text:
        raise Fail(f"the text does not contain {step['expectText']!r}: {text[:300]!r}")


async def all_pages(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(1000):
        page = await fetch(cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            return items
    raise Fail(f"{field}: more than 1000 pages; the cursor never ends")


class Session:
    """One client connected to one fresh server, and what it has seen."""

    def __init__(self, era: str, checks: Checks, client: Client) -> None:
        self.era = era
        self.checks = checks
        self.client = client
        self.questions: list[str] = []
        self.notifications: list[str] = []
        self.events: list[str] = []
        self.called: set[str] = set()
        self.read_schemes: set[str] = set()
        self.saved: dict[str, Any] = {}
        self.tools: list[types.Tool] = []
        self.templates: list[types.ResourceTemplate] = []
        self.prompts: list[types.Prompt] = []


def make_elicitation(questions: list[str]):
    async def answer(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(getattr(params, "message", ""))
        return types.ElicitResult(action="accept", content=APPROVAL)

    return answer


def make_message_handler(notifications: list[str], transport_errors: list[str]):
    async def handle(message: Any) -> None:
        if isinstance(message, Exception):
            transport_errors.append(describe(message))
            return
        method = getattr(message, "method", type(message).__name__)
        params = getattr(message, "params", None)
        uri = getattr(params, "uri", None)
        notifications.append(f"{method} {uri}" if uri else str(method))
        await anyio.lowlevel.checkpoint()

    return handle


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="the synapse-mcp binary to test")
    parser.add_argument("--era", choices=["legacy", "modern"], required=True)
    parser.add_argument(
        "--transport", choices=["stdio", "http"], default="stdio",
        help="stdio, or `serve --http` on a loopback port with a bearer token",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (server log)")
    options = parser.parse_args()

    label = "python/" + ("2025-11-25" if options.era == "legacy" else "2026-07-28")
    if options.transport == "http":
        label += "/http"
    checks = Checks(label)
    warning_log = WarningLog()
    logging.getLogger().addHandler(warning_log)
    # resources/subscribe is deprecated in the SDK but is what initialize-era hosts use.
    warnings.simplefilter("ignore", MCPDeprecationWarning)

    work = Path(tempfile.mkdtemp(prefix="synapse-interop-py-"))
    transport_errors: list[str] = []
    try:
        await run(options, checks, work, transport_errors)
    finally:
        log = work / "server.log"
        server_log = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        if options.keep:
            print(f"     {label} kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    panics = [line for line in server_log.splitlines() if ("panicked" in line or " ERROR " in line) and not known_rmcp_error(line, options)]
    if panics:
        checks.fail("server log", f"{len(panics)} error line(s), first: {panics[0]}")
    for error in transport_errors:
        checks.fail("transport error", error)
    if warning_log.records:
        for record in warning_log.records:
            checks.fail("client warning", record)
    else:
        checks.ok("client warnings", "none")
    print(f"{label}: {checks.passed} passed, {len(checks.failed)} failed", flush=True)
    return 1 if checks.failed else 0


def known_rmcp_error(line: str, options: argparse.Namespace) -> bool:
    """Over HTTP a 2026-07-28 client ends a `subscriptions/listen` stream by closing its
    connection, and rmcp 3.9 logs the listen request it can no longer answer as an ERROR."""
    return options.transport == "http" and "failed to send pending response during drain" in line


async def run(options: argparse.Namespace, checks: Checks, work: Path, transport_errors: list[str]) -> None:
    home, skills = work / "home", work / "skills"
    home.mkdir()
    shutil.copytree(STAGE / "fixtures" / "skills", skills)
    arguments = [
        "--data-dir", str(work / "data"),
        "--skills", str(skills),
        "--config", str(STAGE / "fixtures" / "config.toml"),
        "--log-level", "info",
    ]
    environment = {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share")}
    parameters = StdioServerParameters(
        command=str(Path(options.binary).resolve()),
        args=arguments,
        env=environment,
        cwd=str(work),
    )
    questions: list[str] = []
    notifications: list[str] = []
    log_messages: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        log_messages.append(f"{params.level} {params.logger}")

    async with AsyncExitStack() as stack:
        errlog = stack.enter_context((work / "server.log").open("w", encoding="utf-8"))
        if options.transport == "http":
            url, token, access_token = await stack.enter_async_context(
                http_server(options.binary, arguments, environment, work, errlog, checks)
            )
            # First, while no other session is open: a new principal's first request stores the
            # workspace's rules, whose notifications would otherwise reach the main session as
            # it closes (which the SDK logs as a warning).
            await oauth_checks(options, checks, url, access_token)
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            await stack.enter_async_context(http)
            transport = streamable_http_client(url, http_client=http)
        else:
            transport = stdio_client(parameters, errlog=errlog)
        client = Client(
            transport,
            mode="legacy" if options.era == "legacy" else "auto",
            read_timeout_seconds=60,
            elicitation_callback=make_elicitation(questions),
            message_handler=make_message_handler(notifications, transport_errors),
            logging_callback=on_log,
            log_level="info" if options.era == "modern" else None,
            client_info=types.Implementation(name="synapse-interop-python", version="1.0.0"),
        )

        async def connect() -> str:
            await stack.enter_async_context(client)
            wanted = "2025-11-25" if options.era == "legacy" else "2026-07-28"
            if client.protocol_version != wanted:
                raise Fail(f"negotiated {client.protocol_version}, expected {wanted}")
            return f"protocol {client.protocol_version}"

        if not await checks.run("connect", connect):
            return
        session = Session(options.era, checks, client)
        session.questions = questions
        session.notifications = notifications
        await exercise(session, log_messages)


def make_issuer(work: Path) -> tuple[list[str], str]:
    """A P-256 key standing for an authorization server: the server's OAuth options (the key's
    JWKS in a file) and an access token it signed for the `default` workspace."""
    key = ec.generate_private_key(ec.SECP256R1())
    public = jwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    public.update(kid="interop-1", use="sig", alg="ES256")
    jwks = work / "jwks.json"
    jwks.write_text(json.dumps({"keys": [public]}), encoding="utf-8")
    now = int(time.time())
    claims = {
        "iss": ISSUER, "aud": AUDIENCE, "sub": "interop-oauth", "workspaces": ["default"],
        "scope": "synapse:write", "iat": now, "nbf": now, "exp": now + 3600,
    }
    token = jwt.encode(claims, key, algorithm="ES256", headers={"kid": "interop-1", "typ": "at+jwt"})
    options = ["--oauth-issuer", ISSUER, "--oauth-audience", AUDIENCE, "--oauth-jwks", str(jwks)]
    return options, token


async def oauth_checks(options: argparse.Namespace, checks: Checks, url: str, access_token: str) -> None:
    """Without a token: 401, whose challenge the SDK's OAuth code follows to our metadata. With
    the JWT: a second client connects and lists the tools."""

    async def challenge() -> str:
        opening = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "synapse-interop-python", "version": "1.0.0"}}}
        async with create_mcp_http_client() as http:
            refused = await http.post(url, json=opening, headers={"accept": "application/json, text/event-stream"})
            if refused.status_code != 401:
                raise Fail(f"without a token: {refused.status_code}, expected 401")
            metadata_url = extract_resource_metadata_from_www_auth(refused)
            if not metadata_url:
                raise Fail(f"no resource_metadata in {refused.headers.get('www-authenticate')!r}")
            metadata = await handle_protected_resource_response(await http.get(metadata_url))
        if metadata is None:
            raise Fail(f"the SDK could not read the metadata at {metadata_url}")
        if [str(server).rstrip("/") for server in metadata.authorization_servers] != [ISSUER]:
            raise Fail(f"authorization_servers {metadata.authorization_servers}, expected {ISSUER}")
        # Without --public-url the resource is the configured audience: the identifier the
        # tokens are issued for, wherever the client reaches the server from.
        if str(metadata.resource).rstrip("/") != AUDIENCE:
            raise Fail(f"resource {metadata.resource}, expected {AUDIENCE}")
        return f"401; metadata at {metadata_url} names {ISSUER}"

    async def with_jwt() -> str:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {access_token}"})
        async with http:
            client = Client(
                streamable_http_client(url, http_client=http),
                mode="legacy" if options.era == "legacy" else "auto",
                read_timeout_seconds=60,
                client_info=types.Implementation(name="synapse-interop-python-oauth", version="1.0.0"),
            )
            # Reads only: a call would cache its result and notify.
            async with client:
                tools = await client.list_tools()
                prompts = await client.list_prompts()
        return f"connected with a JWT (ES256): {len(tools.tools)} tools, {len(prompts.prompts)} prompts"

    await checks.run("oauth: 401 + WWW-Authenticate → metadata", challenge)
    await checks.run("oauth: connect with a JWT", with_jwt)


@contextlib.asynccontextmanager
async def http_server(binary: str, arguments: list[str], environment: dict[str, str], work: Path, errlog: Any, checks: Checks):
    """`serve --http` on a free loopback port with a new bearer token and OAuth; yields its URL,
    the token and a JWT access token, and stops it with SIGTERM, which must end it cleanly."""
    binary = str(Path(binary).resolve())
    tokens = work / "tokens.toml"
    added = subprocess.run(
        [binary, "token", "add", "--tokens", str(tokens), "--principal", "interop", "--workspace", "default",
         "--write-skills"],
        capture_output=True, text=True, env=environment, check=True,
    )
    token = added.stdout.strip()
    oauth, access_token = make_issuer(work)
    process = subprocess.Popen(
        [binary, "serve", "--http", "127.0.0.1:0", "--tokens", str(tokens), *oauth, *arguments],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog, env=environment, cwd=str(work),
    )
    try:
        url = None
        with anyio.move_on_after(60):
            while url is None and process.poll() is None:
                for line in (work / "server.log").read_text(encoding="utf-8", errors="replace").splitlines():
                    if "ready on http://" in line:
                        address = line.split("ready on http://", 1)[1].split("/", 1)[0]
                        url = f"http://{address}/mcp"
                await anyio.sleep(0.05)
        if url is None:
            raise Fail("serve --http did not say where it listens")
        yield url, token, access_token
    finally:
        process.terminate()
        try:
            code = process.wait(timeout=40)
            if code == 0:
                checks.ok("SIGTERM", "the server stopped cleanly")
            else:
                checks.fail("SIGTERM", f"the server exited with {code}")
        except subprocess.TimeoutExpired:
            process.kill()
            checks.fail("SIGTERM", "the server did not stop within 40 s")


async def exercise(session: Session, log_messages: list[str]) -> None:
    checks, client = session.checks, session.client
    scenario = json.loads((STAGE / "scenario.json").read_text(encoding="utf-8"))

    async def capabilities() -> str:
        capabilities = client.server_capabilities
        listed = [name for name in ("tools", "resources", "prompts", "completions", "logging") if getattr(capabilities, name, None) is not None]
        return "advertised " + ", ".join(listed)

    await checks.run("capabilities", capabilities)
    logging_on = await checks.run("logging", lambda: logging_check(session))
    await list_everything(session)

    async with AsyncExitStack() as stack:
        # Change notifications: on 2026-07-28 a listen stream open for the whole session; on
        # initialize-era sessions they arrive unasked (list_changed) through the message handler.
        if session.era == "modern":
            await checks.run("subscriptions/listen (list_changed)", lambda: open_listen(session, stack))
        for step in scenario["steps"]:
            await run_step(session, step)
        await coverage(session)
        await checks.run("list_changed after SkillSave", lambda: saw_list_changed(session))
        await checks.run("ToolGroups turns a group on (list_changed)", lambda: group_turned_on(session))
    await checks.run("prompts/list after SkillSave", lambda: relist_prompts(session))

    for prompt in session.prompts:
        await checks.run(f"prompts/get {prompt.name}", lambda prompt=prompt: get_prompt(session, prompt, scenario))
    await completions(session)
    await checks.run("resources/updated after subscribe", lambda: subscription(session, scenario["subscription"]))
    if session.era == "legacy" and logging_on:
        await checks.run("notifications/message after logging/setLevel", lambda: log_delivery(log_messages))


async def logging_check(session: Session) -> str:
    if session.client.server_capabilities.logging is None:
        raise Fail("the server does not advertise the `logging` capability")
    if session.era == "legacy":
        await session.client.set_logging_level("info")
        return "capability advertised, logging/setLevel info accepted"
    return "capability advertised (2026-07-28 asks per request with _meta logLevel)"


async def log_delivery(log_messages: list[str]) -> str:
    """SkillSave rescans the skill roots, which the server logs at `info`: the client hears it."""
    with anyio.move_on_after(NOTIFICATION_WAIT_SECONDS):
        while not log_messages:
            await anyio.sleep(0.05)
    if not log_messages:
        raise Fail("no notifications/message at level info, though SkillSave rescanned the skills")
    return f"{len(log_messages)} message(s), first: {log_messages[0]}"


async def list_everything(session: Session) -> None:
    checks, client = session.checks, session.client

    async def tools() -> str:
        session.tools = await all_pages(lambda cursor: client.list_tools(cursor=cursor), "tools")
        with_output = sum(1 for tool in session.tools if tool.output_schema is not None)
        return f"{len(session.tools)} tools ({with_output} with an output schema)"

    async def resources() -> str:
        listed = await all_pages(lambda cursor: client.list_resources(cursor=cursor), "resources")
        for resource in listed:
            await client.read_resource(resource.uri)
            session.read_schemes.add(str(resource.uri).split("://")[0])
        return f"{len(listed)} resources, each read"

    async def templates() -> str:
        session.templates = await all_pages(lambda cursor: client.list_resource_templates(cursor=cursor), "resource_templates")
        return ", ".join(template.uri_template for template in session.templates)

    async def prompts() -> str:
        session.prompts = await all_pages(lambda cursor: client.list_prompts(cursor=cursor), "prompts")
        return f"{len(session.prompts)} prompts"

    await checks.run("tools/list", tools)
    await checks.run("resources/list + read", resources)
    await checks.run("resources/templates/list", templates)
    await checks.run("prompts/list", prompts)


async def run_step(session: Session, step: dict[str, Any]) -> None:
    if "read" in step:
        await session.checks.run(f"resources/read {step['read']}", lambda: read_step(session, step))
    else:
        await session.checks.run(f"tools/call {step['call']}", lambda: call_step(session, step))


async def read_step(session: Session, step: dict[str, Any]) -> str:
    uri = substitute(step["read"], session.saved)
    result = await session.client.read_resource(uri)
    text = contents_text(result)
    check_expectations(step, None, text)
    session.read_schemes.add(uri.split("://")[0])
    return f"{len(text)} characters"


async def call_step(session: Session, step: dict[str, Any]) -> str:
    name = step["call"]
    session.called.add(name)
    arguments = substitute(step["arguments"], session.saved)
    asked_before = len(session.questions)
    result = await session.client.call_tool(name, arguments)
    text = result_text(result)
    if step.get("expectError"):
        if not result.is_error:
            raise Fail(f"expected a tool error, got a success: {text[:400]}")
        check_expectations(step, None, text)
        return f"tool error as expected: {text[:120]}"
    if result.is_error:
        raise Fail(f"tool error: {text[:400]}")
    tool = next((tool for tool in session.tools if tool.name == name), None)
    if tool is not None and tool.output_schema is not None and result.structured_content is None:
        raise Fail("the tool has an output schema but the result has no structured content")
    structured = result.structured_content
    asked = len(session.questions) - asked_before
    if step.get("approval") and asked == 0:
        raise Fail("the server ran the call without asking for approval")
    if not step.get("approval") and asked:
        raise Fail(f"the server asked for approval unexpectedly: {session.questions[-1][:200]}")
    check_expectations(step, structured, text)
    if "save" in step:
        session.saved[step["save"]] = structured
    detail = f"{len(text)} characters of text"
    if structured is not None:
        detail += f", {len(json.dumps(structured, ensure_ascii=False))} characters of valid structured content"
    if asked:
        detail += f", approval asked {asked}x and accepted"
    return detail


async def coverage(session: Session) -> None:
    async def tools_called() -> str:
        missing = sorted(tool.name for tool in session.tools if tool.name not in session.called)
        if missing:
            raise Fail(f"listed but never called by scenario.json: {', '.join(missing)}")
        return f"all {len(session.tools)} listed tools called"

    async def schemes_read() -> str:
        schemes = {template.uri_template.split("://")[0] for template in session.templates}
        missing = sorted(schemes - session.read_schemes)
        if missing:
            raise Fail(f"resource schemes never read: {', '.join(missing)}")
        return "read " + ", ".join(f"{scheme}://" for scheme in sorted(session.read_schemes))

    await session.checks.run("every tool called", tools_called)
    await session.checks.run("every resource scheme read", schemes_read)


async def open_listen(session: Session, stack: AsyncExitStack) -> str:
    subscription = await stack.enter_async_context(
        session.client.listen(tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True)
    )

    async def collect() -> None:
        async for event in subscription:
            session.events.append(event_name(event))

    group = await stack.enter_async_context(anyio.create_task_group())
    stack.callback(group.cancel_scope.cancel)
    group.start_soon(collect)
    honored = subscription.honored
    return f"honored {honored.model_dump(by_alias=True, exclude_none=True)}"


def event_name(event: Any) -> str:
    if isinstance(event, ResourceUpdated):
        return f"notifications/resources/updated {event.uri}"
    if isinstance(event, ResourcesListChanged):
        return "notifications/resources/list_changed"
    if isinstance(event, PromptsListChanged):
        return "notifications/prompts/list_changed"
    if isinstance(event, ToolsListChanged):
        return "notifications/tools/list_changed"
    return type(event).__name__


async def saw_list_changed(session: Session) -> str:
    """SkillSave added a skill: its resource and its prompt appear, and the client is told."""
    wanted = {"notifications/resources/list_changed", "notifications/prompts/list_changed"}
    seen = session.events if session.era == "modern" else session.notifications
    with anyio.move_on_after(NOTIFICATION_WAIT_SECONDS):
        while not wanted <= set(seen):
            await anyio.sleep(0.05)
    missing = wanted - set(seen)
    if missing:
        stream = " through the subscriptions/listen stream" if session.era == "modern" else ""
        raise Fail(f"never received {', '.join(sorted(missing))}{stream} (received: {sorted(set(seen)) or 'nothing'})")
    return "resources and prompts list_changed received"


async def group_turned_on(session: Session) -> str:
    """A group off (the user approves switching it off), then on again at runtime: the client is
    told the tool list changed, and the group's tools are listed again."""
    seen = session.events if session.era == "modern" else session.notifications
    changed = "notifications/tools/list_changed"
    switch = {"group": "scripts"}
    asked_before = len(session.questions)
    off = await session.client.call_tool("ToolGroups", {"action": "disable", **switch})
    if off.is_error:
        raise Fail(f"disabling the group failed: {result_text(off)[:300]}")
    with anyio.move_on_after(NOTIFICATION_WAIT_SECONDS):
        while seen.count(changed) == 0:
            await anyio.sleep(0.05)
    before = seen.count(changed)
    on = await session.client.call_tool("ToolGroups", {"action": "enable", **switch})
    if on.is_error or (on.structured_content or {}).get("changed") != "group `scripts` switched on":
        raise Fail(f"enabling the group failed: {result_text(on)[:300]}")
    with anyio.move_on_after(NOTIFICATION_WAIT_SECONDS):
        while seen.count(changed) <= before:
            await anyio.sleep(0.05)
    if seen.count(changed) <= before:
        raise Fail(f"no {changed} after the group was turned on (received: {sorted(set(seen))})")
    tools = await all_pages(lambda cursor: session.client.list_tools(cursor=cursor), "tools")
    if "SkillRunScript" not in [tool.name for tool in tools]:
        raise Fail("the group's tool SkillRunScript is not listed after it was turned on")
    asked = len(session.questions) - asked_before
    return f"approved {asked}x, {changed} received, SkillRunScript listed again"


async def relist_prompts(session: Session) -> str:
    """The saved skill's prompt is listed now (a caching client refetches after list_changed)."""
    session.prompts = await all_pages(lambda cursor: session.client.list_prompts(cursor=cursor), "prompts")
    names = [prompt.name for prompt in session.prompts]
    if "skill-interop-farewell" not in names:
        raise Fail(f"the saved skill's prompt `skill-interop-farewell` is not listed: {names}")
    return f"{len(names)} prompts, the saved skill's included"


async def get_prompt(session: Session, prompt: types.Prompt, scenario: dict[str, Any]) -> str:
    arguments = dict(scenario["prompts"].get(prompt.name, {}))
    for argument in prompt.arguments or []:
        if argument.required and argument.name not in arguments:
            raise Fail(f"scenario.json gives no value for the required argument `{argument.name}`")
    result = await session.client.get_prompt(prompt.name, arguments or None)
    if not result.messages:
        raise Fail("no messages")
    return f"{len(result.messages)} message(s)"


async def completions(session: Session) -> None:
    """Every template and prompt argument completes to at least one value."""
    if session.client.server_capabilities.completions is None:
        session.checks.fail("completion/complete", "the server does not advertise `completions`")
        return
    context = dict(scenario_context(session))
    for template in session.templates:
        for name in argument_names(template.uri_template):
            ref = types.ResourceTemplateReference(type="ref/resource", uri=template.uri_template)
            await session.checks.run(
                f"completion/complete {template.uri_template} {name}",
                lambda ref=ref, name=name: complete(session, ref, name, context),
            )
    for prompt in session.prompts:
        for argument in prompt.arguments or []:
            ref = types.PromptReference(type="ref/prompt", name=prompt.name)
            await session.checks.run(
                f"completion/complete prompt {prompt.name} {argument.name}",
                lambda ref=ref, argument=argument: complete(session, ref, argument.name, {}),
            )


def scenario_context(session: Session) -> dict[str, str]:
    """Values for the other arguments of a template, as a client's form would have them filled in."""
    latest = session.saved.get("latest") or {}
    return {"name": "interop-greeting", "group": "Agent", "chat": str(latest.get("chatFile", ""))}


def argument_names(uri_template: str) -> list[str]:
    names, rest = [], uri_template
    while "{" in rest:
        _, _, after = rest.partition("{")
        name, _, rest = after.partition("}")
        names.append(name.lstrip("+#./;?&"))
    return names


async def complete(session: Session, ref: Any, name: str, context: dict[str, str]) -> str:
    arguments = {key: value for key, value in context.items() if key != name and value}
    result = await session.client.complete(ref, {"name": name, "value": ""}, arguments or None)
    values = result.completion.values
    if not values:
        raise Fail("no values offered for an empty prefix")
    total = result.completion.total
    return f"{len(values)} value(s){f' of {total}' if total is not None else ''}, e.g. {values[0]!r}"


async def subscription(session: Session, spec: dict[str, Any]) -> str:
    uri = spec["uri"]
    write = spec["write"]
    if session.era == "legacy":
        before = len(session.notifications)
        await session.client.subscribe_resource(uri)
        result = await session.client.call_tool(write["call"], write["arguments"])
        if result.is_error:
            raise Fail(f"{write['call']} failed: {result_text(result)}")
        wanted = f"notifications/resources/updated {uri}"
        with anyio.move_on_after(NOTIFICATION_WAIT_SECONDS):
            while wanted not in session.notifications[before:]:
                await anyio.sleep(0.05)
        if wanted not in session.notifications[before:]:
            raise Fail(f"no {wanted} within {NOTIFICATION_WAIT_SECONDS} s of the write")
        await session.client.unsubscribe_resource(uri)
        return f"resources/subscribe, {write['call']}, {wanted}"
    async with session.client.listen(resource_subscriptions=[uri]) as stream:
        if uri not in (stream.honored.resource_subscriptions or []):
            raise Fail(f"the server did not honor the subscription to {uri}: {stream.honored}")
        result = await session.client.call_tool(write["call"], write["arguments"])
        if result.is_error:
            raise Fail(f"{write['call']} failed: {result_text(result)}")
        with anyio.fail_after(NOTIFICATION_WAIT_SECONDS):
            async for event in stream:
                if isinstance(event, ResourceUpdated) and event.uri == uri:
                    return f"subscriptions/listen, {write['call']}, resources/updated {uri}"
        raise Fail("the listen stream ended before the update arrived")


if __name__ == "__main__":
    try:
        sys.exit(anyio.run(main))
    except Exception:  # noqa: BLE001 - an unexpected crash of the check itself fails the stage
        traceback.print_exc()
        print("FAIL python: the check itself crashed", flush=True)
        sys.exit(1)
