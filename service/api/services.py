"""What the routes work with, built once per process by `create_app`."""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from service.application import TableService
from service.config import Settings

from .auth import Authenticator
from .feed import Feed
from .rate_limits import RateLimits


@dataclass
class Services:
    """What the routes need, built once per process."""

    settings: Settings
    redis: redis.Redis
    auth: Authenticator
    usecases: TableService
    feed: Feed
    limits: RateLimits = field(default_factory=lambda: RateLimits(Settings()))
