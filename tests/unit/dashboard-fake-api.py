#!/usr/bin/python3
"""dashboard-fake-api.py DASHBOARD_DIR STATE_DIR TOKEN: a stand-in for cliqo-broker's API, for
tests/unit/dashboard-render.sh only (the real API is the broker's; docs/broker-openapi.yaml).

Listens on 127.0.0.1, a port of the kernel's choice, written to STATE_DIR/port once it listens. Serves
the dashboard's three files as the broker will (Content-Security-Policy default-src 'self'), and:
  GET  /api/clusters        STATE_DIR/clusters.json as it is on disk, with an ETag; If-None-Match: 304
  POST /api/toggle?id=&enable=   bearer TOKEN; sets broker.enabled of that cluster in clusters.json
  GET  /api/policy, PUT /api/policy   the policy (PUT: bearer TOKEN, a JSON object of known fields)
  PUT  /fake/clusters       replaces clusters.json (the test's way to change the list under the page)
  PUT  /fake/policy-delay   {"seconds": S}: each GET /api/policy is answered S seconds late
  GET  /fake/stats          {"clusters": n, "notModified": n, "toggles": n, "policyPuts": n}
  GET  /fake/inline         a page with an inline script, which the policy must refuse
Errors are {"error": "..."} as the broker's. Standard library only.
"""

import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

DASH, STATE, TOKEN = sys.argv[1], sys.argv[2], sys.argv[3]
CLUSTERS = os.path.join(STATE, "clusters.json")
FILES = {"/": ("index.html", "text/html; charset=utf-8"),
         "/app.js": ("app.js", "text/javascript; charset=utf-8"),
         "/style.css": ("style.css", "text/css; charset=utf-8")}
POLICY_FIELDS = {"minUptimeSeconds": int, "maxLatencyMs": int, "minFree": dict, "maxPrice": str,
                 "requiredLabels": dict, "hysteresisSeconds": int}
policy = {"maxLatencyMs": 50, "hysteresisSeconds": 60}
stats = {"clusters": 0, "notModified": 0, "toggles": 0, "policyPuts": 0}
policy_delay = 0.0
LOCK = threading.Lock()  # one request at a time touches the state above


def serialised(fn):
    def run(self):
        with LOCK:
            fn(self)
    return run


def write_clusters(items):
    with open(CLUSTERS + ".tmp", "w", encoding="utf-8") as f:
        json.dump(items, f)
    os.replace(CLUSTERS + ".tmp", CLUSTERS)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def send(self, status, body=b"", ctype="application/json", headers=()):
        self.send_response(status)
        if status != 304:
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", "default-src 'self'")
        self.send_header("Cache-Control", "no-cache")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if status != 304:
            self.wfile.write(body)

    def json(self, status, doc):
        self.send(status, json.dumps(doc).encode())

    def error(self, status, msg):
        self.json(status, {"error": msg})

    def authorized(self):
        if self.headers.get("Authorization") == "Bearer " + TOKEN:
            return True
        self.error(401, "a bearer token is required")
        return False

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(min(n, 65536))

    def do_GET(self):
        if urlsplit(self.path).path == "/api/policy" and policy_delay:
            time.sleep(policy_delay)  # outside the lock: the other requests go on meanwhile
        with LOCK:
            self.get()

    def get(self):
        u = urlsplit(self.path)
        if u.path in FILES:
            name, ctype = FILES[u.path]
            with open(os.path.join(DASH, name), "rb") as f:
                self.send(200, f.read(), ctype)
        elif u.path == "/api/clusters":
            stats["clusters"] += 1
            with open(CLUSTERS, "rb") as f:
                data = f.read()
            etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
            if self.headers.get("If-None-Match") == etag:
                stats["notModified"] += 1
                self.send(304, headers=[("ETag", etag)])
            else:
                self.send(200, data, headers=[("ETag", etag)])
        elif u.path == "/api/policy":
            self.json(200, policy)
        elif u.path == "/fake/stats":
            self.json(200, stats)
        elif u.path == "/fake/inline":
            self.send(200, b"<!DOCTYPE html><title>inline</title><script>document.title = 'ran';</script>",
                      "text/html; charset=utf-8")
        else:
            self.error(404, "no such path")

    @serialised
    def do_POST(self):
        u = urlsplit(self.path)
        if u.path != "/api/toggle":
            return self.error(404, "no such path")
        if not self.authorized():
            return
        q = parse_qs(u.query)
        cid, enable = q.get("id", [""])[0], q.get("enable", [""])[0]
        if enable not in ("true", "false"):
            return self.error(400, "enable: want true or false")
        with open(CLUSTERS, encoding="utf-8") as f:
            items = json.load(f)
        for c in items:
            if c["spec"]["clusterIdentity"]["clusterID"] == cid:
                c.setdefault("broker", {})["enabled"] = enable == "true"
                write_clusters(items)
                stats["toggles"] += 1
                return self.json(200, {"id": cid, "enabled": enable == "true"})
        self.error(404, f"no cluster {cid}")

    @serialised
    def do_PUT(self):
        global policy, policy_delay
        u = urlsplit(self.path)
        if u.path == "/fake/clusters":
            write_clusters(json.loads(self.body()))
            return self.json(200, {})
        if u.path == "/fake/policy-delay":
            policy_delay = float(json.loads(self.body())["seconds"])
            return self.json(200, {})
        if u.path != "/api/policy":
            return self.error(404, "no such path")
        if not self.authorized():
            return
        try:
            p = json.loads(self.body())
        except ValueError as e:
            return self.error(400, f"policy: not JSON: {e}")
        if not isinstance(p, dict):
            return self.error(400, "policy: want an object")
        for k, v in p.items():
            if k not in POLICY_FIELDS:
                return self.error(400, f'policy: unknown field "{k}"')
            if not isinstance(v, POLICY_FIELDS[k]) or isinstance(v, bool):
                return self.error(400, f'policy: field "{k}" has the wrong type')
        policy = p
        stats["policyPuts"] += 1
        self.json(200, policy)


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    with open(os.path.join(STATE, "port.tmp"), "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(os.path.join(STATE, "port.tmp"), os.path.join(STATE, "port"))
    srv.serve_forever()


if __name__ == "__main__":
    main()
