#!/usr/bin/python3
r"""cdp.py: drive a headless Chromium through the DevTools protocol, for bash tests.

Usage:
  cdp.py [OPTIONS] [--url URL] [STEP ARG...]...
  cdp.py [OPTIONS] [--url URL] --script FILE        (FILE '-' is stdin)

One run starts one browser (Debian's `chromium`, headless, its own temporary profile), runs the steps
in order in one tab, and stops the browser. It talks to it over --remote-debugging-pipe (file
descriptors 3 and 4, NUL-terminated JSON messages): no port, no websocket. Standard library only.

Steps, on the command line as a verb and its arguments, in a script file as a JSON array of arrays
(["wait", "document.title == 'x'", 5]):
  open URL              navigate and wait for the load event; fails on a network error or an HTTP
                        status >= 400 of the page itself
  wait EXPR [SECONDS]   evaluate the JavaScript expression EXPR every 100 ms until it is truthy (a
                        promise is awaited; an exception counts as "not yet", and the last one is
                        reported if the wait times out)
  eval EXPR             evaluate EXPR once and print its value as one line of JSON on stdout
                        (undefined prints null); an exception fails the step
  assert EXPR           evaluate EXPR once; fails unless it is truthy
  click SELECTOR        wait until the first element matching the CSS selector is visible, enabled and
                        not covered, then click its centre with the mouse (real input events)
  press SELECTOR        the first half of click: the mouse button goes down on the element's centre
  release               the second half: the button comes up where it went down (between the two, a
                        test can change the page under the pointer, as a user's slow click would)
  set SELECTOR VALUE    give an input, textarea or select the value VALUE (focus, value, then the
                        events input and change, as typing and leaving the field would)
  shot FILE             write a PNG screenshot of the viewport to FILE
  errors                fail if the page has so far thrown an uncaught exception, called
                        console.error, or had an error logged other than a failed request (a CSP
                        violation is one); the messages are listed
A step that takes no SECONDS is bounded by --timeout. Everything waits by polling with a deadline;
nothing sleeps for a fixed time.

Options:
  --url URL             open URL before the steps (same as a first step `open URL`)
  --script FILE         read the steps from FILE (after those of the command line)
  --timeout SECONDS     bound of each step (default 10)
  --launch-timeout SECONDS
                        bound of the browser's start (default 60)
  --window WxH          viewport size (default 1280x900)
  --chromium PATH       the browser (default $CDP_CHROMIUM, else `chromium` in PATH)
  -v, --verbose         log each step, the page's console and the browser's output to stderr
  -h, --help            this text

Exit status: 0 every step passed; 1 a step failed (timeout, JavaScript exception, failed assertion,
missing element, page errors), with "cdp: step N (VERB ...): why" on stderr; 2 bad usage; 3 the
browser failed (not found, did not start, crashed or went silent), with the end of its output. The
browser and its children are killed on every exit (and die with this process if it is killed).

Options come before the steps. Example (a bash test):
  cdp.py --timeout 20 --url "http://127.0.0.1:$port/" \
    wait 'document.querySelectorAll("tr[data-cluster-id]").length === 2' \
    set '#token' "$token" \
    click 'tr[data-cluster-id="c1"] .toggle' \
    wait 'document.querySelector("tr[data-cluster-id=\"c1\"]").dataset.enabled === "false"' \
    eval 'document.querySelector("#status").textContent' \
    errors shot /tmp/page.png
  To wait for a selector, wait for the expression 'document.querySelector("SELECTOR")'. JavaScript
  given to wait, eval and assert runs in the page as DevTools runs it (the page's CSP does not apply).
"""

import base64
import ctypes
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

POLL_S = 0.1
STEP_ARITY = {  # verb: (required arguments, optional ones)
    "open": (1, 0),
    "wait": (1, 1),
    "eval": (1, 0),
    "assert": (1, 0),
    "click": (1, 0),
    "press": (1, 0),
    "release": (0, 0),
    "set": (2, 0),
    "shot": (1, 0),
    "errors": (0, 0),
}


