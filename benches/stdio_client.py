"""A plain stdio MCP client for the scripts under benches/: one server process spoken to line by
line (no SDK), so what it measures is the server's own work. Used by cost/gate.py,
startup_order.py and idle_memory.py.
"""

import json
import subprocess


class Server:
    """One server process (under callgrind, or as it is), spoken to line by line."""

    def __init__(self, command: list[str], environment: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment,
        )
        self.next_id = 0

    def request(self, method: str, params: dict) -> dict:
        result = self.ask(method, params)
        if result.get("isError"):
            raise RuntimeError(f"`{method}` {json.dumps(params)[:300]} answered {result}")
        return result

    def ask(self, method: str, params: dict) -> dict:
        """The answer's result, a tool error (`isError`) too."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.send(message)
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the server closed its output while `{method}` was asked")
            answer = json.loads(line)
            if answer.get("id") == self.next_id and "method" not in answer:
                break
            if "method" in answer and "id" in answer:
                raise RuntimeError(f"the server asked `{answer['method']}`: configure it not to")
        if "error" in answer:
            raise RuntimeError(f"`{method}` failed: {answer['error']}")
        return answer.get("result", {})

    def send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def close(self) -> None:
        self.process.stdin.close()
        if self.process.wait(timeout=600) != 0:
            raise RuntimeError(f"the server exited with status {self.process.returncode}")

    def initialize(self, client: str) -> None:
        """`initialize` as `client`, then `notifications/initialized`."""
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": client, "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
