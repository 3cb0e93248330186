#!/usr/bin/env python3
"""The live view in a real browser: headless Chromium driven through
chromedriver's WebDriver HTTP API (Debian's chromium and chromium-driver),
against `omma stream --backend cpu --ui` on three test videos.

Checks: the token is enforced (401 without, 403 wrong, 200 with); the grid
shows the three cameras with their names and thumbnails; the stats update
(frames processed grows between two "stats" events); the large view's
overlay box (window.omma.overlay, what the canvas drew) is the JSON
output's box of the same camera and frame, and is drawn at the right
place on the canvas; clients that open event streams and never read do
not stall the runtime (frames keep being processed, other requests are
answered). With two participants (eileen on camera 0, rotor on camera 1):
the overlay labels each one's face with its name, the same face the JSON
output names, and the synchrony panel shows the pair's bars and sparkline,
updated by "sync" events (a 0.4 s window: values after a few frames). Screenshots: BUILD_DIR/ui-browser/{grid,large}.png.

usage: test_ui_browser.py OMMA TESTDATA_DIR OUT_DIR
Exits 77 (skipped) when chromium or chromedriver is missing.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

TOKEN = "browser-test-token-0123456789"
VIDEOS = ["astronaut_pan.mp4", "astronaut_rotate.mp4", "faces_cut.mp4"]


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


class WebDriver:
    """The few WebDriver commands the test needs, over HTTP."""

    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port
        self.session = None

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())["value"]
        except urllib.error.HTTPError as e:
            fail("WebDriver %s %s: %s" % (method, path, e.read()[:500]))

    def start(self, chromium):
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1400,1000",
                         "--no-first-run", "--disable-extensions"],
            }}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def s(self, path):
        return "/session/%s%s" % (self.session, path)

    def go(self, url):
        self.call("POST", self.s("/url"), {"url": url})

    def js(self, script, *args):
        return self.call("POST", self.s("/execute/sync"), {"script": script, "args": list(args)})

    def screenshot(self, path):
        import base64
        png = base64.b64decode(self.call("GET", self.s("/screenshot")))
        with open(path, "wb") as f:
            f.write(png)

    def click(self, css):
        el = self.call("POST", self.s("/element"), {"using": "css selector", "value": css})
        key = next(iter(el))
        self.call("POST", self.s("/element/%s/click" % el[key]), {})

    def quit(self):
        if self.session:
            self.call("DELETE", "/session/" + self.session)
            self.session = None


def wait_for(what, fn, timeout=90):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.25)
    fail("timed out waiting for " + what)


def stalled_clients(port, n):
    """Opens n event streams that never read (tiny receive buffers)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        s.connect(("127.0.0.1", port))
        s.sendall(("GET /api/events?cams=0,1,2&large=0 HTTP/1.1\r\nHost: x\r\n"
                   "Authorization: Bearer %s\r\n\r\n" % TOKEN).encode())
        socks.append(s)
    return socks


def frames_processed(metrics_text):
    total = 0
    for line in metrics_text.splitlines():
        if line.startswith("omma_camera_frames_processed_total{"):
            total += float(line.split()[-1])
    return total


