"""Which robot drives the canonical topics: the real one (over LCM) or the digital one (world model)."""

from __future__ import annotations

import enum


class Mode(enum.IntEnum):
    """Values equal ``TeleopStatus.MODE_*`` and ``SetMode.Request.MODE_*`` (tested)."""

    REAL = 0
    DIGITAL = 1

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: "Mode | int | str") -> "Mode":
        """A mode from its name (``"real"``/``"digital"``, any case) or number; ``ValueError`` otherwise."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            text = value.strip().lower()
            for mode in cls:
                if text in (mode.label, str(mode.value)):
                    return mode
        elif isinstance(value, int) and not isinstance(value, bool):
            for mode in cls:
                if value == mode.value:
                    return mode
        choices = ", ".join(f"{m.label} ({m.value})" for m in cls)
        raise ValueError(f"invalid mode {value!r}: expected one of {choices}")
