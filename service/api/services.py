"""What the routes work with, built once per process by `create_app`."""

from __future__ import annotations

from dataclasses import dataclass

import redis

from service.application import TableService
from service.config import Settings
from service.tables import Tables

from .auth import Authenticator
from .feed import Feed


@dataclass
class Services:
    """What the routes need, built once per process."""

    settings: Settings
    redis: redis.Redis
    tables: Tables
    auth: Authenticator
    usecases: TableService
    feed: Feed