class Usage(Exception):
    pass


class StepFailed(Exception):
    pass


class BrowserFailed(Exception):
    pass


class Interrupted(BaseException):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def log(msg):
    print("cdp: " + msg, file=sys.stderr, flush=True)


# ---- the browser ----

class Browser:
    """Chromium with one page, over the DevTools pipe. Every call is bounded by a deadline."""

    def __init__(self, verbose):
        self.verbose = verbose
        self.proc = None
        self.next_id = 0
        self.buf = bytearray()
        self.session = None
        self.lifecycle = []  # (loaderId, name) of the page's main frame
        self.errors = []  # what the `errors` step reports
        self.main_frame = None
        self.tmp = tempfile.mkdtemp(prefix="cdp-")
        self.logpath = os.path.join(self.tmp, "chromium.log")
        self.to_browser = self.from_browser = None

    def start(self, binary, window, launch_timeout):
        """Starts the browser and opens the tab; close() undoes whatever part of it was done."""
        exe = shutil.which(binary)
        if not exe:
            raise BrowserFailed(f"no browser '{binary}' found (apt-get install chromium)")
        w, h = window
        args = [exe, "--headless=new", "--no-sandbox", "--remote-debugging-pipe",
                f"--user-data-dir={self.tmp}/profile", f"--window-size={w},{h}",
                "--no-first-run", "--no-default-browser-check", "--no-proxy-server",
                "--disable-gpu", "--disable-dev-shm-usage", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-default-apps", "--disable-breakpad", "--disable-crash-reporter",
                "--password-store=basic", "--mute-audio", "--hide-scrollbars",
                "--disable-features=Translate,MediaRouter,OptimizationHints", "about:blank"]
        # Whatever the browser writes goes under self.tmp, removed at the end.
        env = dict(os.environ, XDG_CONFIG_HOME=f"{self.tmp}/config", XDG_CACHE_HOME=f"{self.tmp}/cache",
                   TMPDIR=self.tmp)
        # Our ends are close-on-exec (as every fd Python opens: PEP 446, so close_fds=False passes the
        # browser nothing else); its ends are moved to 3 (it reads) and 4 (it writes) in the child, all
        # first moved above 9 so that a dup2 cannot overwrite an fd not yet moved.
        r_cmd, w_cmd = os.pipe()
        r_res, w_res = os.pipe()
        high = [fcntl_dupfd(fd) for fd in (r_cmd, w_cmd, r_res, w_res)]
        for fd in (r_cmd, w_cmd, r_res, w_res):
            os.close(fd)
        r_cmd, w_cmd, r_res, w_res = high

        def child_setup():
            os.dup2(r_cmd, 3)
            os.dup2(w_res, 4)
            # Die with this process even if it is killed with SIGKILL (PR_SET_PDEATHSIG).
            if prctl:
                prctl(1, signal.SIGKILL, 0, 0, 0)

        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here, not in the child
        except (OSError, AttributeError):
            prctl = None
        self.to_browser, self.from_browser = w_cmd, r_res  # close() closes them from here on
        logf = open(self.logpath, "wb")
        try:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                                         env=env, close_fds=False, start_new_session=True,
                                         preexec_fn=child_setup)
        except OSError as e:
            raise BrowserFailed(f"cannot start {exe}: {e}") from None
        finally:
            logf.close()
            os.close(r_cmd)
            os.close(w_res)
        deadline = time.monotonic() + launch_timeout
        target = self.call("Target.createTarget", {"url": "about:blank"}, deadline)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 deadline)["sessionId"]
        for method, params in (("Page.enable", {}), ("Runtime.enable", {}), ("Log.enable", {}),
                               ("Page.setLifecycleEventsEnabled", {"enabled": True}),
                               ("Emulation.setDeviceMetricsOverride",
                                {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": False})):
            self.call(method, params, deadline, page=True)
        tree = self.call("Page.getFrameTree", {}, deadline, page=True)
        self.main_frame = tree["frameTree"]["frame"]["id"]

    def log_tail(self, n=15):
        try:
            with open(self.logpath, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
            return "\n".join("  " + s for s in lines[-n:])
        except OSError:
            return ""

    def gone(self, why):
        return BrowserFailed(f"{why}\nthe browser's last output:\n{self.log_tail()}")

    def send(self, msg):
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self.to_browser, data):]
        except BrokenPipeError:
            raise self.gone("the browser closed its end of the pipe") from None

    def read_one(self, deadline):
        """The next message, or None when the deadline passes first."""
        while True:
            end = self.buf.find(b"\0")
            if end >= 0:
                raw = bytes(self.buf[:end])
                del self.buf[:end + 1]
                try:
                    return json.loads(raw)
                except ValueError:
                    raise self.gone(f"the browser sent something that is not JSON: {raw[:100]!r}") from None
            left = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if not ready:
                if time.monotonic() >= deadline:
                    return None
                continue
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                code = self.proc.poll()
                raise self.gone("the browser exited" + (f" (status {code})" if code is not None else ""))
            self.buf += chunk

    def event(self, msg):
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Page.lifecycleEvent" and p.get("frameId") == self.main_frame:
            self.lifecycle.append((p.get("loaderId"), p.get("name")))
            del self.lifecycle[:-200]
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            text = d.get("exception", {}).get("description") or d.get("text", "exception")
            self.page_error("uncaught " + text.splitlines()[0], True)
        elif method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            if p.get("type") in ("error", "assert"):
                self.page_error(f"console.{p.get('type')}: {text}", True)
            elif self.verbose:
                log(f"page console.{p.get('type')}: {text}")
        elif method == "Log.entryAdded":
            e = p.get("entry", {})
            text = f"{e.get('source')} {e.get('level')}: {e.get('text')}" + (
                f" ({e['url']})" if e.get("url") else "")
            if e.get("level") == "error" and e.get("source") != "network":
                self.page_error(text, True)
            elif self.verbose:
                log("page log " + text)
        elif method == "Inspector.targetCrashed":
            raise self.gone("the page crashed")
        elif method == "Target.detachedFromTarget" and p.get("sessionId") == self.session:
            raise self.gone("the page went away")

    def page_error(self, text, show):
        if len(self.errors) < 1000:
            self.errors.append(text)
        if show:
            log("page error: " + text)

    def call(self, method, params, deadline, page=False):
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params}
        if page:
            msg["sessionId"] = self.session
        self.send(msg)
        while True:
            m = self.read_one(deadline)
            if m is None:
                if self.proc.poll() is not None:
                    raise self.gone(f"the browser exited (status {self.proc.returncode})")
                raise StepFailed(f"no answer to {method} in time")
            if m.get("id") == mid:
                if "error" in m:
                    raise StepFailed(f"{method}: {m['error'].get('message')} {m['error'].get('data', '')}".strip())
                return m.get("result", {})
            if "method" in m:
                self.event(m)

    def pump(self, until):
        """Handles events until the monotonic time until (a bounded pause between polls)."""
        while True:
            m = self.read_one(until)
            if m is None:
                return
            if "method" in m:
                self.event(m)

    def evaluate(self, expr, deadline):
        """(ok, value or exception text) of expr in the page; a promise is awaited."""
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True, "userGesture": True},
                      deadline, page=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            text = d.get("exception", {}).get("description") or d.get("text", "exception")
            return False, text.splitlines()[0] if text else "exception"
        res = r.get("result", {})
        if "unserializableValue" in res:
            return True, Unserializable(res["unserializableValue"])
        return True, res.get("value")

    def close(self):
        """Stops the browser and everything it started, removes its profile. Safe to call twice."""
        if self.proc and self.proc.poll() is None:
            try:
                self.send({"id": 0, "method": "Browser.close"})
                self.proc.wait(timeout=3)
            except (BrowserFailed, OSError, subprocess.TimeoutExpired):
                pass
        if self.proc:
            for sig, wait in ((signal.SIGTERM, 3), (signal.SIGKILL, 5)):
                try:
                    os.killpg(self.proc.pid, sig)  # its process group: the renderers, the zygote
                except (ProcessLookupError, PermissionError):
                    break
                try:
                    self.proc.wait(timeout=wait)
                except subprocess.TimeoutExpired:
                    continue
            self.proc = None
        for fd in (self.to_browser, self.from_browser):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.to_browser = self.from_browser = None
        shutil.rmtree(self.tmp, ignore_errors=True)


