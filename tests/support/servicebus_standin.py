"""STAND-IN for the Service Bus emulator in CI's compose run: our AMQP test broker, serving.

CI cannot pull Microsoft's emulator image, so ``scripts/compose-e2e.sh`` builds an image
of this broker and its compose override names it for the ``servicebus`` service. It does
what the emulator does for this project, and no more:

* reads the emulator's ``Config.json`` from the emulator's mount path and declares exactly
  the topics, subscriptions and correlation filters it lists
  (:mod:`tests.support.sb_broker.emulator_config`);
* listens for AMQP on 5672 without TLS, where the emulator connection string
  (``Endpoint=sb://servicebus;...;UseDevelopmentEmulator=true``) points the SDK, and
  accepts its SAS token (the broker takes any token);
* answers ``GET /health`` on 5300 as the emulator does.

It is a test double: messages live in memory, and what it does not implement (sessions,
scheduled messages, the administration API) is listed in ``tests/servicebus/README.md``.

    python -m tests.support.servicebus_standin [--config PATH]
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.support.sb_broker.emulator_config import EmulatorConfig
from tests.support.servicebus_broker import ServiceBusBroker

EMULATOR_CONFIG = Path("/ServiceBus_Emulator/ConfigFiles/Config.json")
AMQP_PORT = 5672
HEALTH_PORT = 5300

log = logging.getLogger("servicebus-standin")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=EMULATOR_CONFIG)
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=AMQP_PORT)
    parser.add_argument("--health-port", type=int, default=HEALTH_PORT)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )

    config = EmulatorConfig.read(args.config)
    broker = ServiceBusBroker(host=args.host, port=args.port)
    config.declare_on(broker)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    broker.start()
    health = _health_server(args.host, args.health_port, broker)
    threading.Thread(target=health.serve_forever, name="health", daemon=True).start()
    log.info(
        "Service Bus STAND-IN (test broker, not the emulator) on %s:%d, namespace %s: "
        "topics %s; subscriptions %s",
        args.host,
        args.port,
        config.namespace,
        ", ".join(config.topics),
        ", ".join(f"{s.topic}/{s.name} {list(s.filters)}" for s in config.subscriptions),
    )
    stop.wait()
    health.shutdown()
    broker.stop()
    if broker.errors:
        log.error("the broker's handlers raised: %r", broker.errors)
        raise SystemExit(1)


def _health_server(host: str, port: int, broker: ServiceBusBroker) -> ThreadingHTTPServer:
    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            healthy = self.path == "/health" and broker.running
            body = json.dumps(
                {"status": "healthy", "message": "Service is healthy."}
                if healthy
                else {"status": "unhealthy"}
            ).encode()
            self.send_response(200 if healthy else 503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # one line per health probe would drown the broker's own log

    return ThreadingHTTPServer((host, port), Health)


if __name__ == "__main__":
    main()
