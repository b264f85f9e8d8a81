"""A tiny tool server for the compose stack and the examples: toolgate's HTTP backend POSTs the arguments as a JSON
body and takes the JSON answer as the tool's result (2xx success; 400 the model's mistake; 404 a misrouted tool,
the operator's; 5xx retryable).

POST /weather {"city": "Oslo"} -> {"city": "Oslo", "temperature": 4, "unit": "celsius", "conditions": "clear"}
The weather is made up from the city's name, so the same call always answers the same.
POST /transfer {"amount": 20, "currency": "EUR", "to": "NO93...", "user_id": "u1"} -> {"status": "sent", ...}
(examples/tools/transfer.json); nothing is sent anywhere.

Listens on 127.0.0.1:$PORT (8080); HOST=0.0.0.0 where another container must reach it (deploy/compose.yaml).
"""

import json
import os
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONDITIONS = ["clear", "cloudy", "rain", "snow", "fog", "wind"]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path == "/transfer":
            return self.transfer()
        if self.path != "/weather":
            return self.answer(404, {"error": f"no tool at {self.path}"})
        try:
            args = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            city, unit = args["city"], args.get("unit", "celsius")
            if not isinstance(city, str):
                raise TypeError("city must be a string")
        except KeyError as err:
            return self.answer(400, {"error": f"missing argument {err}"})
        except (ValueError, TypeError) as err:
            return self.answer(400, {"error": f"bad arguments: {err}"})
        seed = zlib.crc32(city.lower().encode())
        celsius = seed % 35 - 5
        temperature = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
        self.answer(200, {"city": city, "temperature": temperature, "unit": unit,
                          "conditions": CONDITIONS[seed % len(CONDITIONS)]})

    def transfer(self):
        try:
            args = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            sent = {key: args[key] for key in ("amount", "currency", "to", "user_id")}
        except (KeyError, ValueError, TypeError) as err:
            return self.answer(400, {"error": f"bad arguments: {err}"})
        self.answer(200, {"status": "sent", **sent})

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        # One line per call, with the toolgate call id and the trace it belongs to.
        print(f"{self.headers.get('x-toolgate-call-id', '-')} {self.headers.get('traceparent', '-')} {fmt % args}",
              flush=True)


if __name__ == "__main__":
    host, port = os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8080"))
    server = ThreadingHTTPServer((host, port), Handler)
    print(f"example tool server on {host}:{server.server_port}", flush=True)
    server.serve_forever()
