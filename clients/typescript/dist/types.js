/**
 * The gateway's answers and inputs as plain TypeScript values, JSON already parsed. Nothing here knows protobuf:
 * `convert.ts` is the one place that turns messages into these and back.
 * @module
 */
/** `text` parsed as JSON; the text itself when it is not JSON; undefined when empty. */
export function parseJson(text) {
    if (!text)
        return undefined;
    try {
        return JSON.parse(text);
    }
    catch {
        return text;
    }
}
