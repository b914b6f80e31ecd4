"""The Lua scripts that make each cluster step one atomic round trip.

Each script builds some key names from the prefix it is given (a node's lease from its id, a
session's lease from its id), which Redis allows on a single instance but not on Redis Cluster:
the layer runs against one Redis server (with replicas if wanted), not a sharded cluster.

Lease values: a node's is ``token|address``; a session's is ``epoch|node_id|token``, where
``token`` is random per :func:`open_cluster_node`, so a restarted node with the same id is a
different holder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import coredis
from coredis.exceptions import RedisError, ResponseError

from pitrio.host.cluster._errors import ClusterUnavailable

REDIS_FAILURES: Final = (RedisError, OSError)
"""What coredis raises when Redis cannot be reached or fails a request."""


class Refused(Exception):
    """A script's own refusal (``PITRIO_<CODE> detail``); never leaves the cluster layer."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(code, detail)
        self.code = code
        self.detail = detail


class ScriptRunner:
    """The scripts of this module, registered on one client, run by name."""

    def __init__(self, redis: coredis.Redis[bytes]) -> None:
        self._scripts = {
            name: redis.register_script(globals()[name])
            for name in (
                "REGISTER",
                "RENEW",
                "CLAIM",
                "RELEASE",
                "CLOSE",
                "LEAVE",
                "APPEND",
                "READ",
                "LAST_IDS",
                "SEND",
                "REPLY",
                "ADOPT",
                "FORWARD",
            )
        }

    async def call(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run one script (EVALSHA, loading it when Redis lacks it).

        Raises:
            Refused: the script refused (its ``PITRIO_*`` error reply).
            ClusterUnavailable: Redis could not be reached or failed the script.
        """
        try:
            return await self._scripts[name](keys=list(keys), args=list(args))
        except ResponseError as exc:
            code, _, detail = str(exc).partition(" ")
            if code.startswith("PITRIO_"):
                raise Refused(code, detail) from None
            raise ClusterUnavailable(f"Redis failed {name.lower()}: {exc}") from exc
        except REDIS_FAILURES as exc:
            raise ClusterUnavailable(f"Redis unreachable ({name.lower()}): {exc!r}") from exc

    def script(self, name: str) -> Any:
        """The registered script object (for a caller with its own error handling)."""
        return self._scripts[name]


_ID_HELPERS: Final = """
local function parse_id(id)
  local ms, sq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(sq)
end
local function id_less(a, b)
  local am, as = parse_id(a)
  local bm, bs = parse_id(b)
  return am < bm or (am == bm and as < bs)
end
local function stream_field(key, name)
  local info = redis.call('XINFO', 'STREAM', key)
  for i = 1, #info, 2 do
    if info[i] == name then return info[i + 1] end
  end
  return nil
end
"""

REGISTER: Final = """
-- KEYS[1] node lease, KEYS[2] node set; ARGV[1] lease value, ARGV[2] ttl ms, ARGV[3] node id,
-- ARGV[4] this node's previous lease value ('' if none): a node that lost its sessions may
-- replace its own earlier incarnation's membership at once
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] and current ~= ARGV[4] then
  return redis.error_reply('PITRIO_HELD ' .. ARGV[3])
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
return 1
"""

RENEW: Final = """
-- KEYS[1] node lease, KEYS[2] node set, KEYS[3] session registry, KEYS[4] own command stream
-- ARGV[1] lease value, ARGV[2] ttl ms, ARGV[3] prefix, ARGV[4] command group,
-- then pairs: session id, its lease value
local member = redis.call('GET', KEYS[1]) == ARGV[1]
local lost = {}
if member then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  for i = 5, #ARGV, 2 do
    local key = ARGV[3] .. ':s:' .. ARGV[i] .. ':lease'
    if redis.call('GET', key) == ARGV[i + 1] then
      redis.call('PEXPIRE', key, ARGV[2])
    else
      table.insert(lost, ARGV[i])
    end
  end
else
  for i = 5, #ARGV, 2 do table.insert(lost, ARGV[i]) end
end
local nodes = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local value = redis.call('GET', ARGV[3] .. ':n:' .. id .. ':lease')
  if value then
    table.insert(nodes, id)
    table.insert(nodes, value)
  else
    redis.call('SREM', KEYS[2], id)
  end
end
local orphans = {}
local registry = redis.call('HKEYS', KEYS[3])
for _, sid in ipairs(registry) do
  if redis.call('EXISTS', ARGV[3] .. ':s:' .. sid .. ':lease') == 0 then
    table.insert(orphans, sid)
  end
