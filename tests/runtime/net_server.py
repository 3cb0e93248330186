#!/usr/bin/env python3
"""Stream servers on loopback for the network-camera tests.

Each mode binds 127.0.0.1 (port 0: a free one, unless --port), writes the
bound port to PORT_FILE once it accepts, and serves until killed:

  rtsp VIDEO      GStreamer's RTSP server (python3-gi, GstRtspServer):
                  /cam: VIDEO's H.264 stream (an MP4 file), RTP/H.264;
                  /j2k: its frames as JPEG 2000 over RTP (RFC 5371), a
                  video payload FFmpeg has no depacketizer for;
                  /gst: the H.264 in GStreamer's own payload (X-GST, an
                  application stream: no video for FFmpeg).
                  Every client gets its own pipeline from the start.
  mjpeg JPEG...   HTTP multipart/x-mixed-replace (an IP camera's MJPEG),
                  the JPEGs in a loop at --fps; with --stall-after N the
                  first connection goes silent (open, nothing sent) after
                  N frames; later connections stream normally. Other
                  paths than /cam answer 404.
  silent          accepts connections and never sends a byte.
  garbage         accepts, then sends random bytes and closes.
"""
import argparse
import os
import socket
import sys
import threading
import time


def write_port(path, port):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(f"{port}\n")
    os.replace(tmp, path)


def listen(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    return s


def serve_rtsp(args):
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstRtspServer", "1.0")
    from gi.repository import GLib, Gst, GstRtspServer

    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    mounts = server.get_mount_points()
    src = f'filesrc location="{args.files[0]}" ! qtdemux ! h264parse'
    for path, pay in (
        ("/cam", "rtph264pay name=pay0 pt=96 config-interval=1"),
        ("/j2k", "avdec_h264 ! videoconvert ! openjpegenc ! rtpj2kpay name=pay0 pt=96"),
        ("/gst", "rtpgstpay name=pay0 pt=96"),
    ):
        factory = GstRtspServer.RTSPMediaFactory()
        factory.set_launch(f"( {src} ! {pay} )")
        factory.set_shared(False)
        mounts.add_factory(path, factory)
    if server.attach(None) == 0:
        sys.exit("net_server: cannot attach the RTSP server")
    write_port(args.port_file, server.get_bound_port())
    GLib.MainLoop().run()


def serve_mjpeg(args):
    frames = []
    for name in args.files:
        with open(name, "rb") as f:
            frames.append(f.read())
    lsock = listen(args.port)
    write_port(args.port_file, lsock.getsockname()[1])
    connections = [0]
    lock = threading.Lock()

    def client(conn):
        with lock:
            connections[0] += 1
            first = connections[0] == 1
        try:
            conn.settimeout(10)
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                request += chunk
            path = request.split(b" ")[1] if request.count(b" ") >= 2 else b""
            if path != b"/cam":
                conn.sendall(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            conn.sendall(
                b"HTTP/1.0 200 OK\r\n"
                b"Content-Type: multipart/x-mixed-replace; boundary=frame\r\n\r\n"
            )
            k = 0
            while True:
                if first and args.stall_after and k >= args.stall_after:
                    time.sleep(3600)  # open and silent
                jpeg = frames[k % len(frames)]
                conn.sendall(
                    b"--frame\r\nContent-Type: image/jpeg\r\n"
                    + f"Content-Length: {len(jpeg)}\r\n\r\n".encode()
                    + jpeg
                    + b"\r\n"
                )
                k += 1
                time.sleep(1.0 / args.fps)
        except OSError:
            pass
        finally:
            conn.close()

    while True:
        conn, _ = lsock.accept()
        threading.Thread(target=client, args=(conn,), daemon=True).start()


def serve_silent(args):
    lsock = listen(args.port)
    write_port(args.port_file, lsock.getsockname()[1])
    held = []
    while True:
        conn, _ = lsock.accept()
        held.append(conn)  # kept open, never written


def serve_garbage(args):
    lsock = listen(args.port)
    write_port(args.port_file, lsock.getsockname()[1])
    while True:
        conn, _ = lsock.accept()
        try:
            conn.settimeout(2)
            try:
                conn.recv(4096)
            except OSError:
                pass
            conn.sendall(os.urandom(65536))
        except OSError:
            pass
        finally:
            conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["rtsp", "mjpeg", "silent", "garbage"])
    parser.add_argument("port_file")
    parser.add_argument("files", nargs="*")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fps", type=float, default=15.0)
    parser.add_argument("--stall-after", type=int, default=0)
    args = parser.parse_args()
    {"rtsp": serve_rtsp, "mjpeg": serve_mjpeg, "silent": serve_silent, "garbage": serve_garbage}[
        args.mode
    ](args)


if __name__ == "__main__":
    main()