def fcntl_dupfd(fd):
    """fd's copy at 10 or above, close-on-exec."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)


class Unserializable(str):
    """A value JSON cannot carry (NaN, -0, Infinity, a BigInt such as 12n), as its JavaScript text."""


def truthy(v):
    """JavaScript's truthiness of a value returned by value."""
    if isinstance(v, Unserializable):
        return v not in ("NaN", "-0", "0n", "-0n")
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v != 0
    if isinstance(v, str):
        return v != ""
    return v is not None  # objects and arrays, empty or not


# ---- the steps ----

CLICK_PROBE = """(() => {
  const el = document.querySelector(%s);
  if (!el) return {state: 'no element matches'};
  el.scrollIntoView({block: 'center', inline: 'center'});
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) return {state: 'the element is not visible'};
  if (el.disabled) return {state: 'the element is disabled'};
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const hit = document.elementFromPoint(x, y);
  const lab = hit && hit.closest ? hit.closest('label') : null;
  if (hit !== el && !el.contains(hit) && !(lab && lab.control === el)) {
    const d = hit ? hit.tagName.toLowerCase() + (hit.id ? '#' + hit.id : '') +
      (typeof hit.className === 'string' && hit.className ? '.' + hit.className.split(' ').join('.') : '') : 'nothing';
    return {state: 'the element is covered by ' + d};
  }
  return {state: 'ok', x, y};
})()"""