end
local lag = 0
if redis.call('EXISTS', KEYS[4]) == 1 then
  for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[4])) do
    local g = {}
    for i = 1, #group, 2 do g[group[i]] = group[i + 1] end
    if g['name'] == ARGV[4] then
      lag = (tonumber(g['lag']) or 0) + (tonumber(g['pending']) or 0)
    end
  end
end
return {member and 1 or 0, lost, nodes, orphans, lag}
"""

CLAIM: Final = """
-- KEYS[1] session lease, KEYS[2] session epoch, KEYS[3] session registry, KEYS[4] node lease
-- ARGV[1] node id, ARGV[2] token, ARGV[3] ttl ms, ARGV[4] session id, ARGV[5] node lease
-- value, ARGV[6] prefix
if redis.call('GET', KEYS[4]) ~= ARGV[5] then
  return redis.error_reply('PITRIO_NOT_MEMBER')
end
local previous = redis.call('HGET', KEYS[3], ARGV[4]) or ''
local current = redis.call('GET', KEYS[1])
if current then
  local epoch, owner, token = string.match(current, '^(%d+)|([^|]*)|(.*)$')
  if owner == ARGV[1] and token == ARGV[2] then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return {tonumber(epoch), ''}
  end
  if owner ~= ARGV[1] and redis.call('EXISTS', ARGV[6] .. ':n:' .. owner .. ':lease') == 1 then
    return redis.error_reply('PITRIO_HELD ' .. owner)
  end
end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], epoch .. '|' .. ARGV[1] .. '|' .. ARGV[2], 'PX', ARGV[3])
redis.call('HSET', KEYS[3], ARGV[4], ARGV[1])
return {epoch, previous}
"""

RELEASE: Final = """
-- KEYS: session leases; ARGV: their expected values (same order)
local released = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i] then
    redis.call('DEL', KEYS[i])
    released = released + 1
  end
end
return released
"""

CLOSE: Final = """
-- KEYS[1] session lease, KEYS[2] session registry; ARGV[1] the lease's expected value,
-- ARGV[2] session id
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('HDEL', KEYS[2], ARGV[2])
  return 1
end
return 0
"""

LEAVE: Final = """
-- KEYS[1] node lease, KEYS[2] node set; ARGV[1] lease value, ARGV[2] node id
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[2])
end
return 1
"""

APPEND: Final = (
    _ID_HELPERS
    + """
-- KEYS[1] session lease, KEYS[2] event stream, KEYS[3] its last trimmed id
-- ARGV[1] expected lease value, ARGV[2] replay size, ARGV[3] epoch, then pairs: seq, payload
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('PITRIO_STALE')
end
local epoch = ARGV[3]
local last = '0-0'
if redis.call('EXISTS', KEYS[2]) == 1 then
  last = stream_field(KEYS[2], 'last-generated-id')
end
for i = 4, #ARGV, 2 do
  local id = epoch .. '-' .. ARGV[i]
  if not id_less(last, id) then
    local last_epoch = parse_id(last)
    if last_epoch > tonumber(epoch) then
      return redis.error_reply('PITRIO_STALE')
    end
    return redis.error_reply('PITRIO_ORDER ' .. id .. ' after ' .. last)
  end
  last = id
end
for i = 4, #ARGV, 2 do
  redis.call('XADD', KEYS[2], epoch .. '-' .. ARGV[i], 'p', ARGV[i + 1])
