"""Bounded channel primitives that every pitrio actor talks through.

This is the bottom layer: it imports nothing from the rest of pitrio (but the package-root
``pitrio._publish`` helper, which imports nothing either), and everything above
(``providers``, ``tools``, ``actors``, ...) may import it. Three primitives, all bounded:

- `EventStream`: pi-ai's ``EventStream<T, R>``, one producer to one consumer, ending with a
  completion event whose result `EventStream.result` returns (a Trio memory channel inside).
- `Broadcast`: ordered fan-out to callbacks and to bounded `Subscription`\\ s with an explicit
  `SlowSubscriberPolicy`.
- `EventLog`: a `Broadcast` that numbers its events, keeps the last `REPLAY_RING` of them and
  serves resumable, bounded `EventLogSubscription`\\ s (``"block"``, ``"coalesce"`` or
  ``"error"``) that encode each event once, for hosts whose clients reconnect.
- `Mailbox`: the steering and follow-up queues, drained ``"one-at-a-time"`` or ``"all"``.
- `Reply`: the one-shot answer slot an actor command carries back to its sender; `Latch`, the
  same without a value (a run's or a job's end).

Every wait is one of Trio's own (a memory channel, `trio.Event`, `trio.lowlevel.ParkingLot`),
and no consumer's code runs in a producer's task. Every default size is a named constant
(`EVENT_STREAM_BUFFER`, `SUBSCRIPTION_BUFFER`, `MAILBOX_SIZE`) whose docstring says why it has
that value.
"""

from __future__ import annotations

from pitrio._publish import publish as _publish

from ._broadcast import DELIVERED as DELIVERED
from ._broadcast import SUBSCRIPTION_BUFFER as SUBSCRIPTION_BUFFER
from ._broadcast import Broadcast as Broadcast
from ._broadcast import BroadcastStatistics as BroadcastStatistics
from ._broadcast import SlowSubscriberPolicy as SlowSubscriberPolicy
from ._broadcast import Subscription as Subscription
from ._broadcast import SubscriptionStatistics as SubscriptionStatistics
from ._event_log import COALESCE_OVERRUN as COALESCE_OVERRUN
from ._event_log import REPLAY_RING as REPLAY_RING
from ._event_log import EventLog as EventLog
from ._event_log import EventLogPolicy as EventLogPolicy
from ._event_log import EventLogStatistics as EventLogStatistics
from ._event_log import EventLogSubscription as EventLogSubscription
from ._event_log import EventLogSubscriptionStatistics as EventLogSubscriptionStatistics
from ._event_log import Sequenced as Sequenced
from ._event_log import Snapshot as Snapshot
from ._event_stream import EVENT_STREAM_BUFFER as EVENT_STREAM_BUFFER
from ._event_stream import EventStream as EventStream
from ._event_stream import EventStreamStatistics as EventStreamStatistics
from ._exceptions import MailboxFull as MailboxFull
from ._exceptions import StreamEndedWithoutResult as StreamEndedWithoutResult
from ._exceptions import SubscriberLagged as SubscriberLagged
from ._exceptions import SubscriberOverflow as SubscriberOverflow
from ._mailbox import MAILBOX_SIZE as MAILBOX_SIZE
from ._mailbox import Mailbox as Mailbox
from ._mailbox import MailboxMode as MailboxMode
from ._mailbox import MailboxStatistics as MailboxStatistics
from ._nursery import open_body_nursery as open_body_nursery
from ._nursery import raise_lone as raise_lone
from ._reply import Latch as Latch
from ._reply import Reply as Reply
from ._reply import close_inbox as close_inbox

__all__ = [
    "COALESCE_OVERRUN",
    "DELIVERED",
    "EVENT_STREAM_BUFFER",
    "MAILBOX_SIZE",
    "REPLAY_RING",
    "SUBSCRIPTION_BUFFER",
    "Broadcast",
    "BroadcastStatistics",
    "EventLog",
    "EventLogPolicy",
    "EventLogStatistics",
    "EventLogSubscription",
    "EventLogSubscriptionStatistics",
    "EventStream",
    "EventStreamStatistics",
    "Latch",
    "Mailbox",
    "MailboxFull",
    "MailboxMode",
    "MailboxStatistics",
    "Reply",
    "Sequenced",
    "SlowSubscriberPolicy",
    "Snapshot",
    "StreamEndedWithoutResult",
    "SubscriberLagged",
    "SubscriberOverflow",
    "Subscription",
    "SubscriptionStatistics",
    "close_inbox",
    "open_body_nursery",
    "raise_lone",
]

_publish(globals(), __all__)