SET_VALUE = """(() => {
  const el = document.querySelector(%s);
  if (!el) return 'no element matches';
  if (!('value' in el)) return 'the element has no value';
  if (el.disabled || el.readOnly) return 'the element is disabled or read-only';
  el.focus();
  el.value = %s;
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  return 'ok';
})()"""


def step_open(b, deadline, url):
    r = b.call("Page.navigate", {"url": url}, deadline, page=True)
    if r.get("errorText"):
        raise StepFailed(f"{url}: {r['errorText']}")
    loader = r.get("loaderId")
    if loader:  # a new document (a same-document navigation has none): wait for its load event
        while (loader, "load") not in b.lifecycle:
            if time.monotonic() >= deadline:
                raise StepFailed(f"{url}: the page did not finish loading in time")
            b.pump(min(deadline, time.monotonic() + POLL_S))
    ok, status = b.evaluate("(performance.getEntriesByType('navigation')[0] || {}).responseStatus || 0",
                            deadline)
    if ok and isinstance(status, int) and status >= 400:
        raise StepFailed(f"{url}: HTTP status {status}")


def step_wait(b, deadline, expr, seconds=None):
    if seconds is not None:
        deadline = time.monotonic() + seconds
    last = "it stayed false"
    while True:
        try:
            ok, v = b.evaluate(expr, deadline)
            if ok and truthy(v):
                return
            last = ("last value: " + json.dumps(v)[:200]) if ok else ("last exception: " + v)
        except StepFailed as e:  # no context (a navigation under way), or no answer before the deadline
            last = str(e)
        now = time.monotonic()
        if now >= deadline:
            raise StepFailed(f"timed out ({last})")
        b.pump(min(deadline, now + POLL_S))


def step_eval(b, deadline, expr):
    ok, v = b.evaluate(expr, deadline)
    if not ok:
        raise StepFailed(v)
    print(json.dumps(v, ensure_ascii=False), flush=True)


