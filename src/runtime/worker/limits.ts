// How much one call of a component may send back, so that a runaway run fails alone instead of swamping the server,
// and how long finished outcomes may wait in the worker to share a message.

/** One emitted event, as JSON, with its `id` and `summary`. */
export const MAX_EVENT_BYTES = 1024 * 1024;
/** All events emitted by one call, as JSON, with their ids and summaries. */
export const MAX_EMIT_BYTES_PER_CALL = 8 * 1024 * 1024;
/**
 * A channel name (`$emit`'s `name`, `$.send.sse()`'s `channel`), in characters: as long as a subscription's `event_name`
 * and a live stream's `event_name` / `channel` may be, so that every channel emitted on can be subscribed to and streamed.
 */
export const MAX_CHANNEL_NAME_CHARS = 200;
/** Events emitted by one call. */
export const MAX_EMITS_PER_CALL = 10_000;
/** A step's return value, `$.export` values (with their names) and `$.send` payloads of one call, as JSON: what a source may emit. */
export const MAX_STEP_BYTES_PER_CALL = MAX_EMIT_BYTES_PER_CALL;
/** `$.send.*` calls of one step call: each is work the server carries out, as each emitted event is. */
export const MAX_STEP_SENDS_PER_CALL = MAX_EMITS_PER_CALL;
/** The longest `$.flow.delay()`: 365 days. */
export const MAX_STEP_DELAY_MS = 365 * 24 * 60 * 60 * 1000;
/** `$.service.db` values written by one call, as JSON. */
export const MAX_DB_BYTES_PER_CALL = 8 * 1024 * 1024;
/** One `$.service.db` value, as JSON. */
export const MAX_DB_VALUE_BYTES = 1024 * 1024;
/** One `$.service.db` key, in bytes of UTF-8: as a data store key, within PostgreSQL's 2,704-byte index entries. */
export const MAX_DB_KEY_BYTES = 2048;
/** All of a source's `$.service.db`, keys and values as JSON, after a write. */
export const MAX_DB_TOTAL_BYTES = 16 * 1024 * 1024;
/**
 * All of one data store, keys and values as JSON, after a write. A data store is loaded whole into the worker for
 * each call that uses it (so that its writes commit with the run), which this bounds.
 */
export const MAX_DATA_STORE_BYTES = 4 * 1024 * 1024;
/** Longest data store name, in characters (code points, as every limit in characters). */
export const MAX_DATA_STORE_NAME_CHARS = 200;
/** Longest data store key, in characters (code points). */
export const MAX_DATA_STORE_KEY_CHARS = 1024;
/**
 * Longest data store key, in bytes of UTF-8: PostgreSQL refuses an index entry past 2,704 bytes, which 1,024
 * characters of CJK text (3 bytes each) pass, so such a key would fail its run there only.
 */
export const MAX_DATA_STORE_KEY_BYTES = 2048;
/** Longest data store ttl: 100 years, far past any record's use, and well within an epoch-ms bigint. */
export const MAX_DATA_STORE_TTL_SECONDS = 100 * 365 * 24 * 60 * 60;
/** Choices one `options()` call may return, and their size as JSON. */
export const MAX_OPTIONS = 10_000;
export const MAX_OPTIONS_BYTES = 4 * 1024 * 1024;
/** Timers (`setTimeout`, `setInterval`, `setImmediate`) pending at once in a worker, whichever run made them. */
export const MAX_PENDING_TIMERS = 1000;
/** The body given to `respond()`. */
export const MAX_RESPONSE_BODY_BYTES = 8 * 1024 * 1024;
/**
 * The headers given to `respond()`, each line's name and value counted: nothing the worker checks as it builds them
 * bounded them, and the server held tens of MB for each response (no HTTP client reads past a few dozen KB of them).
 */
export const MAX_RESPONSE_HEADER_BYTES = 64 * 1024;
/**
 * A character Node's `setHeader` refuses in a header value (ERR_INVALID_CHAR: tab, printable ASCII and Latin-1 only),
 * which failed the server's write of the response with a bare 500: the worker refuses it, and the server again.
 */
export const HEADER_VALUE_INVALID = /[^\t\x20-\x7e\x80-\xff]/;
/**
 * A component's description as JSON (name, version, key, description, props): it is stored with the component and
 * listed with its props, and code of 2 MB may build one of any size as it loads (a 30 MB name, 200,000 props).
 */
export const MAX_COMPONENT_INFO_BYTES = 1024 * 1024;
/** One console line; longer lines are cut. */
export const MAX_LOG_LINE_CHARS = 64 * 1024;
/** All console output of one call; later lines are dropped. */
export const MAX_LOG_CHARS_PER_CALL = 1024 * 1024;
/** Console lines of one call, empty ones too (each is a $logs event); later lines are dropped. */
export const MAX_LOG_LINES_PER_CALL = 10_000;
/** An error message or stack sent back. */
export const MAX_ERROR_CHARS = 16 * 1024;

/**
 * A worker holds finished outcomes at most this long before sending them (it sends at the end of a call, so a
 * long call adds its own length). The server's kill timer therefore allows this much on top of a call's timeout.
 */
export const OUTCOME_FLUSH_MS = 10;
/** A worker sends the outcomes it holds once their emitted events, db writes and logs pass this many bytes. */
export const OUTCOME_FLUSH_BYTES = 1024 * 1024;
/**
 * A step call's first this many exports go to the server as they are made (worker/exports-ahead.ts); later ones at
 * most once per EXPORTS_AHEAD_MS, together, so that a step exporting its progress in a loop costs no message each.
 */
export const EXPORTS_AHEAD_EAGER = 100;
export const EXPORTS_AHEAD_MS = 10;
