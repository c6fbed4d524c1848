"""Durations: seconds as ``int``/``float``, or ``datetime.timedelta``."""

from __future__ import annotations

import datetime
from typing import Union

Seconds = Union[int, float, datetime.timedelta]
