//! The Lua scripts of the shared review queue: each state change is one script, a compare-and-set on the
//! record's `state` followed by a PUBLISH of the record as it now is.
//!
//! Every script takes `KEYS[1]` = the record's hash (`{p}:review:tenant\0call_id`), `KEYS[2]` = the pending set
//! (`{p}:reviews_pending`), and `ARGV[1]` = the channel, `ARGV[2]` = keep_decided in ms, `ARGV[3]` = the running
//! lease in ms; its own arguments follow from `ARGV[4]`. A reply is a word, then (for some words) the record's
//! fields in `FIELDS` order. A message on the channel is the change's kind, then the same fields, joined by
//! newlines (JSON as serde_json writes it holds none).

use std::sync::LazyLock;

/// The hash fields that make up a record, in the order replies and messages carry them.
pub(super) const FIELDS: [&str; 6] = ["state", "dms", "decision", "done", "by", "call"];

const PRELUDE: &str = r#"
local FIELDS = {'state', 'dms', 'decision', 'done', 'by', 'call'}
local function fields()
  local f = redis.call('HMGET', KEYS[1], unpack(FIELDS))
  for i = 1, #FIELDS do f[i] = f[i] or '' end
  return f
end
local function reply(word)
  local f = fields()
  table.insert(f, 1, word)
  return f
end
local function publish(kind)
  redis.call('PUBLISH', ARGV[1], kind .. '\n' .. table.concat(fields(), '\n'))
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function settle(state)
  redis.call('HSET', KEYS[1], 'state', state)
  redis.call('HDEL', KEYS[1], 'lease')
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  publish(state)
end
-- The record's state, after turning a Running record past its lease into Lost: its gateway died running it.
local function current()
  local s = redis.call('HMGET', KEYS[1], 'state', 'lease')
  if s[1] == 'running' and now_ms() > tonumber(s[2]) then
    settle('lost')
    return 'lost'
  end
  return s[1]
end
"#;

/// `ARGV[4]` member, `[5]` same-call fingerprint, `[6]` record JSON, `[7]` created_ms, `[8]` max_pending.
/// Replies `new`, `existing` + fields, `conflict` or `full`.
const SUBMIT: &str = r#"
local state = current()
if state then
  if redis.call('HGET', KEYS[1], 'fp') == ARGV[5] then return reply('existing') end
  if state ~= 'done' and state ~= 'lost' then return {'conflict'} end
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[8]) then return {'full'} end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'pending', 'fp', ARGV[5], 'call', ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[7], ARGV[4])
publish('pending')
return {'new'}
"#;

/// Replies nothing when the key is unknown, `run` + fields when this caller is the one to run it, else
/// `seen` + fields.
const CLAIM: &str = r#"
local state = current()
if not state then return {} end
if state ~= 'decided' then return reply('seen') end
redis.call('HSET', KEYS[1], 'state', 'running', 'lease', now_ms() + tonumber(ARGV[3]))
publish('running')
return reply('run')
"#;

/// `ARGV[4]` member, `[5]` the decision's JSON, `[6]` decided_ms, `[7]` the reviewer (one line, or empty). Replies `not_found`, `already` or
/// `decided` + fields.
const DECIDE: &str = r#"
local state = current()
if not state then return {'not_found'} end
if state ~= 'pending' then return {'already'} end
redis.call('HSET', KEYS[1], 'state', 'decided', 'decision', ARGV[5], 'dms', ARGV[6], 'by', ARGV[7])
redis.call('ZREM', KEYS[2], ARGV[4])
publish('decided')
return reply('decided')
"#;

/// `ARGV[4]` the answer's JSON. Replies `not_found`, `not_running` or `done`. The record expires after
/// keep_decided.
const FINISH: &str = r#"
local state = current()
if not state then return {'not_found'} end
if state ~= 'running' and state ~= 'lost' then return {'not_running'} end
redis.call('HSET', KEYS[1], 'done', ARGV[4])
settle('done')
return {'done'}
"#;

/// `ARGV[1]` the record keys' prefix (`{p}:review:`). Replies the fields of every pending record, oldest first,
/// one after another.
const LIST: &str = r#"
local out = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local f = redis.call('HMGET', ARGV[1] .. member, 'state', 'dms', 'decision', 'done', 'by', 'call')
  for i = 1, 6 do table.insert(out, f[i] or '') end
end
return out
"#;

fn with_prelude(body: &str) -> redis::Script {
    redis::Script::new(&format!("{PRELUDE}{body}"))
}

pub(super) static SUBMIT_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| with_prelude(SUBMIT));
pub(super) static CLAIM_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| with_prelude(CLAIM));
pub(super) static DECIDE_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| with_prelude(DECIDE));
pub(super) static FINISH_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| with_prelude(FINISH));
pub(super) static LIST_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(LIST));
