"""Progress display for long calls: a tqdm bar when tqdm is installed, else
one plain line on stderr rewritten in place. Shown by default when stderr is
a terminal or the call runs in a notebook."""

from __future__ import annotations

import sys
import time
from typing import Any, Optional


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    return get is not None and get() is not None and "ipykernel" in sys.modules


def wanted(progress: Optional[bool]) -> bool:
    """Whether to show progress: ``progress`` when given, else whether stderr
    is a terminal or this is a notebook."""
    if progress is not None:
        return progress
    return sys.stderr.isatty() or _in_notebook()


class Bar:
    """Progress toward ``total`` (in ``unit``), set to absolute positions."""

    def __init__(self, desc: str, total: int, unit: str, initial: int = 0) -> None:
        self._tqdm: Any = None
        try:
            from tqdm.auto import tqdm
        except ImportError:
            pass
        else:
            self._tqdm = tqdm(total=total, desc=desc, unit=unit, initial=initial,
                              unit_scale=unit == "B")
        self.desc, self.total, self.unit = desc, total, unit
        self.position = initial
        self._shown = 0.0

    def update(self, position: int, total: Optional[int] = None, note: str = "") -> None:
        """Moves to ``position`` (of ``total``, when it changed)."""
        if total is not None:
            self.total = total
        if self._tqdm is not None:
            self._tqdm.total = self.total
            self._tqdm.update(position - self.position)
            if note:
                self._tqdm.set_postfix_str(note, refresh=False)
        else:
            now = time.monotonic()
            if now - self._shown >= 0.5 or position >= self.total:
                self._shown = now
                percent = 100.0 * position / max(self.total, 1)
                sys.stderr.write(f"\r{self.desc}: {position}/{self.total} {self.unit} "
                                 f"({percent:.0f}%) {note}")
                sys.stderr.flush()
        self.position = position

    def close(self) -> None:
        """Ends the display."""
        if self._tqdm is not None:
            self._tqdm.close()
        else:
            sys.stderr.write("\n")
            sys.stderr.flush()


def bytes_callback(progress: Optional[bool], desc: str) -> "tuple[Any, Optional[Bar]]":
    """A ``(done, total)`` callback drawing a bar in bytes, and the bar to
    close, or ``(None, None)`` when progress is not shown."""
    if not wanted(progress):
        return None, None
    holder: "list[Bar]" = []

    def callback(done: int, total: int) -> None:
        if not holder:
            holder.append(Bar(desc, total, "B"))
        holder[0].update(done, total)

    class _Closer:
        def close(self) -> None:
            if holder:
                holder[0].close()

    return callback, _Closer()  # type: ignore[return-value]


class Steps:
    """What a training call reports step by step: a bar of ``steps`` steps
    (when progress is shown) noting ``note(report)``, and ``on_step``.
    ``callback`` is what the native run calls with each report's JSON
    (``None`` when nobody listens); ``close`` ends the bar."""

    def __init__(self, progress: Optional[bool], steps: int,
                 note: "Any", on_step: "Any") -> None:
        self.bar = Bar("training", steps, "steps") if wanted(progress) else None
        self.note, self.on_step = note, on_step
        self.callback = self._step if self.bar is not None or on_step is not None else None

    def _step(self, report_json: str) -> None:
        import json

        report = json.loads(report_json)
        if self.bar is not None:
            self.bar.update(report["step"], note=self.note(report))
        if self.on_step is not None:
            self.on_step(report)

    def close(self) -> None:
        """Ends the bar."""
        if self.bar is not None:
            self.bar.close()
