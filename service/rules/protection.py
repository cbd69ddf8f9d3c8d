"""Player protection at a table (docs/rules.md, "Player protection"): reality checks, session
limits, time-outs and exclusions that start while a player is seated, and away.

A player's session starts when they are seated. `ProtectionSet` records the limits it runs
under (the application's look-up of the player's limits, made when seating them). The clock
(clock.py) asks `protection_dues` what falls due and `act_on` acts:

- every `reality_check_minutes` of the session, a `RealityCheck` (minutes played, net result);
  the player is dealt out of new hands until they answer "continue" (`answer_reality_check`);
  "stop" ends their session;
- at `session_limit_minutes`, the session ends (`SessionEnded`, "session_limit"); a time-out or
  an exclusion set while seated ends it too (`end_session_of`, the application's command);
- a player whose session ended, or who is away, and who has not declared in the hand in play,
  is made out of it at once (`forfeit`: a `DecisionMade` by "forfeit"; when declaring in turn,
  when their turn comes); one whose session ended is cashed out (`PlayerLeft`, as any player
  leaving) as soon as no hand holds them.

Away (`go_away`, `come_back`): dealt out (no ante, no cards) until back; `away_after_missed`
deadlines missed in a row make a player away (`away_after_missed`, called by the clock after it
closed a deadline).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from . import events as ev
from . import protection_events as pe
from .errors import InvalidCommand, RuleViolation
from .guards import in_live_hand, require_table, seat_holder
from .limits import COOL_DOWN
from .play import after_decision
from .state import DECLARING, Seat, TableState
from .times import iso, later, parse_iso

FORFEIT = "forfeit"
"""A player away or whose session ended is made out of the hand in play (also the `by`)."""
CASH_OUT = "cash_out"
"""A player whose session ended is cashed out once no hand holds them."""
REALITY_CHECK = "reality_check"
"""A reality check falls due."""
SESSION_LIMIT = "session_limit"
"""A session reaches its limit."""

ANSWERS = ("continue", "stop")
ENDINGS = ("session_limit", "timeout", "excluded", "stopped")
MISSED_DEADLINES = "missed_deadlines"
AWAY_REASONS = ("player", "operator", MISSED_DEADLINES)
"""Why a player is away (`PlayerAway.reason`): they or the operator said so, or they let
`away_after_missed` deadlines pass in a row."""


@dataclass(frozen=True)
class SessionLimits:
    """What a session runs under: a reality check every `reality_check_minutes`, its end at
    `session_limit_minutes` (None: none)."""

    reality_check_minutes: int | None = None
    session_limit_minutes: int | None = None


@dataclass(frozen=True)
class Duty:
    """Something protection makes due at `at` (ISO UTC) for `seat`."""

    action: str
    at: str
    seat: int


class NothingToEnd(RuleViolation):
    """The player has no session at the table that could end (not seated, or already ending)."""


def _hand_no(state: TableState) -> int | None:
    return state.hand.number if state.hand is not None else None


def protection_set(
    seat: int, player_id: str, limits: SessionLimits | None, now: datetime
) -> list[ev.Event]:
    """The `ProtectionSet` of a session that starts at `seat` (nothing when no limit is set)."""
    if limits is None or limits == SessionLimits():
        return []
    return [
        pe.ProtectionSet(
            seat=seat,
            player_id=player_id,
            reality_check_minutes=limits.reality_check_minutes,
            session_limit_minutes=limits.session_limit_minutes,
            at=iso(now),
        )
    ]


# --- forfeit and cash-out -------------------------------------------------------------------


def forfeit(state: TableState, seat: int, now: datetime) -> list[ev.Event]:
    """`seat` out of the hand in play, when it is dealt in, has not declared, and may be made
    out now (declaring at once, or in turn and on turn); else nothing."""
    hand = state.hand
    if hand is None or hand.phase != DECLARING or seat not in hand.order:
        return []
    sequential = state.rules.declare == "sequential"
    if seat in hand.decisions or (sequential and hand.on_turn() != seat):
        return []
    deadline = later(now, state.rules.decision_timeout_s) if sequential else None
    made = ev.DecisionMade(
        hand=hand.number,
        seat=seat,
        decision="out",
        by=FORFEIT,
        deadline=deadline,
        at=iso(now),
    )
    return [made, *after_decision(state, {**hand.decisions, seat: "out"}, now)]


def _cash_out(state: TableState, seat: int, now: datetime) -> list[ev.Event]:
    """The player at `seat` leaves with their stack, when no hand holds them."""
    if in_live_hand(state, seat):
        return []
    return [ev.PlayerLeft(seat=seat, cash_out=state.seats[seat].stack, at=iso(now))]


def end_session(
    state: TableState, seat: int, reason: str, until: str | None, now: datetime
) -> list[ev.Event]:
    """End the session at `seat` for `reason`: out of the hand in play if not declared, and
    cashed out now when no hand holds them (else the clock does it when the hand ends)."""
    ended = pe.SessionEnded(
        seat=seat, reason=reason, until=until, at=iso(now), hand=_hand_no(state)
    )
    forfeited = forfeit(state, seat, now)
    return [ended, *forfeited, *_cash_out(state, seat, now)]


def end_session_of(
    state: TableState, player_id: str, reason: str, until: str | None, now: datetime
) -> list[ev.Event]:
    """A time-out or exclusion (`reason`, until `until`) that started while `player_id` is
    seated here ends their session; `NothingToEnd` when they are not seated or it is ending."""
    require_table(state)
    if reason not in ENDINGS:
        raise InvalidCommand(f"reason must be one of: {', '.join(ENDINGS)}", "reason")
    for holder in state.seated():
        if holder.player_id == player_id and not holder.leaving:
            return end_session(state, holder.seat, reason, until, now)
    raise NothingToEnd(f"player {player_id!r} has no session at this table to end")


def tighten_session_of(
    state: TableState, player_id: str, limits: SessionLimits, now: datetime
) -> list[ev.Event]:
    """Limits lowered while `player_id` is seated here take effect at once: a `ProtectionSet`
    with, of each limit, the stricter of the session's and `limits`' (a check or the session's
    end that is already past falls due at once). `NothingToEnd` when they are not seated, their
    session is ending, or it already runs under limits as strict (a retry changes nothing)."""
    require_table(state)
    for holder in state.seated():
        if holder.player_id != player_id or holder.leaving:
            continue
        check = _stricter(holder.reality_check_minutes, limits.reality_check_minutes)
        end = _stricter(holder.session_limit_minutes, limits.session_limit_minutes)
        if (check, end) == (holder.reality_check_minutes, holder.session_limit_minutes):
            break
        return protection_set(holder.seat, player_id, SessionLimits(check, end), now)
    raise NothingToEnd(f"player {player_id!r} has no session here that these limits tighten")


def _stricter(now_runs: int | None, asked: int | None) -> int | None:
    if asked is None:
        return now_runs
    return asked if now_runs is None else min(now_runs, asked)


# --- away and back --------------------------------------------------------------------------


def verify_go_away(state: TableState, seat: int) -> None:
    """A seated player who is not away yet may go away."""
    require_table(state)
    if seat_holder(state, seat).away:
        raise RuleViolation(f"seat {seat} is already away")


def go_away(state: TableState, seat: int, by: str, now: datetime) -> list[ev.Event]:
    """The player at `seat` is away (`by` "player" or "operator"): dealt out until back;
    going away before declaring in the hand in play forfeits it."""
    verify_go_away(state, seat)
    away = pe.PlayerAway(seat=seat, reason=by, at=iso(now), hand=_hand_no(state))
    return [away, *forfeit(state, seat, now)]


def verify_come_back(state: TableState, seat: int) -> None:
    """Only an away player can come back."""
    require_table(state)
    if not seat_holder(state, seat).away:
        raise RuleViolation(f"seat {seat} is not away")


def come_back(state: TableState, seat: int, by: str, now: datetime) -> list[ev.Event]:
    """The away player at `seat` is back: dealt in from the next hand."""
    verify_come_back(state, seat)
    return [pe.PlayerBack(seat=seat, by=by, at=iso(now), hand=_hand_no(state))]


def away_after_missed(
    state: TableState, closed: Sequence[ev.Event], now: datetime
) -> list[ev.Event]:
    """Seats that the deadline just `closed` left `away_after_missed` deadlines missed in a
    row: each goes away (nothing when the option is 0)."""
    limit = state.rules.away_after_missed
    if limit == 0:
        return []
    missed = [getattr(e, "seat", -1) for e in closed if getattr(e, "by", "") == "platform"]
    out: list[ev.Event] = []
    for seat in dict.fromkeys(missed):
        holder = state.seats.get(seat)
        if holder is not None and not holder.away and holder.missed + 1 >= limit:
            out.append(
                pe.PlayerAway(seat=seat, reason=MISSED_DEADLINES, at=iso(now), hand=_hand_no(state))
            )
    return out


# --- reality checks -------------------------------------------------------------------------


def verify_answer(state: TableState, seat: int, answer: str) -> None:
    """Only a pending reality check can be answered, "continue" or "stop"."""
    require_table(state)
    if answer not in ANSWERS:
        raise InvalidCommand(f"the answer must be one of: {', '.join(ANSWERS)}", "continue")
    if not seat_holder(state, seat).check_pending:
        raise RuleViolation(f"no reality check waits for seat {seat}'s answer")


def answer_reality_check(
    state: TableState, seat: int, answer: str, by: str, now: datetime
) -> list[ev.Event]:
    """Answer the pending reality check at `seat`: "continue" deals them in again from the next
    hand; "stop" ends the session (cashed out at the next moment they may leave)."""
    verify_answer(state, seat, answer)
    answered = pe.RealityCheckAnswered(
        seat=seat, answer=answer, by=by, at=iso(now), hand=_hand_no(state)
    )
    if answer == "continue" or state.seats[seat].leaving:
        return [answered]
    return [answered, *end_session(state, seat, "stopped", None, now)]


def reality_check(state: TableState, seat: int, now: datetime) -> pe.RealityCheck:
    """The next reality check of the session at `seat`, made at `now`."""
    holder = state.seats[seat]
    played = now - parse_iso(holder.since)
    return pe.RealityCheck(
        seat=seat,
        player_id=holder.player_id,
        number=holder.checks + 1,
        minutes_played=int(played.total_seconds() // 60),
        net_result=holder.stack - holder.put_in,
        at=iso(now),
        hand=_hand_no(state),
    )


# --- what falls due -------------------------------------------------------------------------


def _minutes_in(holder: Seat, minutes: int) -> str:
    return iso(parse_iso(holder.since) + timedelta(minutes=minutes))


def _session_duties(state: TableState, holder: Seat) -> list[Duty]:
    if holder.leaving:
        if in_live_hand(state, holder.seat):
            return []
        return [Duty(CASH_OUT, state.created_at, holder.seat)]  # (any past moment: now)
    duties: list[Duty] = []
    every = holder.reality_check_minutes
    if every and holder.since and not holder.check_pending:
        duties.append(
            Duty(REALITY_CHECK, _minutes_in(holder, every * (holder.checks + 1)), holder.seat)
        )
    if holder.session_limit_minutes and holder.since:
        duties.append(
            Duty(SESSION_LIMIT, _minutes_in(holder, holder.session_limit_minutes), holder.seat)
        )
    return duties


def protection_dues(state: TableState) -> list[Duty]:
    """Everything protection makes due on the table, each with its moment."""
    if not state.exists or state.ended or not _anyone_may_owe(state):
        return []
    duties: list[Duty] = []
    hand = state.hand
    if hand is not None and hand.phase == DECLARING:
        sequential = state.rules.declare == "sequential"
        waiting = [hand.on_turn()] if sequential else hand.undecided()
        for seat in waiting:
            holder = state.seats.get(seat) if seat is not None else None
            if holder is not None and (holder.away or holder.leaving):
                duties.append(Duty(FORFEIT, hand.dealt_at, holder.seat))
    for holder in state.seated():
        if _may_owe_session(holder):
            duties.extend(_session_duties(state, holder))
    return duties


def _anyone_may_owe(state: TableState) -> bool:
    """Whether protection may make anything due at the table: a forfeit needs a player away or
    leaving, a session duty one leaving or with a reality check or a session limit. (The usual
    answer, no, in one pass over the seats: `next_due` asks twice per command.)"""
    return any(h.away or _may_owe_session(h) for h in state.seats.values())


def _may_owe_session(holder: Seat) -> bool:
    """Whether a session duty may fall due for `holder`: leaving, or under a reality check or
    a session limit."""
    return bool(holder.leaving or holder.reality_check_minutes or holder.session_limit_minutes)


def cool_down_end(duty: Duty) -> str:
    """The end of the cool-down a session limit (`duty`) starts: `COOL_DOWN` after the limit
    was reached (the same moment however late the clock acts on it)."""
    return iso(parse_iso(duty.at) + COOL_DOWN)


def cool_downs_due(state: TableState, now: datetime) -> dict[str, str]:
    """The players whose session limit has come by `now` at this table (the clock ends those
    sessions), each with the end of the cool-down it starts (`cool_down_end`, the same moment
    however late, or how often, it is asked)."""
    return {
        state.seats[duty.seat].player_id: cool_down_end(duty)
        for duty in protection_dues(state)
        if duty.action == SESSION_LIMIT and parse_iso(duty.at) <= now
    }


def act_on(state: TableState, duty: Duty, now: datetime) -> list[ev.Event]:
    """The events of `duty`, due by `now`."""
    if duty.action == FORFEIT:
        return forfeit(state, duty.seat, now)
    if duty.action == CASH_OUT:
        return _cash_out(state, duty.seat, now)
    if duty.action == REALITY_CHECK:
        return [reality_check(state, duty.seat, now)]
    # (`until`: the player cannot be seated at the tenant's tables before the cool-down ends)
    return end_session(state, duty.seat, SESSION_LIMIT, cool_down_end(duty), now)