end
-- Trim exactly, in batches of an eighth of the replay size, and record the last id trimmed:
-- READ compares a cursor with it to tell a reader that events after its cursor are gone.
local keep = tonumber(ARGV[2])
local excess = redis.call('XLEN', KEYS[2]) - keep
if excess > math.max(1, math.floor(keep / 8)) then
  local oldest = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', excess)
  redis.call('SET', KEYS[3], oldest[#oldest][1])
  redis.call('XTRIM', KEYS[2], 'MAXLEN', keep)
end
return (#ARGV - 3) / 2
"""
)

READ: Final = (
    _ID_HELPERS
    + """
-- KEYS[1] event stream, KEYS[2] its last trimmed id; ARGV[1] cursor id ('' for the start)
-- returns {1, entries} or {0} when events after the cursor were trimmed away
local trimmed = redis.call('GET', KEYS[2])
if ARGV[1] == '' then
  if trimmed then return {0} end
  return {1, redis.call('XRANGE', KEYS[1], '-', '+')}
end
if trimmed and id_less(ARGV[1], trimmed) then
  return {0}
end
return {1, redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+')}
"""
)

LAST_IDS: Final = """
-- KEYS: event streams; returns each one's last generated id ('0-0' when it does not exist)
local ids = {}
for i = 1, #KEYS do
  local id = '0-0'
  if redis.call('EXISTS', KEYS[i]) == 1 then
    local info = redis.call('XINFO', 'STREAM', KEYS[i])
    for j = 1, #info, 2 do
      if info[j] == 'last-generated-id' then id = info[j + 1] end
    end
  end
  table.insert(ids, id)
end
return ids
"""

SEND: Final = """
-- KEYS[1] result key, KEYS[2] session lease; ARGV[1] fallback owner, ARGV[2] prefix,
-- ARGV[3] session id, ARGV[4] request id, ARGV[5] gateway, ARGV[6] payload
-- returns {1, result} when a result exists, else {0, owner}
local result = redis.call('GET', KEYS[1])
if result then return {1, result} end
local owner = ARGV[1]
local lease = redis.call('GET', KEYS[2])
if lease then
  owner = string.match(lease, '^%d+|([^|]*)|')
end
redis.call('XADD', ARGV[2] .. ':n:' .. owner .. ':commands', '*',
  's', ARGV[3], 'r', ARGV[4], 'g', ARGV[5], 'p', ARGV[6])
return {0, owner}
"""

REPLY: Final = """
-- KEYS[1] result key; ARGV[1] result, ARGV[2] result ttl s, ARGV[3] prefix, ARGV[4] group,
-- ARGV[5] request id, ARGV[6] reply-stream ttl ms, ARGV[7] reply-stream max length,
-- then triples: command stream, entry id, gateway node id
redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2])
local stored = redis.call('GET', KEYS[1])
for i = 8, #ARGV, 3 do
  local replies = ARGV[3] .. ':n:' .. ARGV[i + 2] .. ':replies'
  redis.call('XADD', replies, 'MAXLEN', '~', ARGV[7], '*', 'r', ARGV[5], 'v', stored)
  redis.call('PEXPIRE', replies, ARGV[6])
  redis.call('XACK', ARGV[i], ARGV[4], ARGV[i + 1])
  redis.call('XDEL', ARGV[i], ARGV[i + 1])
end
return stored
"""

ADOPT: Final = """
-- KEYS[1] the previous owner's command stream; ARGV[1] session id, ARGV[2] prefix,
-- ARGV[3] previous owner's node id
-- returns its entries for that session: flat {id, request id, gateway, payload, has result, result}
-- (nothing while the previous owner is live: it forwards what it no longer owns)
local out = {}
if redis.call('EXISTS', ARGV[2] .. ':n:' .. ARGV[3] .. ':lease') == 1 then return out end
if redis.call('EXISTS', KEYS[1]) == 0 then return out end
for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
  local f = {}
  local fields = entry[2]
  for i = 1, #fields, 2 do f[fields[i]] = fields[i + 1] end
  if f['s'] == ARGV[1] then
    table.insert(out, entry[1])
    table.insert(out, f['r'])
    table.insert(out, f['g'])
    table.insert(out, f['p'])
    local result = redis.call('GET', ARGV[2] .. ':r:' .. f['r'])
    table.insert(out, result and 1 or 0)
    table.insert(out, result or '')
  end
end
return out
"""

FORWARD: Final = """
-- KEYS[1] session lease; ARGV[1] prefix, ARGV[2] this node's id, ARGV[3] its command stream,
-- ARGV[4] group, ARGV[5] entry id, ARGV[6..9] the entry's s, r, g, p
-- moves the entry to the live lease holder's command stream; returns its id, or '' when the
-- session has no live holder other than this node (the entry stays, for this node's host)
local lease = redis.call('GET', KEYS[1])
if not lease then return '' end
local holder = string.match(lease, '^%d+|([^|]*)|')
if holder == ARGV[2] or redis.call('EXISTS', ARGV[1] .. ':n:' .. holder .. ':lease') == 0 then
  return ''
end
redis.call('XADD', ARGV[1] .. ':n:' .. holder .. ':commands', '*',
  's', ARGV[6], 'r', ARGV[7], 'g', ARGV[8], 'p', ARGV[9])
redis.call('XACK', ARGV[3], ARGV[4], ARGV[5])
redis.call('XDEL', ARGV[3], ARGV[5])
return holder
"""
