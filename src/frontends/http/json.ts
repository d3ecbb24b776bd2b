/**
 * @module frontends/http/json
 * JSON writing for bodies that carry 64-bit integers. `JSON.stringify` throws on bigint and
 * prints large doubles as `1e+21`; perf_analyzer reads every statistics count and ns with
 * rapidjson `GetUint64`, so they must come out as plain decimal integers.
 */

/** Serialises a JSON value; bigints are written as integers, `undefined` members are skipped. */
export function stringifyJson(value: unknown): string {
  return write(value) ?? 'null';
}

function write(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'bigint':
      return value.toString();
    case 'number':
      return numberText(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        const parts = new Array<string>(value.length);
        for (let i = 0; i < value.length; i++) parts[i] = write(value[i]) ?? 'null';
        return '[' + parts.join(',') + ']';
      }
      // Objects with their own toJSON (Date, Buffer, ...) keep their standard rendering.
      const withToJson = value as { toJSON?: () => unknown };
      if (typeof withToJson.toJSON === 'function') return write(withToJson.toJSON());
      let out = '{';
      let first = true;
      for (const key of Object.keys(value)) {
        const text = write((value as Record<string, unknown>)[key]);
        if (text === undefined) continue;
        out += (first ? '' : ',') + JSON.stringify(key) + ':' + text;
        first = false;
      }
      return out + '}';
    }
    default:
      return undefined; // undefined, functions, symbols: omitted like JSON.stringify does
  }
}

/**
 * Integers print as integers whatever their size (never `1e+21`); other non-finite numbers
 * have no JSON form and become null, like `JSON.stringify`.
 */
function numberText(n: number): string {
  if (!Number.isFinite(n)) return 'null';
  if (Number.isInteger(n) && Math.abs(n) >= 1e21) return BigInt(n).toString();
  return String(n);
}

/** `{"error":"<message>"}`, the body of every failed request. */
export function errorJson(message: string): string {
  return '{"error":' + JSON.stringify(message) + '}';
}