def main():
    if len(sys.argv) != 4:
        fail(__doc__)
    omma, testdata, out = sys.argv[1:]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_bin = shutil.which("chromedriver")
    if not chromium or not driver_bin:
        print("SKIP: chromium or chromedriver missing (apt-get install chromium chromium-driver)")
        sys.exit(77)
    for v in VIDEOS:
        if not os.path.exists(os.path.join(testdata, v)):
            print("SKIP: %s missing (scripts/fetch-testdata.sh)" % v)
            sys.exit(77)
    shots = os.path.join(out, "ui-browser")
    os.makedirs(shots, exist_ok=True)
    results = os.path.join(shots, "results.jsonl")
    log = open(os.path.join(shots, "stream.log"), "w+")

    cmd = [omma, "stream", "--backend", "cpu", "--threads", "2", "--loop", "--max-faces", "2",
           "--status", "off", "--ui", "127.0.0.1:0", "--ui-token", TOKEN, "--out", results,
           "--duration", "240", "--participant", "eileen=0", "--participant", "rotor=1",
           "--sync-window", "0.4"] + \
        [os.path.join(testdata, v) for v in VIDEOS]
    stream = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    procs = [stream]
    driver = None
    wd = None
    try:
        def url_line():
            log.flush()
            with open(log.name) as f:
                for line in f:
                    if "live view at http://" in line:
                        return line.split("live view at ")[1].split()[0]
            if stream.poll() is not None:
                fail("omma stream ended (%d): %s" % (stream.returncode, open(log.name).read()))
            return None
        url = wait_for("the live view's address", url_line, 120)
        base = url.split("?")[0]
        port = int(base.rstrip("/").rsplit(":", 1)[1])
        print("live view:", url, flush=True)
        if "token=" + TOKEN not in url:
            fail("the printed address lacks the token: " + url)

        # The token on every request.
        for path in ["", "ui.js", "api/events", "api/preview/0.jpg", "metrics"]:
            if http_status(base + path) != 401:
                fail("/%s without a token: not 401" % path)
            if http_status(base + path + "?token=wrong-token-0123456789") != 403:
                fail("/%s with a wrong token: not 403" % path)
        if http_status(base + "?token=" + TOKEN) != 200:
            fail("/ with the token: not 200")
        print("ok: token enforced (401 without, 403 wrong)", flush=True)

        dport = free_port()
        driver = subprocess.Popen([driver_bin, "--port=%d" % dport],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(driver)
        wd = WebDriver(dport)

        def driver_up():
            try:
                with urllib.request.urlopen(wd.base + "/status", timeout=2) as r:
                    return json.loads(r.read())["value"]["ready"]
            except OSError:
                return False
        wait_for("chromedriver", driver_up, 30)
        wd.start(chromium)
        wd.go(url)

        # The grid: three cameras, named after their files, with thumbnails.
        wait_for("the grid", lambda: wd.js(
            "return document.querySelectorAll('#grid .cam').length") == 3)
        names = wd.js("return Array.from(document.querySelectorAll('#grid .cam .name'))"
                      ".map(e => e.textContent)")
        for v in VIDEOS:
            if not any(v in n for n in names):
                fail("camera %s not in the grid: %s" % (v, names))
        wait_for("three thumbnails", lambda: wd.js(
            "return Array.from(document.querySelectorAll('#grid .cam img'))"
            ".filter(i => i.complete && i.naturalWidth > 0).length") == 3)
        # Stats update: frames processed grows between stats events.
        first = wd.js("return [omma.statsUpdates, omma.stats.frames_processed]")
        wait_for("the stats to update", lambda: wd.js(
            "return omma.statsUpdates >= %d && omma.stats.frames_processed > %d"
            % (first[0] + 2, first[1])))
        text = wd.js("return document.querySelector('#grid .cam .line2').textContent")
        if "in" not in text or "p99" not in text:
            fail("a card lacks its numbers: " + text)
        # Synchrony: the pair's panel, its bars updated by "sync" events.
        wait_for("the synchrony panel", lambda: wd.js(
            "return omma.sync && omma.sync.updates > 0 && "
            "document.querySelectorAll('#sync .pair .sig').length === 7 && "
            "!document.getElementById('sync').hidden"))
        pair = wd.js("return document.querySelector('#sync .pair-name').textContent")
        if pair != "eileen \u2013 rotor":
            fail("the synchrony pair is %r" % pair)
        s0 = wd.js("return [omma.sync.updates, omma.sync.t_ms]")
        wait_for("synchrony updates", lambda: wd.js(
            "return omma.sync.updates >= %d && omma.sync.t_ms > %f && "
            "Array.from(document.querySelectorAll('#sync .sig')).some(d => d.dataset.value !== '')"
            % (s0[0] + 3, s0[1])))
        signals = wd.js("return Array.from(document.querySelectorAll('#sync .sig-name'))"
                        ".map(e => e.textContent)")
        if signals[:3] != ["yaw", "pitch", "roll"]:
            fail("synchrony signals: %s" % signals)
        # The thumbnails' results name camera 1's face rotor.
        wait_for("rotor on camera 1's face", lambda: wd.js(
            "const r = omma.results[1]; return r && r.faces.length > 0 && "
            "r.faces.every(f => f.participant === 'rotor')"))
        print("ok: synchrony panel %s, %d updates; rotor named on camera 1" % (
            pair, wd.js("return omma.sync.updates")), flush=True)
        time.sleep(1.5)  # a thumbnail refresh with overlays
        wd.screenshot(os.path.join(shots, "grid.png"))
        print("ok: grid of %s, stats updating (%s -> %s frames)" % (
            names, first[1], wd.js("return omma.stats.frames_processed")), flush=True)

        # The large view of the first camera (the astronaut panning).
        wd.click('#grid .cam[data-cam="0"]')
        ov = wait_for("the large view's overlay with a face", lambda: wd.js(
            "return omma.overlay && omma.overlay.faces.length > 0 && omma.largeLoaded > 0 "
            "? omma.overlay : null"))
        wd.js("document.getElementById('landmarks').click()")
        time.sleep(1.0)
        wd.screenshot(os.path.join(shots, "large.png"))
        print("overlay:", json.dumps(ov), flush=True)
        # Drawn where the box is: frame pixels scaled to the canvas.
        sx = ov["canvas"]["width"] / ov["width"]
        sy = ov["canvas"]["height"] / ov["height"]
        for f, d in zip(ov["faces"], ov["drawn"]):
            x0, y0, x1, y1 = f["box"]
            for got, want in [(d["x"], x0 * sx), (d["y"], y0 * sy), (d["w"], (x1 - x0) * sx),
                              (d["h"], (y1 - y0) * sy)]:
                if abs(got - want) > 0.01:
                    fail("drawn box %s is not the box %s scaled" % (d, f["box"]))
        if ov["canvas"]["width"] < 400:
            fail("the large view is small: %s" % ov["canvas"])
        # The participant's name on its face.
        if [f["participant"] for f in ov["faces"]] != ["eileen"] or \
                ov["labels"] != ["eileen #%d" % ov["faces"][0]["id"]]:
            fail("camera 0's overlay names %s (labels %s), want eileen" % (
                [f["participant"] for f in ov["faces"]], ov["labels"]))

        # Clients that never read: the runtime goes on.
        socks = stalled_clients(port, 6)

        def processed():
            return frames_processed(urllib.request.urlopen(
                base + "metrics?token=" + TOKEN, timeout=10).read().decode())
        time.sleep(2)  # the stalled streams' socket buffers are full by now
        before = processed()
        for _ in range(5):
            if http_status(base + "ui.js?token=" + TOKEN) != 200:
                fail("a request was not answered while clients stall")
        after = wait_for("frames processed while 6 clients stall",
                         lambda: processed() >= before + 5 and processed(), 120)
        print("ok: 6 stalled clients, frames processed %d -> %d" % (before, after), flush=True)
        wd.quit()
        for s in socks:
            s.close()
    finally:
        if wd:
            try:
                wd.quit()
            except SystemExit:
                pass
        if driver:
            driver.terminate()
            driver.wait(timeout=30)
        if stream.poll() is None:
            stream.send_signal(signal.SIGINT)
    try:
        rc = stream.wait(timeout=120)
    except subprocess.TimeoutExpired:
        stream.kill()
        fail("omma stream did not stop on SIGINT")
    log.flush()
    if rc != 130:
        fail("omma stream exited %d (expected 130, interrupted): %s" % (rc, open(log.name).read()))

    # The overlay's box is the JSON output's for the same camera and frame.
    # (A looping file numbers its frames on: one record per camera and frame.)
    matches = []
    with open(results) as f:
        for line in f:
            r = json.loads(line)
            if "faces" in r and r["camera"] == ov["cam"] and r["frame"] == ov["frame"]:
                matches.append(r)
    if len(matches) != 1:
        fail("frame %d of camera %d: %d records in the JSON output" % (
            ov["frame"], ov["cam"], len(matches)))
    want = {f["id"]: f["box"] for f in matches[0]["faces"]}
    names = {f["id"]: f.get("participant") for f in matches[0]["faces"]}
    for f in ov["faces"]:
        if names.get(f["id"]) != f["participant"]:
            fail("face %d: %s in the overlay, %s in the JSON output" % (
                f["id"], f["participant"], names.get(f["id"])))
    if len(want) != len(ov["faces"]):
        fail("%d faces drawn, %d in the JSON output" % (len(ov["faces"]), len(want)))
    for f in ov["faces"]:
        if f["id"] not in want:
            fail("face %d drawn, not in the JSON output: %s" % (f["id"], want))
        for a, b in zip(f["box"], want[f["id"]]):
            if abs(a - b) > 0.006:
                fail("overlay box %s != JSON box %s" % (f["box"], want[f["id"]]))
    print("ok: overlay box of camera %d frame %d = JSON output %s" % (
        ov["cam"], ov["frame"], want), flush=True)
    print("screenshots:", shots)


if __name__ == "__main__":
    main()
