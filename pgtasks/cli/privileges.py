"""``--uid`` / ``--gid`` of ``pgtasks worker`` and ``pgtasks beat`` (Celery's flags): a process
started by root gives up root for that user (and its groups) or group once the app is loaded
and before it runs anything, as Celery's worker and beat do, so that tasks never run as root.

A process of another user cannot become a third one: naming itself is accepted, naming
another user or group is refused (Celery fails there with a PermissionError).
"""

from __future__ import annotations

import grp
import os
import pwd

from pgtasks.engine.errors import ConfigurationError

__all__ = ["drop_privileges"]


def _user(text: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwuid(int(text)) if text.isdigit() else pwd.getpwnam(text)
    except KeyError:
        raise ConfigurationError(f"--uid {text}: no such user") from None


def _group(text: str) -> int:
    try:
        return int(text) if text.isdigit() else grp.getgrnam(text).gr_gid
    except KeyError:
        raise ConfigurationError(f"--gid {text}: no such group") from None


def drop_privileges(uid: str | None, gid: str | None) -> None:
    """Become user ``uid`` (with its groups; its primary group unless ``gid``) and/or group
    ``gid``; nothing when neither is given. ConfigurationError naming the flag when the user or
    group does not exist, or when this process cannot become it."""
    if not uid and not gid:
        return
    user = _user(uid) if uid else None
    group = _group(gid) if gid else (user.pw_gid if user else None)
    target_uid = user.pw_uid if user else os.geteuid()
    if os.geteuid() != 0:
        if target_uid != os.geteuid() or (group is not None and group != os.getegid()):
            flag = f"--uid {uid}" if uid else f"--gid {gid}"
            raise ConfigurationError(f"{flag}: only a process started by root can change the user it runs as")
        return
    if group is not None:
        if user is not None:
            os.initgroups(user.pw_name, group)
        else:
            os.setgroups([group])
        os.setgid(group)
    if user is not None:
        os.setuid(user.pw_uid)
        if user.pw_uid != 0 and _can_become_root():
            raise ConfigurationError(f"--uid {uid}: the process could still become root after changing user")


def _can_become_root() -> bool:
    try:
        os.setuid(0)
    except PermissionError:
        return False
    return True
