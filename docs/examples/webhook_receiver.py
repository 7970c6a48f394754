"""A receiver of batch events: checks the signature, refuses replays, handles each id once."""

import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook, WebhookVerificationError

webhook = Webhook(os.environ["BILLING_WEBHOOK_SECRET"])  # the deployment's whsec_... secret
seen: set[str] = set()  # in production: a table with a unique key on the id


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        try:  # the HMAC of id.timestamp.body, and a timestamp within 5 minutes of now
            event = webhook.verify(body, dict(self.headers))
        except WebhookVerificationError:
            self.send_response(400)
            self.end_headers()
            return
        if event["id"] not in seen:  # a retried delivery has the same id: act once
            seen.add(event["id"])
            print(event["type"], event["subject"], event["data"]["reconciled"], flush=True)
        self.send_response(204)
        self.end_headers()


if __name__ == "__main__":
    ThreadingHTTPServer(("0.0.0.0", 8080), Receiver).serve_forever()
