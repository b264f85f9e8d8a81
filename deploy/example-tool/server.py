"""A tiny tool server for the compose stack: toolgate's HTTP backend POSTs the arguments as a JSON body and takes
the JSON answer as the tool's result (2xx success, 4xx the model's mistake, 5xx retryable).

POST /weather {"city": "Oslo"} -> {"city": "Oslo", "temperature": 4, "unit": "celsius", "conditions": "clear"}
The weather is made up from the city's name, so the same call always answers the same.
"""

import json
import os
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONDITIONS = ["clear", "cloudy", "rain", "snow", "fog", "wind"]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
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
    port = int(os.environ.get("PORT", "8080"))
    print(f"example tool server on :{port}", flush=True)
    ThreadingHTTPServer(("0.0.0.0", port), Handler).serve_forever()