def step_assert(b, deadline, expr):
    ok, v = b.evaluate(expr, deadline)
    if not ok:
        raise StepFailed(v)
    if not truthy(v):
        raise StepFailed("false (value: " + json.dumps(v)[:200] + ")")


def step_press(b, deadline, selector):
    probe = CLICK_PROBE % json.dumps(selector)
    while True:
        ok, v = b.evaluate(probe, deadline)
        if not ok:
            raise StepFailed(v)
        if v.get("state") == "ok":
            break
        if time.monotonic() >= deadline:
            raise StepFailed(f"timed out: {v.get('state')}")
        b.pump(min(deadline, time.monotonic() + POLL_S))
    x, y = v["x"], v["y"]
    b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, deadline, page=True)
    b.call("Input.dispatchMouseEvent",
           {"type": "mousePressed", "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1},
           deadline, page=True)
    b.pressed_at = (x, y)


def step_release(b, deadline):
    if not getattr(b, "pressed_at", None):
        raise StepFailed("release without a press")
    x, y = b.pressed_at
    b.pressed_at = None
    b.call("Input.dispatchMouseEvent",
           {"type": "mouseReleased", "x": x, "y": y, "button": "left", "buttons": 0, "clickCount": 1},
           deadline, page=True)


def step_click(b, deadline, selector):
    step_press(b, deadline, selector)
    step_release(b, deadline)


def step_set(b, deadline, selector, value):
    expr = SET_VALUE % (json.dumps(selector), json.dumps(value))
    while True:
        ok, v = b.evaluate(expr, deadline)
        if not ok:
            raise StepFailed(v)
        if v == "ok":
            return
        if time.monotonic() >= deadline:
            raise StepFailed(f"timed out: {v}")
        b.pump(min(deadline, time.monotonic() + POLL_S))


def step_shot(b, deadline, path):
    r = b.call("Page.captureScreenshot", {"format": "png"}, deadline, page=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(base64.b64decode(r["data"]))
    os.replace(tmp, path)


def step_errors(b, deadline):
    b.evaluate("0", deadline)  # a round trip: the events the page sent before it have arrived
    if b.errors:
        raise StepFailed(f"{len(b.errors)} page error(s):\n" + "\n".join("  " + e for e in b.errors[:20]))


STEPS = {"open": step_open, "wait": step_wait, "eval": step_eval, "assert": step_assert,
         "click": step_click, "press": step_press, "release": step_release, "set": step_set, "shot": step_shot, "errors": step_errors}


# ---- the command line ----

def parse_steps_argv(words):
    steps, i = [], 0
    while i < len(words):
        verb = words[i]
        if verb not in STEP_ARITY:
            raise Usage(f"unknown step '{verb}' (steps: {', '.join(STEP_ARITY)})")
        need, opt = STEP_ARITY[verb]
        args = words[i + 1:i + 1 + need]
        if len(args) < need:
            raise Usage(f"step '{verb}' needs {need} argument(s)")
        i += 1 + need
        if opt and i < len(words) and is_number(words[i]):
            args.append(words[i])
            i += 1
        steps.append([verb] + args)
    return steps


def is_number(s):
    try:
        return float(s) >= 0
    except ValueError:
        return False


def check_step(s):
    if not isinstance(s, list) or not s or s[0] not in STEP_ARITY:
        raise Usage(f"bad step {json.dumps(s)[:100]}: want [\"verb\", args...] with a verb of "
                    f"{', '.join(STEP_ARITY)}")
    need, opt = STEP_ARITY[s[0]]
    if not need <= len(s) - 1 <= need + opt:
        raise Usage(f"step {json.dumps(s)[:100]}: '{s[0]}' takes {need}"
                    + (f" to {need + opt}" if opt else "") + " argument(s)")
    args = s[1:]
    for k, a in enumerate(args):
        if k < need and not isinstance(a, str):
            raise Usage(f"step {json.dumps(s)[:100]}: argument {k + 1} must be a string")
    if opt and len(args) > need:
        try:
            t = float(args[need])
        except (TypeError, ValueError):
            t = -1
        if t < 0:
            raise Usage(f"step {json.dumps(s)[:100]}: the timeout must be a number of seconds")
        args[need] = t
    return [s[0]] + args


VALUE_OPTIONS = ("--url", "--script", "--timeout", "--launch-timeout", "--window", "--chromium")


def parse_args(argv):
    o = {"url": None, "script": None, "timeout": 10.0, "launch_timeout": 60.0, "window": (1280, 900),
         "chromium": os.environ.get("CDP_CHROMIUM") or "chromium", "verbose": False, "steps": []}
    words, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__.strip())
            sys.exit(0)
        if a in ("-v", "--verbose"):
            o["verbose"] = True
            i += 1
            continue
        if a in VALUE_OPTIONS:
            key = a[2:].replace("-", "_")
            if i + 1 >= len(argv):
                raise Usage(f"{a} needs a value")
            v = argv[i + 1]
            if key in ("timeout", "launch_timeout"):
                if not is_number(v) or float(v) <= 0:
                    raise Usage(f"{a}: want a positive number of seconds, not '{v}'")
                v = float(v)
            elif key == "window":
                try:
                    w, h = (int(x) for x in v.lower().split("x"))
                    assert 100 <= w <= 8000 and 100 <= h <= 8000
                except (ValueError, AssertionError):
                    raise Usage(f"{a}: want WIDTHxHEIGHT, e.g. 1280x900, not '{v}'") from None
                v = (w, h)
            o[key] = v
            i += 2
            continue
        if a.startswith("-") and a not in STEP_ARITY:
            raise Usage(f"unknown option {a}")
        words = argv[i:]
        break
    steps = [check_step(s) for s in parse_steps_argv(words)]
    if o["url"]:
        steps.insert(0, ["open", o["url"]])
    if o["script"]:
        try:
            f = sys.stdin if o["script"] == "-" else open(o["script"], encoding="utf-8")
            with f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise Usage(f"--script {o['script']}: {e}") from None
        if not isinstance(doc, list):
            raise Usage(f"--script {o['script']}: want a JSON array of steps")
        steps += [check_step(s) for s in doc]
    if not steps:
        raise Usage("no step to run (try --help)")
    o["steps"] = steps
    return o


def describe(step):
    return " ".join([step[0]] + [json.dumps(a) if isinstance(a, str) else str(a) for a in step[1:]])[:160]


def on_signal(signum, frame):
    raise Interrupted(signum)


def main(argv):
    try:
        o = parse_args(argv)
    except Usage as e:
        log(str(e))
        return 2
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    b = None
    n = len(o["steps"])
    try:
        b = Browser(o["verbose"])
        b.start(o["chromium"], o["window"], o["launch_timeout"])
        if o["verbose"]:
            log(f"browser {b.proc.pid} up, profile {b.tmp}")
        for k, step in enumerate(o["steps"], 1):
            t0 = time.monotonic()
            if o["verbose"]:
                log(f"step {k}/{n}: {describe(step)}")
            try:
                STEPS[step[0]](b, t0 + o["timeout"], *step[1:])
            except StepFailed as e:
                log(f"step {k}/{n} ({describe(step)}): {e}")
                return 1
            if o["verbose"]:
                log(f"step {k}/{n}: done in {time.monotonic() - t0:.2f} s")
        return 0
    except StepFailed as e:  # while starting
        log(f"the browser did not start: {e}\nits last output:\n{b.log_tail() if b else ''}")
        return 3
    except BrowserFailed as e:
        log(str(e))
        return 3
    except Interrupted as e:
        log(f"interrupted by signal {e.signum}")
        return 128 + e.signum
    finally:
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)  # the cleanup below is bounded (about 10 s at most)
        if b is not None:
            if o["verbose"]:
                sys.stderr.write(b.log_tail(40) + "\n")
            b.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
