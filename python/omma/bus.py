"""The frame bus from Python: camera frames another process publishes
(``omma stream SOURCES... --publish NAME``), read in place on the GPU.

::

    import torch, omma
    with omma.bus.subscribe("lab") as sub:
        for frame in sub:
            with frame:
                t = torch.from_dlpack(frame)      # zero copy, (H*3/2, W) NV12
                faces = frame.faces()             # the publisher's results
                ...                               # t is valid inside the block

Each :class:`Frame` holds one slot of the publisher's ring: it goes back
once the frame is closed (``close()``, the ``with`` block) or collected,
*and* every tensor made from it is gone, after the reads enqueued on the
streams the consumers named (DLPack's ``stream`` argument: PyTorch and CuPy
pass their current stream). A subscriber holds at most ``max_holds``
frames per camera: frames published meanwhile are missed (counted in
``Frame.missed``), never waited for by the publisher.

Frames are mapped read-only where the driver allows it: never write to a
tensor made from one. The bus needs CUDA (frames are shared GPU memory);
subscribe on the GPU that publishes the camera (``device``).
"""
from __future__ import annotations

from typing import Optional, Sequence

from . import _omma
from ._omma import BusFrame as Frame  # noqa: F401  (re-exported)

__all__ = ["subscribe", "Subscriber", "Frame"]


class Subscriber(_omma.BusSubscriber):
    """A subscriber of the bus ``name``: an iterator of :class:`Frame`.

    Made by :func:`omma.bus.subscribe`. Iterating waits for the next frame
    without limit (the GIL released; KeyboardInterrupt is handled);
    ``read(timeout)`` waits up to ``timeout`` seconds. When the publisher
    stops or dies, both raise :class:`omma.ClosedError` naming the bus.

    Attributes: ``name``, ``cameras`` (a list of dicts: index, name, width,
    height, format, slots, gpu, gpu_uuid, read_only), ``publisher_pid``,
    ``device``, ``every_frame``, ``skipped`` (frames given back unread for a
    newer one), ``closed``.

    Threads: read from one thread (another gets BusyError); frames and the
    tensors made from them may be released on any thread. ``close()``
    detaches once every frame handed out is given back.
    """

    def __repr__(self) -> str:
        return f"<omma.bus.Subscriber {self.name!r}{' closed' if self.closed else ''}>"


def subscribe(name: str, cameras: Optional[Sequence[int]] = None, every_frame: bool = False, *,
              device: int = 0, directory: Optional[str] = None, max_holds: int = 2,
              timeout: float = 2.0) -> Subscriber:
    """Attaches to the frame bus ``name`` and returns a :class:`Subscriber`.

    name: the name given to ``omma stream --publish``. cameras: the camera
    indices wanted (None: all). every_frame: False (default) hands out the
    newest frame of each camera, giving back unread the older ones that
    waited (for consumers that must keep up); True hands out every frame
    written after attaching, in order, none missed: the publisher holds
    each one for this subscriber from its write and, when it reads files,
    waits while ``max_holds`` frames of a camera are held (a publisher of
    live cameras refuses: UnsupportedError naming the camera). device: the GPU's ordinal (the publisher's GPU of
    the cameras). directory: the bus directory (default ``$OMMA_BUS_DIR``,
    else ``$XDG_RUNTIME_DIR/omma-bus``, else ``/tmp/omma-bus-UID``).
    max_holds: frames of one camera held at once, 1..8. timeout: seconds
    to wait for the publisher's handshake.

    Errors: InvalidArgumentError (a bad name, camera or option),
    ClosedError (nobody publishes ``name``: the message names it),
    NoDeviceError, TimeoutError, BusyError (the publisher refused),
    UnsupportedError (a camera on another GPU).
    """
    if not isinstance(name, str):
        raise TypeError(f"bus name must be a str, not {type(name).__name__}")
    return Subscriber(name, None if cameras is None else list(cameras), bool(every_frame),
                      device=device, directory=directory, max_holds=max_holds,
                      timeout=timeout)

